#pragma once
// `idlegrid image build`, decided on plain values: which Containerfile, the
// exact podman argument vectors, the reference printed, and what a failed
// build is told. No I/O here; image_build_command.cc runs it.
#include <cstddef>
#include <string>
#include <vector>

#include "common/status.h"

namespace idlegrid::cli {

struct ImageBuildOptions {
  std::string context_dir;     // DIR, the build context
  std::string containerfile;   // --file; "" looks in DIR (ContainerfileCandidates)
  bool allow_network = false;  // --allow-network: RUN steps get podman's default network
  std::string name;            // --name; "" means kDefaultBuildName and a bare digest is printed
  bool make_public = false;    // --public, as for `image push`
};

// The local repository name while the image exists on this host.
inline constexpr char kDefaultBuildName[] = "idlegrid-build";

// Ok when `name` can name the image both to podman (as localhost/NAME) and in
// a manifest (NAME@sha256:...): '/'-separated components of lowercase
// letters, digits and . _ -, each starting and ending with a letter or digit,
// at most 128 characters. No tag and no digest: the digest is the pin.
// InvalidArgument naming the rule broken otherwise.
Status CheckImageName(const std::string& name);

// Where the Containerfile is looked for, in order: the --file path alone when
// given; else DIR/Containerfile, then DIR/Dockerfile (podman's own order).
std::vector<std::string> ContainerfileCandidates(const ImageBuildOptions& options);

// The tag of this one build: localhost/NAME:SUFFIX (`unique_suffix` keeps two
// builds of one name apart; the tag is removed after the save).
std::string BuildTag(const ImageBuildOptions& options, const std::string& unique_suffix);

// `podman build` without a network for RUN steps (unless allowed), never
// pulling a base image, and leaving no intermediate images behind.
// `containerfile` and the context directory should be absolute.
std::vector<std::string> PodmanBuildArgv(const ImageBuildOptions& options, const std::string& containerfile,
                                         const std::string& tag);
// `podman save` as an OCI archive, what `image push` uploads.
std::vector<std::string> PodmanSaveArgv(const std::string& tag, const std::string& archive_path);
// Untags the build's image, which removes it unless something else names it.
std::vector<std::string> PodmanRemoveImageArgv(const std::string& tag);

// What is printed on success: NAME@DIGEST when --name was given (a manifest
// takes it as it is), else DIGEST, exactly as `image push` prints it.
std::string PrintedReference(const ImageBuildOptions& options, const std::string& digest);

// How much of podman's output an error shows: enough for the failing step,
// podman's own error and a RUN command's last words, without burying a hint.
inline constexpr size_t kShownOutputLines = 15;

// The last `count` non-blank lines of `text`, newline-separated.
std::string LastLines(const std::string& text, size_t count);

// The error for a `podman build` that exited with `exit_code` after writing
// `output` (its streams together): podman's last lines, and a hint where the
// output shows why: a RUN step that needed the network (when it was not
// allowed), or a base image that is not stored locally.
Status BuildFailure(int exit_code, const std::string& output, bool allow_network);

}  // namespace idlegrid::cli
