// `idlegrid image build` (cli/image_build.h): the podman argument vectors, the
// name and Containerfile rules and the failure messages on plain data; then
// the real binary's checks that answer before podman or a coordinator is
// needed (missing directory, missing Containerfile, podman not installed).
#include "cli/image_build.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "manifest/manifest.h"
#include "runtime/subprocess.h"

namespace idlegrid::cli {
namespace {

using Argv = std::vector<std::string>;

const std::string kDigest = "sha256:" + std::string(64, 'a');

ImageBuildOptions InDir(const std::string& dir) {
  ImageBuildOptions options;
  options.context_dir = dir;
  return options;
}

TEST(PodmanBuildArgvTest, RunStepsHaveNoNetworkAndNothingIsPulled) {
  EXPECT_EQ(PodmanBuildArgv(InDir("/src/app"), "/src/app/Containerfile", "localhost/idlegrid-build:ab12"),
            (Argv{"podman", "build", "--pull=never", "--network=none", "--layers=false", "--file",
                  "/src/app/Containerfile", "--tag", "localhost/idlegrid-build:ab12", "/src/app"}));
}

TEST(PodmanBuildArgvTest, AllowNetworkDropsOnlyTheNetworkFlag) {
  ImageBuildOptions options = InDir("/src/app");
  options.allow_network = true;
  EXPECT_EQ(PodmanBuildArgv(options, "/other/Build.cf", "localhost/sim:1"),
            (Argv{"podman", "build", "--pull=never", "--layers=false", "--file", "/other/Build.cf", "--tag",
                  "localhost/sim:1", "/src/app"}));
}

TEST(PodmanArgvTest, SaveWritesAnOciArchiveAndRemoveUntagsTheBuild) {
  EXPECT_EQ(PodmanSaveArgv("localhost/sim:1", "/tmp/x/image.tar"),
            (Argv{"podman", "save", "--quiet", "--format", "oci-archive", "--output", "/tmp/x/image.tar",
                  "localhost/sim:1"}));
  EXPECT_EQ(PodmanRemoveImageArgv("localhost/sim:1"), (Argv{"podman", "rmi", "localhost/sim:1"}));
}

TEST(ContainerfileCandidatesTest, AGivenFileIsTheOnlyCandidate) {
  ImageBuildOptions options = InDir("ctx");
  options.containerfile = "build/Other.cf";
  EXPECT_EQ(ContainerfileCandidates(options), (Argv{"build/Other.cf"}));
}

TEST(ContainerfileCandidatesTest, ElseContainerfileThenDockerfileInDir) {
  EXPECT_EQ(ContainerfileCandidates(InDir("ctx")), (Argv{"ctx/Containerfile", "ctx/Dockerfile"}));
  EXPECT_EQ(ContainerfileCandidates(InDir("/abs/ctx/")), (Argv{"/abs/ctx/Containerfile", "/abs/ctx/Dockerfile"}));
}

TEST(BuildTagTest, LocalNameWithTheBuildsOwnSuffix) {
  EXPECT_EQ(BuildTag(InDir("d"), "0a1b"), "localhost/idlegrid-build:0a1b");
  ImageBuildOptions named = InDir("d");
  named.name = "team/sim";
  EXPECT_EQ(BuildTag(named, "0a1b"), "localhost/team/sim:0a1b");
}

TEST(PrintedReferenceTest, BareDigestAsPushPrintsItOrNameAtDigest) {
  EXPECT_EQ(PrintedReference(InDir("d"), kDigest), kDigest);
  ImageBuildOptions named = InDir("d");
  named.name = "my-sim";
  EXPECT_EQ(PrintedReference(named, kDigest), "my-sim@" + kDigest);
}

TEST(CheckImageNameTest, AcceptsPodmanStyleNames) {
  for (const std::string& name :
       std::vector<std::string>{"a", "my-sim", "team/sim.v2", "a_b", "x9/y-8/z.7", std::string(128, 'n')}) {
    EXPECT_TRUE(CheckImageName(name).ok()) << name << ": " << CheckImageName(name).message();
  }
}

TEST(CheckImageNameTest, RefusesWhatPodmanOrAManifestWouldNot) {
  struct Case {
    std::string name;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{{"", "must not be empty"},
                                         {std::string(129, 'n'), "129 characters"},
                                         {"sim:1", "without a tag or digest"},
                                         {"sim@" + kDigest, "without a tag or digest"},
                                         {"My-Sim", "lowercase"},
                                         {"-sim", "starting and ending"},
                                         {"sim-", "starting and ending"},
                                         {"a//b", "starting and ending"},
                                         {"/a", "starting and ending"},
                                         {"a/", "starting and ending"},
                                         {"a b", "lowercase"}}) {
    Status st = CheckImageName(c.name);
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << c.name;
    EXPECT_NE(st.message().find(c.says), std::string::npos) << c.name << ": " << st.message();
  }
}

// What is printed for any accepted name goes into a manifest as it is.
TEST(PrintedReferenceTest, AManifestTakesTheReferenceOfEveryAcceptedName) {
  for (const std::string& name : std::vector<std::string>{"", "my-sim", "team/sim.v2", std::string(128, 'n')}) {
    ASSERT_TRUE(name.empty() || CheckImageName(name).ok()) << name;
    ImageBuildOptions options = InDir("d");
    options.name = name;
    const std::string yaml =
        "apiVersion: idlegrid/v1\nname: x\nimage: " + PrintedReference(options, kDigest) + "\ncommand: [\"/sim\"]\n";
    auto spec = manifest::ParseManifest(yaml, "job.yaml");
    EXPECT_TRUE(spec.ok()) << name << ": " << spec.status().message();
  }
}

TEST(LastLinesTest, KeepsTheLastNonBlankLinesInOrder) {
  EXPECT_EQ(LastLines("a\nb\nc\nd\n", 2), "c\nd");
  EXPECT_EQ(LastLines("a\n\n  \nb\n\n", 5), "a\nb");
  EXPECT_EQ(LastLines("only", 3), "only");
  EXPECT_EQ(LastLines("", 3), "");
  EXPECT_EQ(LastLines("\n\n", 3), "");
}

std::string NumberedLines(int count) {
  std::string out;
  for (int i = 1; i <= count; ++i) out += "line " + std::to_string(i) + "\n";
  return out;
}

TEST(BuildFailureTest, ShowsTheExitCodeAndOnlyPodmansLastLines) {
  Status st = BuildFailure(125, NumberedLines(30) + "Error: building at STEP \"COPY sim /sim\"\n", false);
  EXPECT_EQ(st.code(), Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("podman build failed (exit 125)"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("Error: building at STEP \"COPY sim /sim\""), std::string::npos);
  EXPECT_NE(st.message().find("line 30"), std::string::npos);
  EXPECT_EQ(st.message().find("line 10\n"), std::string::npos) << "only the last lines: " << st.message();
  EXPECT_EQ(st.message().find("hint"), std::string::npos) << st.message();
}

TEST(BuildFailureTest, ANetworkErrorWithoutTheNetworkSuggestsAllowNetwork) {
  for (const std::string said :
       {"connect: Network is unreachable", "curl: (6) Could not resolve host: example.org",
        "Temporary failure resolving 'deb.debian.org'", "[Errno -3] Temporary failure in name resolution",
        "npm ERR! request failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org"}) {
    Status st = BuildFailure(1, "STEP 3/3: RUN fetch\n" + said + "\nError: building at STEP \"RUN fetch\"\n", false);
    EXPECT_NE(st.message().find("--allow-network"), std::string::npos) << said << ": " << st.message();
    EXPECT_NE(st.message().find(said), std::string::npos) << "the tool's own words are shown: " << st.message();
  }
}

TEST(BuildFailureTest, NoNetworkHintWhenTheNetworkWasAllowed) {
  Status st = BuildFailure(1, "connect: Network is unreachable\n", true);
  EXPECT_EQ(st.message().find("--allow-network"), std::string::npos) << st.message();
}

TEST(BuildFailureTest, AMissingBaseImageSaysNothingIsPulled) {
  Status st = BuildFailure(
      125,
      "STEP 1/2: FROM docker.io/library/alpine:3\nError: creating build container: docker.io/library/alpine:3: "
      "image not known\n",
      false);
  EXPECT_NE(st.message().find("never pulls"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find("--allow-network"), std::string::npos) << st.message();
}

// --- the real binary: checks made before podman or a coordinator is needed ---

class ImageBuildCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    // Read, never used: no coordinator is contacted before the build.
    ca_file_ = Write("ca.crt", "not contacted\n");
  }

  // `idlegrid image build ARGS` with a given environment only (env -i), so no
  // config file or variable of this machine leaks in.
  runtime::CommandOutput Build(const std::vector<std::string>& args, const std::vector<std::string>& env) {
    std::vector<std::string> argv = {"env", "-i"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(), {IDLEGRID_BINARY, "image", "build"});
    argv.insert(argv.end(), args.begin(), args.end());
    auto out = runtime::RunCommand(argv, std::chrono::seconds(60));
    EXPECT_TRUE(out.ok()) << out.status().message();
    return out.ok() ? *out : runtime::CommandOutput{};
  }
  // `args` and flags naming a coordinator (never contacted here).
  std::vector<std::string> WithCoordinator(std::vector<std::string> args) {
    args.insert(args.end(), {"--addr", "127.0.0.1:1", "--ca-file", ca_file_, "--token", "igt_unused"});
    return args;
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_.path() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  idlegrid::testing::TempDir dir_{"igtest-image-build"};
  std::string ca_file_;
};

TEST_F(ImageBuildCommandTest, AMissingDirectoryIsNamed) {
  const std::string missing = dir_.path() + "/nope";
  auto out = Build(WithCoordinator({missing}), {"PATH=/usr/bin:/bin"});
  EXPECT_EQ(out.exit_code, 2) << out.stderr_text;
  EXPECT_NE(out.stderr_text.find("build directory \"" + missing + "\" does not exist"), std::string::npos)
      << out.stderr_text;
}

TEST_F(ImageBuildCommandTest, AFileIsNotABuildDirectory) {
  const std::string file = Write("Containerfile", "FROM scratch\n");
  auto out = Build(WithCoordinator({file}), {"PATH=/usr/bin:/bin"});
  EXPECT_EQ(out.exit_code, 2) << out.stderr_text;
  EXPECT_NE(out.stderr_text.find("is not a directory"), std::string::npos) << out.stderr_text;
}

TEST_F(ImageBuildCommandTest, AMissingContainerfileNamesWhereItWasLookedFor) {
  auto out = Build(WithCoordinator({dir_.path()}), {"PATH=/usr/bin:/bin"});
  EXPECT_EQ(out.exit_code, 2) << out.stderr_text;
  EXPECT_NE(out.stderr_text.find(dir_.path() + "/Containerfile"), std::string::npos) << out.stderr_text;
  EXPECT_NE(out.stderr_text.find("--file"), std::string::npos) << out.stderr_text;

  const std::string named = dir_.path() + "/Build.cf";
  out = Build(WithCoordinator({dir_.path(), "--file", named}), {"PATH=/usr/bin:/bin"});
  EXPECT_EQ(out.exit_code, 2) << out.stderr_text;
  EXPECT_NE(out.stderr_text.find("Containerfile \"" + named + "\" does not exist"), std::string::npos)
      << out.stderr_text;
}

TEST_F(ImageBuildCommandTest, ABadNameIsRefusedBeforeBuilding) {
  Write("Containerfile", "FROM scratch\n");
  auto out = Build(WithCoordinator({dir_.path(), "--name", "Sim:latest"}), {"PATH=/nonexistent"});
  EXPECT_EQ(out.exit_code, 2) << out.stderr_text;
  EXPECT_NE(out.stderr_text.find("without a tag or digest"), std::string::npos) << out.stderr_text;
}

// With no coordinator configured the build never starts: the error is about
// the configuration, not podman (absent from PATH here).
TEST_F(ImageBuildCommandTest, NoCoordinatorIsFoundOutBeforeTheBuild) {
  Write("Containerfile", "FROM scratch\n");
  auto out = Build({dir_.path()}, {"PATH=/nonexistent", "HOME=" + dir_.path()});
  EXPECT_EQ(out.exit_code, 2) << out.stderr_text;
  EXPECT_NE(out.stderr_text.find("no coordinator configured"), std::string::npos) << out.stderr_text;
  EXPECT_EQ(out.stderr_text.find("podman"), std::string::npos) << out.stderr_text;
}

TEST_F(ImageBuildCommandTest, AnUnreadableCaFileIsFoundOutBeforeTheBuild) {
  Write("Containerfile", "FROM scratch\n");
  const std::string missing_ca = dir_.path() + "/missing-ca.crt";
  auto out = Build({dir_.path(), "--addr", "127.0.0.1:1", "--ca-file", missing_ca, "--token", "igt_unused"},
                   {"PATH=/nonexistent"});
  EXPECT_EQ(out.exit_code, 1) << out.stderr_text;
  EXPECT_NE(out.stderr_text.find(missing_ca), std::string::npos) << out.stderr_text;
  EXPECT_EQ(out.stderr_text.find("podman"), std::string::npos) << out.stderr_text;
}

TEST_F(ImageBuildCommandTest, PodmanNotInstalledSaysSo) {
  Write("Containerfile", "FROM scratch\n");
  auto out = Build(WithCoordinator({dir_.path()}), {"PATH=" + dir_.path()});
  EXPECT_EQ(out.exit_code, 1) << out.stderr_text;
  EXPECT_NE(out.stderr_text.find("image build needs podman, which could not be started"), std::string::npos)
      << out.stderr_text;
  EXPECT_NE(out.stderr_text.find("install podman"), std::string::npos) << out.stderr_text;
}

}  // namespace
}  // namespace idlegrid::cli
