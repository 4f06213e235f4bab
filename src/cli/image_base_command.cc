// `idlegrid image base`: the shell around cli/image_base.h. Reads the host's
// apt sources, runs mmdebstrap and `podman import` (no shell) with the
// tarball in a private temporary directory, removed afterwards.
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "cli/image_base.h"
#include "cli/image_build.h"
#include "cli/support.h"
#include "common/fs.h"
#include "runtime/subprocess.h"

namespace idlegrid::cli {
namespace {

namespace fs = std::filesystem;

// The end of a step's output kept for its error: far more than is shown.
constexpr size_t kKeptOutputBytes = 64 << 10;
// Inspecting or removing one image takes well under a second, unless another
// podman holds the storage lock; then we give up rather than hang.
constexpr std::chrono::minutes kRemoveTimeout{2};

// apt's own sources: the one-line file, then the directory's *.list and
// *.sources files in name order (as apt reads them).
std::vector<AptSourcesFile> ReadHostAptSources() {
  std::vector<std::string> paths = {"/etc/apt/sources.list"};
  std::vector<std::string> in_dir;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/etc/apt/sources.list.d", ec)) {
    const std::string name = entry.path().filename().string();
    const bool ours = name.ends_with(".list") || name.ends_with(".sources");
    if (ours && entry.is_regular_file(ec)) in_dir.push_back(entry.path().string());
  }
  std::sort(in_dir.begin(), in_dir.end());
  paths.insert(paths.end(), in_dir.begin(), in_dir.end());
  std::vector<AptSourcesFile> files;
  for (const std::string& path : paths) {
    auto text = ReadFile(path);
    if (text.ok()) files.push_back({path, *text});
  }
  return files;
}

struct StepRun {
  int exit_code = -1;
  std::string output;  // the end of stdout and stderr, interleaved as they came
  std::string stdout_text;
};

// Runs a step to its end (mmdebstrap takes as long as its downloads).
// FailedPrecondition with `missing_hint` when the program cannot be started.
Result<StepRun> RunStep(const std::vector<std::string>& argv, const std::string& missing_hint) {
  auto child = runtime::Subprocess::Spawn(argv);
  if (!child.ok()) {
    return Status::FailedPrecondition("image base needs " + argv[0] + ", which could not be started (" +
                                      child.status().message() + "); " + missing_hint);
  }
  StepRun run;
  auto keep = [&run](const std::string& stream, std::string_view data) {
    run.output.append(data);
    if (run.output.size() > 2 * kKeptOutputBytes) run.output.erase(0, run.output.size() - kKeptOutputBytes);
    if (stream == "stdout" && run.stdout_text.size() < kKeptOutputBytes) run.stdout_text.append(data);
  };
  while (!child->Pump(std::chrono::minutes(1), -1, keep)) {
  }
  const int status = child->wait_status();
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

// A directory only this user may enter, removed with what it holds.
class TarballDir {
 public:
  static Result<TarballDir> Create() {
    const char* base = ::getenv("TMPDIR");
    std::string path = std::string(base && *base ? base : "/tmp") + "/idlegrid-base.XXXXXX";
    if (::mkdtemp(path.data()) == nullptr) {
      return Status::Internal("cannot create a temporary directory for the root tarball (" + path +
                              "): " + std::error_code(errno, std::generic_category()).message());
    }
    return TarballDir(path);
  }
  TarballDir(TarballDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TarballDir(const TarballDir&) = delete;
  TarballDir& operator=(const TarballDir&) = delete;
  TarballDir& operator=(TarballDir&&) = delete;
  ~TarballDir() {
    if (!path_.empty()) (void)RemoveTree(path_);
  }
  const std::string& path() const { return path_; }

 private:
  explicit TarballDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// The id of the image `tag` names; "" when there is none (or podman fails:
// then nothing is removed).
std::string ImageIdOf(const std::string& tag) {
  auto inspected = runtime::RunCommand(PodmanImageIdArgv(tag), kRemoveTimeout);
  if (!inspected.ok() || inspected->exit_code != 0) return "";
  return runtime::Trimmed(inspected->stdout_text);
}

std::string Joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : ",") + part;
  return out;
}

Status MakeBaseImage(const ImageBaseOptions& options) {
  IG_RETURN_IF_ERROR(CheckImageBaseOptions(options));
  MirrorChoice mirror{options.mirror, "given with --mirror"};
  if (mirror.url.empty()) mirror = DetectMirror(ReadHostAptSources());
  std::cerr << "mirror " << mirror.url << " (" << mirror.origin << ")\n";
  IG_ASSIGN_OR_RETURN(TarballDir dir, TarballDir::Create());
  const std::string tarball = dir.path() + "/root.tar";
  std::cerr << "building a minimal Debian " << options.suite << " root with " << Joined(options.packages)
            << " (mmdebstrap)\n";
  const auto started = std::chrono::steady_clock::now();
  IG_ASSIGN_OR_RETURN(StepRun root,
                      RunStep(MmdebstrapArgv(options, mirror.url, tarball), "install it: apt-get install mmdebstrap"));
  if (root.exit_code != 0) return MmdebstrapFailure(root.exit_code, root.output, mirror.url);
  std::error_code ec;
  const auto size = fs::file_size(tarball, ec);
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started).count();
  std::cerr << "root built in " << seconds << " s (" << (ec ? 0 : size >> 20) << " MiB); importing it into podman as "
            << BaseImageTag(options.name) << "\n";
  const std::string replaced = ImageIdOf(BaseImageTag(options.name));
  IG_ASSIGN_OR_RETURN(StepRun imported, RunStep(PodmanImportArgv(options, mirror.url, tarball),
                                                "install podman (scripts/install-deps.sh does) or put it on PATH"));
  if (imported.exit_code != 0) {
    return Status::FailedPrecondition("podman import failed (exit " + std::to_string(imported.exit_code) +
                                      "); its last lines:\n" + LastLines(imported.output, kShownOutputLines));
  }
  const std::string id = runtime::Trimmed(imported.stdout_text);
  if (!replaced.empty() && id.find(replaced) == std::string::npos) {
    // Untagged by the import; kept if a container or another image uses it.
    auto removed = runtime::RunCommand(PodmanRemoveImageArgv(replaced), kRemoveTimeout);
    if (removed.ok() && removed->exit_code == 0) std::cerr << "removed the image it replaces (" << replaced << ")\n";
  }
  std::cerr << "image " << id << "; a Containerfile may start FROM " << options.name
            << " (idlegrid image build, as this user)\n";
  std::cout << BaseImageTag(options.name) << "\n";
  return Status::Ok();
}

}  // namespace

int ImageBase(const ImageBaseOptions& options) {
  Status made = MakeBaseImage(options);
  return made.ok() ? 0 : Fail(made);
}

}  // namespace idlegrid::cli
