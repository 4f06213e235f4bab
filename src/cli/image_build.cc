#include "cli/image_build.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

namespace idlegrid::cli {
namespace {

// Leaves room in a manifest's image name (255) and podman's repository name
// for "localhost/" and our tag.
constexpr size_t kMaxNameLength = 128;

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

std::string Lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// What a program inside a RUN step prints when it has no network (lowercased).
// With --network=none the step has only a loopback device, so connect(2) to
// anything else fails with ENETUNREACH and glibc's resolver finds no server.
constexpr std::array<std::string_view, 7> kNoNetworkSignatures = {
    "network is unreachable",                // strerror(ENETUNREACH): curl, pip, Go, plain C
    "temporary failure in name resolution",  // gai_strerror(EAI_AGAIN): python, pip
    "temporary failure resolving",           // apt
    "could not resolve host",                // curl
    "unable to resolve host address",        // GNU wget
    "getaddrinfo eai_again",                 // node, npm
    "name or service not known",             // gai_strerror(EAI_NONAME) with no resolver
};

// What podman says when --pull=never meets a base image it does not have.
constexpr std::string_view kImageNotKnown = "image not known";

}  // namespace

Status CheckImageName(const std::string& name) {
  if (name.empty()) return Status::InvalidArgument("--name must not be empty");
  if (name.size() > kMaxNameLength) {
    return Status::InvalidArgument("--name is " + std::to_string(name.size()) + " characters long; at most " +
                                   std::to_string(kMaxNameLength) + " are allowed");
  }
  if (name.find_first_of(":@") != std::string::npos) {
    return Status::InvalidArgument("--name \"" + name +
                                   "\" must be a name without a tag or digest (the pushed image is pinned by its "
                                   "digest), e.g. \"my-sim\"");
  }
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    std::string_view part(name.data() + start, end - start);
    const bool ok = !part.empty() && IsLowerAlnum(part.front()) && IsLowerAlnum(part.back()) &&
                    std::all_of(part.begin(), part.end(),
                                [](char c) { return IsLowerAlnum(c) || c == '.' || c == '_' || c == '-'; });
    if (!ok) {
      return Status::InvalidArgument("--name \"" + name +
                                     "\" may contain only lowercase letters, digits and . _ - /, with each "
                                     "'/'-separated part starting and ending with a letter or digit");
    }
    start = end + 1;
  }
  return Status::Ok();
}

std::vector<std::string> ContainerfileCandidates(const ImageBuildOptions& options) {
  if (!options.containerfile.empty()) return {options.containerfile};
  std::string dir = options.context_dir;
  if (dir.empty() || dir.back() != '/') dir += '/';
  return {dir + "Containerfile", dir + "Dockerfile"};
}

std::string BuildTag(const ImageBuildOptions& options, const std::string& unique_suffix) {
  return "localhost/" + (options.name.empty() ? std::string(kDefaultBuildName) : options.name) + ":" + unique_suffix;
}

std::vector<std::string> PodmanBuildArgv(const ImageBuildOptions& options, const std::string& containerfile,
                                         const std::string& tag) {
  std::vector<std::string> argv = {"podman", "build", "--pull=never"};
  if (!options.allow_network) argv.push_back("--network=none");
  // One image and nothing cached: the tag is all there is to remove later.
  argv.insert(argv.end(), {"--layers=false", "--file", containerfile, "--tag", tag, options.context_dir});
  return argv;
}

std::vector<std::string> PodmanSaveArgv(const std::string& tag, const std::string& archive_path) {
  return {"podman", "save", "--quiet", "--format", "oci-archive", "--output", archive_path, tag};
}

std::vector<std::string> PodmanRemoveImageArgv(const std::string& tag) { return {"podman", "rmi", tag}; }

std::string PrintedReference(const ImageBuildOptions& options, const std::string& digest) {
  return options.name.empty() ? digest : options.name + "@" + digest;
}

std::string LastLines(const std::string& text, size_t count) {
  std::vector<std::string_view> lines;
  size_t end = text.size();
  while (end > 0 && lines.size() < count) {
    size_t start = text.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    std::string_view line(text.data() + start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) lines.push_back(line);
    end = start == 0 ? 0 : start - 1;
  }
  std::string out;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (!out.empty()) out += '\n';
    out += *it;
  }
  return out;
}

Status BuildFailure(int exit_code, const std::string& output, bool allow_network) {
  std::string message = "podman build failed (exit " + std::to_string(exit_code) + ")";
  const std::string tail = LastLines(output, kShownOutputLines);
  if (!tail.empty()) message += "; its last lines:\n" + tail;
  const std::string lowered = Lowercase(output);
  if (!allow_network) {
    for (std::string_view signature : kNoNetworkSignatures) {
      if (lowered.find(signature) == std::string::npos) continue;
      message += "\nhint: a RUN step seems to have needed the network (\"" + std::string(signature) +
                 "\"); RUN steps have none unless you pass --allow-network";
      break;
    }
  }
  if (lowered.find(kImageNotKnown) != std::string::npos) {
    message +=
        "\nhint: image build never pulls: a FROM image must already be in local storage (podman pull it "
        "first), or build FROM scratch";
  }
  return Status::FailedPrecondition(message);
}

}  // namespace idlegrid::cli
