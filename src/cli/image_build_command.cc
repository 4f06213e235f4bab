// `idlegrid image build`: the shell around cli/image_build.h. Checks the
// local files, runs podman (no shell), saves the image to a private temp
// file, removes the local image, and pushes the archive as `image push` does.
#include <stdlib.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "cli/commands.h"
#include "cli/image_build.h"
#include "cli/support.h"
#include "common/fs.h"
#include "common/random.h"
#include "runtime/subprocess.h"

namespace idlegrid::cli {
namespace {

namespace fs = std::filesystem;

// The end of a podman step's output kept for its error: far more than the
// lines shown, and bounded however much a build prints.
constexpr size_t kKeptOutputBytes = 64 << 10;
// Removing one image takes well under a second, unless another podman holds
// the storage lock; then we give up and say so rather than hang.
constexpr std::chrono::minutes kRemoveTimeout{2};

struct PodmanRun {
  int exit_code = -1;
  std::string output;  // the end of stdout and stderr, interleaved as they came
};

// Runs a podman step to its end with no time limit: a build takes as long as
// its RUN steps. FailedPrecondition, saying what to do, when podman cannot be
// started.
Result<PodmanRun> RunPodman(const std::vector<std::string>& argv) {
  auto child = runtime::Subprocess::Spawn(argv);
  if (!child.ok()) {
    return Status::FailedPrecondition("image build needs podman, which could not be started (" +
                                      child.status().message() +
                                      "); install podman (scripts/install-deps.sh does) or put it on PATH");
  }
  PodmanRun run;
  auto keep = [&run](const std::string&, std::string_view data) {
    run.output.append(data);
    if (run.output.size() > 2 * kKeptOutputBytes) run.output.erase(0, run.output.size() - kKeptOutputBytes);
  };
  while (!child->Pump(std::chrono::minutes(1), -1, keep)) {
  }
  const int status = child->wait_status();
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

struct PreparedBuild {
  ImageBuildOptions options;  // context_dir absolute
  std::string containerfile;  // absolute, an existing regular file
};

// InvalidArgument naming the path when DIR or the Containerfile is missing.
Result<PreparedBuild> Prepare(const ImageBuildOptions& given) {
  if (!given.name.empty()) IG_RETURN_IF_ERROR(CheckImageName(given.name));
  std::error_code ec;
  const fs::file_status dir = fs::status(given.context_dir, ec);
  if (!fs::exists(dir)) return Status::InvalidArgument("build directory \"" + given.context_dir + "\" does not exist");
  if (!fs::is_directory(dir)) {
    return Status::InvalidArgument("build directory \"" + given.context_dir + "\" is not a directory");
  }
  PreparedBuild prepared{given, ""};
  for (const std::string& candidate : ContainerfileCandidates(given)) {
    if (fs::is_regular_file(candidate, ec)) {
      prepared.containerfile = fs::absolute(candidate, ec).string();
      break;
    }
  }
  if (prepared.containerfile.empty()) {
    if (!given.containerfile.empty()) {
      return Status::InvalidArgument("Containerfile \"" + given.containerfile + "\" does not exist or is not a file");
    }
    const std::vector<std::string> looked = ContainerfileCandidates(given);
    return Status::InvalidArgument("no Containerfile in \"" + given.context_dir + "\": neither " + looked[0] + " nor " +
                                   looked[1] + " exists (name one with --file)");
  }
  prepared.options.context_dir = fs::absolute(given.context_dir, ec).string();
  return prepared;
}

// A directory only this user may enter (mkdtemp makes it 0700), under
// $TMPDIR or /tmp, removed with what it holds when this goes away.
class PrivateTempDir {
 public:
  static Result<PrivateTempDir> Create() {
    const char* base = ::getenv("TMPDIR");
    std::string path = std::string(base && *base ? base : "/tmp") + "/idlegrid-build.XXXXXX";
    if (::mkdtemp(path.data()) == nullptr) {
      return Status::Internal("cannot create a temporary directory for the image archive (" + path +
                              "): " + std::error_code(errno, std::generic_category()).message());
    }
    return PrivateTempDir(path);
  }
  PrivateTempDir(PrivateTempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  PrivateTempDir(const PrivateTempDir&) = delete;
  PrivateTempDir& operator=(const PrivateTempDir&) = delete;
  PrivateTempDir& operator=(PrivateTempDir&&) = delete;
  ~PrivateTempDir() {
    if (!path_.empty()) (void)RemoveTree(path_);
  }
  const std::string& path() const { return path_; }

 private:
  explicit PrivateTempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// Untags the build's image (removing it) however the steps after the build
// end. A failure to remove is only worth a warning: the push may still work.
class LocalImage {
 public:
  explicit LocalImage(std::string tag) : tag_(std::move(tag)) {}
  LocalImage(const LocalImage&) = delete;
  LocalImage& operator=(const LocalImage&) = delete;
  ~LocalImage() { Remove(); }
  void Remove() {
    if (tag_.empty()) return;
    auto removed = runtime::RunCommand(PodmanRemoveImageArgv(tag_), kRemoveTimeout);
    if (!removed.ok() || removed->exit_code != 0) {
      std::cerr << "warning: could not remove the local image " << tag_ << " (podman rmi " << tag_ << "): "
                << (removed.ok() ? runtime::Trimmed(runtime::Tail(removed->stderr_text, 500))
                                 : removed.status().message())
                << "\n";
    }
    tag_.clear();
  }

 private:
  std::string tag_;
};

// Builds and saves the image as `archive`; the local image is gone after.
Status BuildArchive(const PreparedBuild& build, const std::string& archive) {
  const std::string tag = BuildTag(build.options, RandomHex(6));
  IG_ASSIGN_OR_RETURN(PodmanRun built, RunPodman(PodmanBuildArgv(build.options, build.containerfile, tag)));
  if (built.exit_code != 0) return BuildFailure(built.exit_code, built.output, build.options.allow_network);
  LocalImage image(tag);
  IG_ASSIGN_OR_RETURN(PodmanRun saved, RunPodman(PodmanSaveArgv(tag, archive)));
  if (saved.exit_code != 0) {
    return Status::FailedPrecondition("podman save failed (exit " + std::to_string(saved.exit_code) +
                                      "); its last lines:\n" + LastLines(saved.output, kShownOutputLines));
  }
  image.Remove();
  return Status::Ok();
}

}  // namespace

int ImageBuild(const CommonFlags& f, const ImageBuildOptions& options) {
  auto build = Prepare(options);
  if (!build.ok()) return Fail(build.status());
  // Before a long build: a coordinator is configured and its CA readable
  // (connecting is lazy; the first call reaches it).
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  auto dir = PrivateTempDir::Create();
  if (!dir.ok()) return Fail(dir.status());
  const std::string archive = dir->path() + "/image.tar";
  if (Status built = BuildArchive(*build, archive); !built.ok()) return Fail(built);
  auto pushed = PushImageArchive(**client, archive, options.make_public, f.json);
  if (!pushed.ok()) return Fail(pushed.status());
  PrintPushedImage(f, *pushed, PrintedReference(options, pushed->image()));
  return 0;
}

}  // namespace idlegrid::cli
