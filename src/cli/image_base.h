#pragma once
// `idlegrid image base NAME --packages P,Q`, decided on plain values: the
// options' rules, which Debian mirror to use (read from the host's apt
// sources), the exact mmdebstrap and `podman import` argument vectors, and
// what a failed mmdebstrap is told. No I/O here; image_base_command.cc runs it.
#include <string>
#include <vector>

#include "common/status.h"

namespace idlegrid::cli {

struct ImageBaseOptions {
  std::string name;                   // NAME: the image is localhost/NAME:latest
  std::vector<std::string> packages;  // --packages, comma-separated on the command line
  std::string suite = "bookworm";     // --suite
  std::string mirror;                 // --mirror; "" means DetectMirror's choice
};

// The tag `podman import` gives the image; `FROM NAME` in a Containerfile
// finds it (podman resolves a short name to localhost/NAME:latest locally).
std::string BaseImageTag(const std::string& name);

// Ok when the options can be run: NAME as `image build --name` takes it
// (CheckImageName), at least one package, each a Debian package name
// (lowercase letters, digits, + - ., at least two characters, starting with a
// letter or digit; an optional :ARCH and =VERSION), the suite a codename or
// alias (lowercase letters, digits, -), and a given mirror an http://,
// https:// or file:// URL without spaces. InvalidArgument naming the value
// and the rule otherwise.
Status CheckImageBaseOptions(const ImageBaseOptions& options);

// Splits a --packages value at commas, dropping surrounding spaces and empty
// parts ("a, b,," is {"a", "b"}).
std::vector<std::string> SplitPackageList(const std::string& list);

// Where the default mirror was found: one apt sources file's name and text.
struct AptSourcesFile {
  std::string path;  // e.g. /etc/apt/sources.list.d/debian.sources
  std::string text;
};

struct MirrorChoice {
  std::string url;     // no trailing '/'
  std::string origin;  // said to the user: the file it came from, or why it is the fallback
};

inline constexpr char kFallbackMirror[] = "http://deb.debian.org/debian";

// The host's Debian main archive: the first enabled binary ("deb") entry, in
// the order given, of the one-line format (*.list: `deb [opts] URI SUITE
// COMPONENT...`) or deb822 (*.sources: Types/URIs/Suites/Components stanzas,
// `Enabled: no` skipped), with an http(s) URI, the component `main`, and a
// suite that is a plain Debian codename or alias (bookworm, stable, sid...;
// not -updates, -security or another distribution's suites). kFallbackMirror
// when none is. Comments and malformed lines are ignored.
MirrorChoice DetectMirror(const std::vector<AptSourcesFile>& files);

// mmdebstrap --mode=auto (root as root; unshare, over /etc/subuid, as
// anyone else) --variant=minbase --format=tar, the packages included, the
// documentation, man pages and translations left out, writing `tar_path`
// from one source line: `deb MIRROR SUITE main`. A snapshot.debian.org
// mirror gets apt's Check-Valid-Until off (its Release files have expired).
std::vector<std::string> MmdebstrapArgv(const ImageBaseOptions& options, const std::string& mirror,
                                        const std::string& tar_path);

// The environment the image gives every process (`podman import --change ENV`).
inline constexpr char kBasePath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// `podman import` of the tarball as BaseImageTag(name): ENV PATH, LANG=C.UTF-8,
// PYTHONDONTWRITEBYTECODE=1 (the root is read-only where jobs run),
// CMD ["/bin/sh"], and labels naming the packages, suite and mirror.
std::vector<std::string> PodmanImportArgv(const ImageBaseOptions& options, const std::string& mirror,
                                          const std::string& tar_path);

// `podman image inspect` printing the image id `tag` names now: asked before
// the import, so the image it replaces (left untagged) can be removed after.
std::vector<std::string> PodmanImageIdArgv(const std::string& tag);

// The error for mmdebstrap exiting with `exit_code` after writing `output`:
// its last lines, and a hint where they show why: a package that does not
// exist in the suite (apt's "Unable to locate package"), or a mirror that
// could not be reached (then the message contains kMirrorUnreachable).
Status MmdebstrapFailure(int exit_code, const std::string& output, const std::string& mirror);

// Part of MmdebstrapFailure's message when the mirror could not be reached.
inline constexpr char kMirrorUnreachable[] = "the mirror could not be reached";

}  // namespace idlegrid::cli

namespace idlegrid::cli {

// The command itself (image_base_command.cc): checks the options, picks the
// mirror (saying which, and why, on stderr), runs mmdebstrap into a private
// temporary tarball and `podman import`s it into this user's podman storage
// (removing the image of the same name it replaces, unless something still
// uses it), then prints BaseImageTag(NAME). Nothing is pushed: `image build` of a
// Containerfile `FROM NAME`, run by the same user, finds it. Returns the
// exit code: 2 for invalid options, 1 when mmdebstrap or podman is missing or
// fails (with their last lines and a hint).
int ImageBase(const ImageBaseOptions& options);

}  // namespace idlegrid::cli
