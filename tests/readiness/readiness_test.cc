#include "readiness/readiness.h"
#include "common/test_support.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "common/digest.h"
#include "common/fs.h"
#include "image/oci_archive.h"
#include "readiness/bench_image.h"

namespace idlegrid::readiness {
namespace {

using ::idlegrid::testing::CommandResult;
using ::idlegrid::testing::HaveCommand;
using ::idlegrid::testing::kPodmanUlimitFlags;
using ::idlegrid::testing::RunShell;
using ::idlegrid::testing::TempDir;

// --- The kernel -----------------------------------------------------------------

// Computed once (and cross-checked with an independent Python model of the
// kernel); a changed kernel must fail here, because deployed benchmark images
// would then disagree with the coordinator.
TEST(ExpectedChecksumTest, KnownAnswers) {
  struct Case {
    uint64_t seed;
    uint64_t iterations;
    uint64_t checksum;
  };
  const Case cases[] = {
      {0u, 0u, 0x243f6a8885a308d3u},
      {0u, 1u, 0x608cf43bfbb48829u},
      {1u, 1u, 0x3ec58042bdd7c113u},
      {42u, 1000u, 0xe8c3afd76c5aef09u},
      {7u, 1000000u, 0xe0535ca65d63c75eu},
      {18446744073709551615u, 12345u, 0xdf46045db3fb3eb1u},
      {2611923443488327891u, 5u, 0xee6df10aef0dfdeau},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ExpectedChecksum(c.seed, c.iterations), c.checksum)
        << "seed " << c.seed << ", iterations " << c.iterations;
  }
}

TEST(ExpectedChecksumTest, DependsOnEveryIterationAndOnTheSeed) {
  std::set<uint64_t> by_iterations;
  for (uint64_t n = 0; n < 5000; ++n) by_iterations.insert(ExpectedChecksum(9, n));
  EXPECT_EQ(by_iterations.size(), 5000u);
  std::set<uint64_t> by_seed;
  for (uint64_t seed = 0; seed < 5000; ++seed) by_seed.insert(ExpectedChecksum(seed, 16));
  EXPECT_EQ(by_seed.size(), 5000u);
}

TEST(BenchArgsTest, IterationsThenSeedThenOutputDirectory) {
  EXPECT_EQ(BenchArgs(1000, 18446744073709551615u, "/out"),
            (std::vector<std::string>{"1000", "18446744073709551615", "/out"}));
}

// --- ParseBenchResult ---------------------------------------------------------------

TEST(ParseBenchResultTest, AcceptsWellFormedResults) {
  struct Case {
    std::string text;
    BenchResult expected;
  };
  const std::vector<Case> cases = {
      {"checksum=5b8ab6f9fc22539d\niterations=100000000\nseconds=0.407519775\n"
       "score=245386864.969\n",
       {0x5b8ab6f9fc22539du, 100000000u, 0.407519775, 245386864.969}},
      {"score=2\nseconds=0.5\niterations=1\nchecksum=A\n", {0xau, 1u, 0.5, 2}},
      {"checksum=0\niterations=18446744073709551615\nseconds=3\nscore=0\n", {0u, 18446744073709551615u, 3, 0}},
      {"checksum=ffffffffffffffff\niterations=0\nseconds=1e-9\nscore=0.000\n", {0xffffffffffffffffu, 0u, 1e-9, 0}},
  };
  for (const Case& c : cases) {
    auto result = ParseBenchResult(c.text);
    ASSERT_TRUE(result.ok()) << c.text << result.status().ToString();
    EXPECT_EQ(result->checksum, c.expected.checksum) << c.text;
    EXPECT_EQ(result->iterations, c.expected.iterations) << c.text;
    EXPECT_DOUBLE_EQ(result->seconds, c.expected.seconds) << c.text;
    EXPECT_DOUBLE_EQ(result->score, c.expected.score) << c.text;
  }
}

TEST(ParseBenchResultTest, RejectsMalformedResultsNamingTheLine) {
  const std::string checksum = "checksum=5b8ab6f9fc22539d\n";
  const std::string iterations = "iterations=100\n";
  const std::string seconds = "seconds=0.5\n";
  const std::string score = "score=200.000\n";
  const std::string valid = checksum + iterations + seconds + score;
  ASSERT_TRUE(ParseBenchResult(valid).ok());
  struct Case {
    std::string name;
    std::string text;
    std::string message_part;
  };
  const std::vector<Case> cases = {
      {"empty", "", "no checksum line"},
      {"missing score", checksum + iterations + seconds, "no score line"},
      {"missing iterations", checksum + seconds + score, "no iterations line"},
      {"duplicate key", valid + "seconds=0.5\n", "line 5 \"seconds=0.5\": repeats seconds (first on line 3)"},
      {"unknown key", valid + "extra=1\n", "line 5 \"extra=1\": unknown key"},
      {"no equals sign", checksum + "iterations 100\n" + seconds + score,
       "line 2 \"iterations 100\": expected key=value"},
      {"blank line", checksum + "\n" + iterations + seconds + score, "line 2 \"\": expected key=value"},
      {"no final newline", checksum + iterations + seconds + "score=200.000",
       "line 4 \"score=200.000\": not ended by a newline"},
      {"carriage return", checksum + iterations + seconds + "score=200.000\r\n", "line 4"},
      {"space in key", checksum + iterations + seconds + "score =200\n", "line 4"},
      {"empty checksum", "checksum=\n" + iterations + seconds + score,
       "line 1 \"checksum=\": checksum must be 1 to 16 hex digits"},
      {"17 hex digits", "checksum=15b8ab6f9fc22539d\n" + iterations + seconds + score, "line 1"},
      {"hex prefix", "checksum=0x5b8a\n" + iterations + seconds + score, "line 1"},
      {"non-hex checksum", "checksum=5g\n" + iterations + seconds + score, "line 1"},
      {"negative iterations", checksum + "iterations=-1\n" + seconds + score,
       "line 2 \"iterations=-1\": iterations must be a decimal"},
      {"iterations overflow", checksum + "iterations=18446744073709551616\n" + seconds + score, "line 2"},
      {"fractional iterations", checksum + "iterations=1.5\n" + seconds + score, "line 2"},
      {"hex iterations", checksum + "iterations=ff\n" + seconds + score, "line 2"},
      {"negative seconds", checksum + iterations + "seconds=-0.5\n" + score,
       "line 3 \"seconds=-0.5\": seconds must be a finite, non-negative decimal number"},
      {"plus sign", checksum + iterations + "seconds=+0.5\n" + score, "line 3"},
      {"inf seconds", checksum + iterations + "seconds=inf\n" + score, "line 3"},
      {"nan score", checksum + iterations + seconds + "score=nan\n", "line 4"},
      {"huge score", checksum + iterations + seconds + "score=1e999\n", "line 4"},
      {"trailing junk", checksum + iterations + "seconds=0.5s\n" + score, "line 3"},
      {"empty score", checksum + iterations + seconds + "score=\n", "line 4"},
      {"too large", valid + std::string(5000, 'x'), "at most 4096"},
  };
  for (const Case& c : cases) {
    auto result = ParseBenchResult(c.text);
    EXPECT_EQ(result.status().code(), Code::kInvalidArgument) << c.name;
    EXPECT_NE(result.status().message().find(c.message_part), std::string::npos)
        << c.name << ": " << result.status().message();
  }
}

// --- Judge ------------------------------------------------------------------------------

TEST(JudgeTest, PassesOnlyHonestPlausibleResults) {
  constexpr uint64_t kSeed = 42;
  constexpr uint64_t kIterations = 1000;
  const BenchResult honest = {0xe8c3afd76c5aef09u, kIterations, 0.5, 2000};
  constexpr double kMinScore = 1000;
  struct Case {
    std::string name;
    BenchResult result;
    double min_score;
    bool passed;
    std::string reason;  // a prefix of the expected reason
  };
  auto with = [&honest](auto change) {
    BenchResult r = honest;
    change(r);
    return r;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<Case> cases = {
      {"honest", honest, kMinScore, true, ""},
      {"score exactly at minimum", honest, 2000, true, ""},
      {"wrong checksum", with([](BenchResult& r) { r.checksum = 1; }), kMinScore, false,
       "wrong checksum: got 0x0000000000000001, expected 0xe8c3afd76c5aef09"},
      {"checksum of another seed", with([](BenchResult& r) { r.checksum = ExpectedChecksum(43, 1000); }), kMinScore,
       false, "wrong checksum"},
      {"wrong iteration count", with([](BenchResult& r) { r.iterations = 999; }), kMinScore, false,
       "wrong iteration count: got 999, expected 1000"},
      {"implausibly slow", honest, 3000, false, "implausibly slow: score 2000.000 below minimum 3000.000"},
      {"zero seconds", with([](BenchResult& r) { r.seconds = 0; }), kMinScore, false,
       "no plausible duration: seconds is 0.000000000"},
      {"negative seconds", with([](BenchResult& r) { r.seconds = -1; }), kMinScore, false, "no plausible duration"},
      {"infinite seconds", with([](BenchResult& r) { r.seconds = std::numeric_limits<double>::infinity(); }), kMinScore,
       false, "no plausible duration"},
      {"score not iterations / seconds", with([](BenchResult& r) { r.score = 1e9; }), kMinScore, false,
       "inconsistent score: reported 1000000000.000 but iterations / seconds is 2000.000"},
      {"NaN score", with([nan](BenchResult& r) { r.score = nan; }), kMinScore, false, "inconsistent score"},
  };
  for (const Case& c : cases) {
    v1::Measurement m = Judge(c.result, kSeed, kIterations, c.min_score);
    EXPECT_EQ(m.passed(), c.passed) << c.name << ": " << m.reason();
    if (c.passed) {
      EXPECT_EQ(m.reason(), "") << c.name;
    } else {
      EXPECT_EQ(m.reason().rfind(c.reason, 0), 0u) << c.name << ": " << m.reason();
    }
    if (!std::isnan(c.result.score)) {
      EXPECT_EQ(m.cpu_score(), c.result.score) << c.name;
    }
  }
}

// --- The real benchmark program ---------------------------------------------------------

std::string Join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

constexpr uint64_t kSeed = 7;
constexpr uint64_t kIterations = 2000000;

// Compiles src/readiness/bench_main.c statically, as CMake's idlegrid-bench
// target does, once for all the tests below.
class BenchProgramTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    build_dir_ = new TempDir();
    binary_ = build_dir_->path() + "/bench";
    const std::string src = std::string(IDLEGRID_SOURCE_DIR) + "/src";
    CommandResult compile = RunShell("gcc -std=c11 -O2 -Wall -Wextra -Werror -static -I" + src + " -o " + binary_ +
                                     " " + src + "/readiness/bench_main.c");
    if (compile.exit_code != 0) compile_error_ = new std::string(compile.output);
  }
  static void TearDownTestSuite() {
    delete build_dir_;
    delete compile_error_;
    build_dir_ = nullptr;
    compile_error_ = nullptr;
  }
  void SetUp() override { ASSERT_EQ(compile_error_, nullptr) << "gcc -static failed:\n" << *compile_error_; }

  static TempDir* build_dir_;
  static std::string binary_;
  static std::string* compile_error_;
};
TempDir* BenchProgramTest::build_dir_ = nullptr;
std::string BenchProgramTest::binary_;
std::string* BenchProgramTest::compile_error_ = nullptr;

TEST_F(BenchProgramTest, ItsResultParsesAndPassesJudge) {
  TempDir out("readiness_test");
  CommandResult run = RunShell(binary_ + " " + Join(BenchArgs(kIterations, kSeed, out.path())));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto text = ReadFile(out.path() + "/result.txt");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(run.output, *text) << "stdout repeats the file";
  auto result = ParseBenchResult(*text);
  ASSERT_TRUE(result.ok()) << result.status().ToString() << "\n" << *text;
  EXPECT_EQ(result->checksum, ExpectedChecksum(kSeed, kIterations));
  v1::Measurement m = Judge(*result, kSeed, kIterations, /*min_plausible_score=*/1.0);
  EXPECT_TRUE(m.passed()) << m.reason() << "\n" << *text;
  EXPECT_GT(m.cpu_score(), 1.0);
}

TEST_F(BenchProgramTest, RejectsBadArguments) {
  TempDir out("readiness_test");
  const std::vector<std::string> bad_args = {"",
                                             "100 7",
                                             "-1 7 " + out.path(),
                                             "100 0x7 " + out.path(),
                                             "100 7 " + out.path() + " extra",
                                             "18446744073709551616 7 " + out.path()};
  for (const std::string& args : bad_args) {
    CommandResult run = RunShell(binary_ + " " + args);
    EXPECT_EQ(run.exit_code, 2) << args << ": " << run.output;
  }
  EXPECT_FALSE(PathExists(out.path() + "/result.txt"));
  CommandResult unwritable = RunShell(binary_ + " 10 7 " + out.path() + "/missing-dir");
  EXPECT_EQ(unwritable.exit_code, 1) << unwritable.output;
}

TEST_F(BenchProgramTest, BenchImageIsAVerifiableReproducibleOciArchive) {
  TempDir dir("readiness_test");
  auto first = BuildBenchImage(binary_, dir.path() + "/a.tar");
  auto second = BuildBenchImage(binary_, dir.path() + "/b.tar");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(first->manifest_digest, second->manifest_digest);
  EXPECT_EQ(first->config_digest, second->config_digest);
  EXPECT_EQ(Sha256File(first->archive_path).value(), Sha256File(second->archive_path).value());
  auto info = image::InspectOciArchive(first->archive_path);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->manifest_digest, first->manifest_digest);
  EXPECT_EQ(info->config_digest, first->config_digest);
  EXPECT_EQ(info->ref_name, kBenchImageRefName);
}

TEST(BenchImageTest, MissingOrEmptyBinaryIsAnError) {
  TempDir dir("readiness_test");
  auto missing = BuildBenchImage(dir.path() + "/no-such-bench", dir.path() + "/image.tar");
  EXPECT_EQ(missing.status().code(), Code::kNotFound) << missing.status().ToString();
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/empty", "").ok());
  auto empty = BuildBenchImage(dir.path() + "/empty", dir.path() + "/image.tar");
  EXPECT_EQ(empty.status().code(), Code::kInvalidArgument) << empty.status().ToString();
  EXPECT_FALSE(PathExists(dir.path() + "/image.tar"));
}

// The whole path a node takes: load the archive, run it without network with
// an output directory mounted, read result.txt back, judge it. Uses a private
// podman storage (--root/--runroot) so the test neither sees nor disturbs
// images of concurrent runs, and removing the directory removes the image.
TEST_F(BenchProgramTest, PodmanRunsTheBenchImageAndJudgePassesItsResult) {
  if (RunShell("command -v podman").exit_code != 0) GTEST_SKIP() << "needs podman";
  TempDir dir("readiness_test");
  const std::string podman = "podman --root " + dir.path() + "/storage --runroot " + dir.path() + "/run";
  if (RunShell(podman + " info").exit_code != 0) {
    GTEST_SKIP() << "podman is installed but not usable here (podman info fails)";
  }
  auto built = BuildBenchImage(binary_, dir.path() + "/bench.tar");
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  CommandResult load = RunShell(podman + " load -q -i " + built->archive_path);
  ASSERT_EQ(load.exit_code, 0) << load.output;

  const std::string out = dir.path() + "/out";
  ASSERT_TRUE(MakeDirs(out).ok());
  CommandResult run = RunShell(podman + " run --rm --network none " + kPodmanUlimitFlags + " -v " + out + ":/out " +
                               DigestHex(built->config_digest) + " " + Join(BenchArgs(kIterations, kSeed, "/out")));
  (void)RunShell(podman + " rmi -f " + DigestHex(built->config_digest));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto text = ReadFile(out + "/result.txt");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  auto result = ParseBenchResult(*text);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  v1::Measurement m = Judge(*result, kSeed, kIterations, /*min_plausible_score=*/1.0);
  EXPECT_TRUE(m.passed()) << m.reason() << "\n" << *text;
}

}  // namespace
}  // namespace idlegrid::readiness
