// `idlegrid image base` (cli/image_base.h): option rules, mirror detection
// from apt sources text, and the mmdebstrap / podman import argument vectors
// on plain data; then the real binary's refusals that come before mmdebstrap
// runs.
#include "cli/image_base.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "runtime/subprocess.h"

namespace idlegrid::cli {
namespace {

using Argv = std::vector<std::string>;

ImageBaseOptions Options(std::string name, std::vector<std::string> packages) {
  ImageBaseOptions options;
  options.name = std::move(name);
  options.packages = std::move(packages);
  return options;
}

TEST(ImageBaseOptionsTest, RulesTable) {
  struct Case {
    const char* label;
    ImageBaseOptions options;
    std::string error;  // "" for ok; else a part of the message
  };
  auto with = [](ImageBaseOptions o, auto edit) {
    edit(o);
    return o;
  };
  const ImageBaseOptions ok = Options("py-ml", {"python3-numpy", "python3-sklearn"});
  const std::vector<Case> cases = {
      {"plain", ok, ""},
      {"a path name", Options("team/py", {"python3"}), ""},
      {"arch and version", Options("py", {"libc6:amd64", "python3-numpy=1:1.24.2-1+deb12u1", "g++"}), ""},
      {"empty name", Options("", {"python3"}), "NAME must not be empty"},
      {"uppercase name", Options("PyML", {"python3"}), "NAME \"PyML\" may contain only lowercase"},
      {"tagged name", Options("py:1", {"python3"}), "without a tag or digest"},
      {"no packages", Options("py", {}), "--packages must name at least one"},
      {"an option as a package", Options("py", {"--allow-unauthenticated"}), "\"--allow-unauthenticated\" is not"},
      {"a path as a package", Options("py", {"./x.deb"}), "is not a Debian package name"},
      {"uppercase package", Options("py", {"Python3"}), "is not a Debian package name"},
      {"one-letter package", Options("py", {"x"}), "is not a Debian package name"},
      {"empty version", Options("py", {"python3="}), "is not a Debian package name"},
      {"suite with a space", with(ok, [](auto& o) { o.suite = "bookworm main"; }), "--suite \"bookworm main\""},
      {"suite with a slash", with(ok, [](auto& o) { o.suite = "../x"; }), "must be a Debian codename"},
      {"empty suite", with(ok, [](auto& o) { o.suite = ""; }), "must be a Debian codename"},
      {"https mirror", with(ok, [](auto& o) { o.mirror = "https://mirror.example.org/debian"; }), ""},
      {"file mirror", with(ok, [](auto& o) { o.mirror = "file:///srv/mirror/debian"; }), ""},
      {"mirror with a space", with(ok, [](auto& o) { o.mirror = "http://m/debian bookworm contrib"; }),
       "must be an http://, https:// or file:/// URL"},
      {"ftp mirror", with(ok, [](auto& o) { o.mirror = "ftp://m/debian"; }), "must be an http://"},
      {"bare host mirror", with(ok, [](auto& o) { o.mirror = "deb.debian.org/debian"; }), "must be an http://"},
  };
  for (const Case& c : cases) {
    Status st = CheckImageBaseOptions(c.options);
    if (c.error.empty()) {
      EXPECT_TRUE(st.ok()) << c.label << ": " << st.message();
    } else {
      EXPECT_EQ(st.code(), Code::kInvalidArgument) << c.label;
      EXPECT_NE(st.message().find(c.error), std::string::npos) << c.label << ": " << st.message();
    }
  }
}

TEST(SplitPackageListTest, CommasSpacesAndEmptyParts) {
  EXPECT_EQ(SplitPackageList("python3-numpy,python3-sklearn"), (Argv{"python3-numpy", "python3-sklearn"}));
  EXPECT_EQ(SplitPackageList(" a1, b2 ,,"), (Argv{"a1", "b2"}));
  EXPECT_EQ(SplitPackageList(""), Argv{});
}

TEST(DetectMirrorTest, SourcesTable) {
  struct Case {
    const char* label;
    std::vector<AptSourcesFile> files;
    std::string url;
    std::string origin;  // a part of it
  };
  const std::string deb822 =
      "Types: deb\n"
      "# http://snapshot.debian.org/archive/debian/20250520T000000Z\n"
      "URIs: http://deb.debian.org/debian\n"
      "Suites: bookworm bookworm-updates\n"
      "Components: main\n"
      "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
      "\n"
      "Types: deb\n"
      "URIs: http://deb.debian.org/debian-security\n"
      "Suites: bookworm-security\n"
      "Components: main\n";
  const std::vector<Case> cases = {
      {"Debian 12's deb822 file",
       {{"/etc/apt/sources.list.d/debian.sources", deb822}},
       "http://deb.debian.org/debian",
       "from /etc/apt/sources.list.d/debian.sources"},
      {"one-line, options and trailing slash",
       {{"/etc/apt/sources.list",
         "# deb http://old.example/debian bookworm main\n"
         "deb-src http://src.example/debian bookworm main\n"
         "deb [arch=amd64 signed-by=/k.gpg] http://ftp.de.debian.org/debian/ bookworm main contrib\n"}},
       "http://ftp.de.debian.org/debian",
       "from /etc/apt/sources.list"},
      {"security and updates only are not the main archive",
       {{"/etc/apt/sources.list",
         "deb http://security.debian.org/debian-security bookworm-security main\n"
         "deb http://deb.debian.org/debian bookworm-updates main\n"},
        {"/etc/apt/sources.list.d/m.list", "deb https://mirror.example/debian stable main\n"}},
       "https://mirror.example/debian",
       "m.list"},
      {"other vendors' suites are skipped",
       {{"/etc/apt/sources.list.d/nodesource.sources",
         "Types: deb\nURIs: https://deb.nodesource.com/node_20.x\nSuites: nodistro\nComponents: main\n"},
        {"/etc/apt/sources.list.d/gcloud.list", "deb https://packages.cloud.google.com/apt cloud-sdk-bookworm main\n"},
        {"/etc/apt/sources.list.d/ubuntu.list", "deb http://archive.ubuntu.com/ubuntu jammy main\n"}},
       kFallbackMirror,
       "the default"},
      {"a disabled stanza and one without main",
       {{"/etc/apt/sources.list.d/a.sources",
         "Types: deb\nURIs: http://off.example/debian\nSuites: trixie\nComponents: main\nEnabled: no\n\n"
         "Types: deb\nURIs: http://contrib.example/debian\nSuites: trixie\nComponents: contrib non-free\n\n"
         "Types: deb-src deb\nURIs: http://a.example/debian http://b.example/debian\nSuites: sid\n"
         "Components: main\n"}},
       "http://a.example/debian",
       "a.sources"},
      {"cdrom and file URIs are not mirrors",
       {{"/etc/apt/sources.list", "deb cdrom:[Debian 12]/ bookworm main\ndeb file:/srv/debian bookworm main\n"}},
       kFallbackMirror,
       "no Debian main archive"},
      {"nothing at all", {}, kFallbackMirror, "the default"},
      {"malformed lines",
       {{"/etc/apt/sources.list", "deb\ndeb http://x/debian\ndeb [arch=amd64\n"}},
       kFallbackMirror,
       "the default"},
  };
  for (const Case& c : cases) {
    MirrorChoice choice = DetectMirror(c.files);
    EXPECT_EQ(choice.url, c.url) << c.label;
    EXPECT_NE(choice.origin.find(c.origin), std::string::npos) << c.label << ": " << choice.origin;
  }
}

TEST(MmdebstrapArgvTest, MinbaseTarFromOneSourceLine) {
  ImageBaseOptions options = Options("py", {"python3-numpy", "python3-sklearn"});
  EXPECT_EQ(MmdebstrapArgv(options, "http://deb.debian.org/debian", "/tmp/d/root.tar"),
            (Argv{"mmdebstrap", "--mode=auto", "--variant=minbase", "--format=tar",
                  "--include=python3-numpy,python3-sklearn", "--dpkgopt=path-exclude=/usr/share/doc/*",
                  "--dpkgopt=path-include=/usr/share/doc/*/copyright", "--dpkgopt=path-exclude=/usr/share/man/*",
                  "--dpkgopt=path-exclude=/usr/share/info/*", "--dpkgopt=path-exclude=/usr/share/locale/*", "bookworm",
                  "/tmp/d/root.tar", "deb http://deb.debian.org/debian bookworm main"}));
}

TEST(MmdebstrapArgvTest, SnapshotMirrorsIgnoreReleaseExpiry) {
  ImageBaseOptions options = Options("py", {"python3"});
  options.suite = "trixie";
  const Argv argv = MmdebstrapArgv(options, "http://snapshot.debian.org/archive/debian/20250520T000000Z", "/t.tar");
  ASSERT_GE(argv.size(), 4u);
  EXPECT_EQ(argv[argv.size() - 4], "--aptopt=Acquire::Check-Valid-Until \"false\"");
  EXPECT_EQ(argv.back(), "deb http://snapshot.debian.org/archive/debian/20250520T000000Z trixie main");
}

TEST(PodmanImportArgvTest, EnvCmdAndLabelsThenTheLocalTag) {
  ImageBaseOptions options = Options("team/py", {"python3-numpy"});
  EXPECT_EQ(BaseImageTag("team/py"), "localhost/team/py:latest");
  EXPECT_EQ(PodmanImportArgv(options, "http://m/debian", "/tmp/d/root.tar"),
            (Argv{"podman",
                  "import",
                  "--quiet",
                  "--change",
                  "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                  "--change",
                  "ENV LANG=C.UTF-8",
                  "--change",
                  "ENV PYTHONDONTWRITEBYTECODE=1",
                  "--change",
                  "CMD [\"/bin/sh\"]",
                  "--change",
                  "LABEL org.idlegrid.base.packages=python3-numpy",
                  "--change",
                  "LABEL org.idlegrid.base.suite=bookworm",
                  "--change",
                  "LABEL org.idlegrid.base.mirror=http://m/debian",
                  "--message",
                  "idlegrid image base team/py --packages python3-numpy --suite bookworm",
                  "/tmp/d/root.tar",
                  "localhost/team/py:latest"}));
}

TEST(PodmanImageIdArgvTest, InspectsTheTagsId) {
  EXPECT_EQ(PodmanImageIdArgv("localhost/py:latest"),
            (Argv{"podman", "image", "inspect", "--format", "{{.Id}}", "localhost/py:latest"}));
}

TEST(MmdebstrapFailureTest, AMissingPackageIsNamed) {
  // mmdebstrap 1.3.5's output for --include=python3-nosuchpkg (abridged).
  const std::string output =
      "I: installing remaining packages inside the chroot...\nReading package lists...\n"
      "Building dependency tree...\nE: Unable to locate package python3-nosuchpkg\n"
      "E: setup failed: E: apt-get ... install python3-nosuchpkg ... failed\nE: mmdebstrap failed to run\n";
  Status st = MmdebstrapFailure(1, output, "http://deb.debian.org/debian");
  EXPECT_EQ(st.code(), Code::kFailedPrecondition);
  EXPECT_NE(st.message().find("mmdebstrap failed (exit 1); its last lines:\n"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("E: Unable to locate package python3-nosuchpkg"), std::string::npos);
  EXPECT_NE(st.message().find("hint: the package \"python3-nosuchpkg\" does not exist in this suite at "
                              "http://deb.debian.org/debian"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(st.message().find(kMirrorUnreachable), std::string::npos);
}

TEST(MmdebstrapFailureTest, AnUnreachableMirrorSaysSo) {
  const std::string output =
      "I: running apt-get update...\n"
      "Err:1 http://nowhere.invalid/debian bookworm InRelease\n"
      "  Temporary failure resolving 'nowhere.invalid'\nE: apt-get update failed\n";
  Status st = MmdebstrapFailure(1, output, "http://nowhere.invalid/debian");
  EXPECT_NE(st.message().find(kMirrorUnreachable), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("--mirror URL"), std::string::npos);
}

TEST(MmdebstrapFailureTest, OtherwiseOnlyTheLastLines) {
  Status st = MmdebstrapFailure(2, "E: something else\n", "http://m/debian");
  EXPECT_EQ(st.message(), "mmdebstrap failed (exit 2); its last lines:\nE: something else");
}

// The binary refuses bad input with exit 2 before anything runs, and says
// what to install when mmdebstrap is missing (PATH without it).
runtime::CommandOutput RunBinary(const std::vector<std::string>& argv) {
  auto out = runtime::RunCommand(argv, std::chrono::seconds(60));
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? *out : runtime::CommandOutput{};
}

TEST(ImageBaseCommandTest, RefusalsBeforeMmdebstrapRuns) {
  auto bad_name = RunBinary({IDLEGRID_BINARY, "image", "base", "Bad_Name", "--packages", "python3"});
  EXPECT_EQ(bad_name.exit_code, 2) << bad_name.stderr_text;
  EXPECT_NE(bad_name.stderr_text.find("NAME \"Bad_Name\" may contain only lowercase"), std::string::npos)
      << bad_name.stderr_text;

  auto bad_package = RunBinary({IDLEGRID_BINARY, "image", "base", "py", "--packages", "python3,-oops"});
  EXPECT_EQ(bad_package.exit_code, 2) << bad_package.stderr_text;
  EXPECT_NE(bad_package.stderr_text.find("\"-oops\" is not a Debian package name"), std::string::npos)
      << bad_package.stderr_text;

  auto no_packages = RunBinary({IDLEGRID_BINARY, "image", "base", "py"});
  EXPECT_EQ(no_packages.exit_code, 2) << no_packages.stderr_text;

  auto missing = RunBinary({"env", "PATH=/nonexistent", IDLEGRID_BINARY, "image", "base", "py", "--packages", "python3",
                            "--mirror", "http://deb.debian.org/debian"});
  EXPECT_EQ(missing.exit_code, 1) << missing.stderr_text;
  EXPECT_NE(missing.stderr_text.find("mirror http://deb.debian.org/debian (given with --mirror)"), std::string::npos)
      << missing.stderr_text;
  EXPECT_NE(missing.stderr_text.find("image base needs mmdebstrap, which could not be started"), std::string::npos)
      << missing.stderr_text;
  EXPECT_NE(missing.stderr_text.find("install it: apt-get install mmdebstrap"), std::string::npos)
      << missing.stderr_text;
}

}  // namespace
}  // namespace idlegrid::cli
