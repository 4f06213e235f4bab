#include "manifest/manifest.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace idlegrid::manifest {
namespace {

const std::string kDigestA = "sha256:" + std::string(64, 'a');
const std::string kDigestB = "sha256:" + std::string(64, 'b');
const std::string kDigestC = "sha256:" + std::string(64, 'c');

// Three lines every error case builds on, so line numbers below start at 4.
const std::string kBase =
    "apiVersion: idlegrid/v1\n"
    "name: sweep\n"
    "image: sim@" +
    kDigestA + "\n";

bool SameSpec(const v1::JobSpec& a, const v1::JobSpec& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

// ---------------------------------------------------------------------------
// Successful parses.

TEST(ParseManifestTest, FullManifestSetsEveryField) {
  const std::string yaml = kBase +
                           "command: [\"/sim\", \"--mode\"]\n"
                           "args: [\"--steps\", \"1000\"]\n"
                           "env: {SEED: \"42\", DEBUG: true, RATE: 0.5}\n"
                           "resources:\n"
                           "  gpus: 2\n"
                           "  gpuMemory: 20Gi\n"
                           "  cpu: 0.5\n"
                           "  memory: 1Gi\n"
                           "  disk: 20G\n"
                           "  maxFileSize: 2G\n"
                           "  shm: 512Mi\n"
                           "  tmp: 128Mi\n"
                           "  pids: 64\n"
                           "  strictCpu: true\n"
                           "inputs:\n"
                           "  - artifact: " +
                           kDigestB +
                           "\n"
                           "    path: /data/input.bin\n"
                           "  - {artifact: " +
                           kDigestC +
                           ", path: /data/weights}\n"
                           "output: /results\n"
                           "runTimeout: 10m\n"
                           "queueTimeout: 1h30m\n"
                           "retries: 2\n"
                           "idempotent: true\n"
                           "array: {count: 20}\n"
                           "runtime: runsc\n";
  Result<v1::JobSpec> spec = ParseManifest(yaml, "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->api_version(), "idlegrid/v1");
  EXPECT_EQ(spec->name(), "sweep");
  EXPECT_EQ(spec->image(), "sim@" + kDigestA);
  EXPECT_EQ(std::vector<std::string>(spec->command().begin(), spec->command().end()),
            (std::vector<std::string>{"/sim", "--mode"}));
  EXPECT_EQ(std::vector<std::string>(spec->args().begin(), spec->args().end()),
            (std::vector<std::string>{"--steps", "1000"}));
  ASSERT_EQ(spec->env().size(), 3u);
  EXPECT_EQ(spec->env().at("SEED"), "42");
  EXPECT_EQ(spec->env().at("DEBUG"), "true");
  EXPECT_EQ(spec->env().at("RATE"), "0.5");
  const v1::Resources& r = spec->resources();
  EXPECT_EQ(r.gpus(), 2u);
  EXPECT_EQ(r.gpu_memory_bytes(), 20ull << 30);
  EXPECT_DOUBLE_EQ(r.cpu(), 0.5);
  EXPECT_EQ(r.memory_bytes(), 1ull << 30);
  EXPECT_EQ(r.disk_bytes(), 2000000000ull) << "maxFileSize";
  EXPECT_EQ(r.output_bytes(), 20000000000ull) << "disk: the total";
  EXPECT_EQ(r.shm_bytes(), 512ull << 20);
  EXPECT_EQ(r.tmp_bytes(), 128ull << 20);
  EXPECT_EQ(r.pids(), 64u);
  EXPECT_TRUE(r.strict_cpu());
  ASSERT_EQ(spec->inputs_size(), 2);
  EXPECT_EQ(spec->inputs(0).artifact(), kDigestB);
  EXPECT_EQ(spec->inputs(0).path(), "/data/input.bin");
  EXPECT_EQ(spec->inputs(1).artifact(), kDigestC);
  EXPECT_EQ(spec->inputs(1).path(), "/data/weights");
  EXPECT_EQ(spec->output_path(), "/results");
  EXPECT_EQ(spec->run_timeout_seconds(), 600u);
  EXPECT_EQ(spec->queue_timeout_seconds(), 5400u);
  EXPECT_EQ(spec->retries(), 2u);
  EXPECT_TRUE(spec->idempotent());
  EXPECT_EQ(spec->array_count(), 20u);
  EXPECT_EQ(spec->runtime(), "runsc");
  EXPECT_TRUE(ValidateJobSpec(*spec).ok());
}

TEST(ParseManifestTest, MinimalManifestGetsDefaults) {
  Result<v1::JobSpec> spec = ParseManifest(kBase, "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(spec->command().empty());
  EXPECT_TRUE(spec->args().empty());
  EXPECT_TRUE(spec->env().empty());
  EXPECT_TRUE(spec->inputs().empty());
  const v1::Resources& r = spec->resources();
  EXPECT_EQ(r.gpus(), 0u);
  EXPECT_EQ(r.gpu_memory_bytes(), 0u);
  EXPECT_DOUBLE_EQ(r.cpu(), 1.0);
  EXPECT_EQ(r.memory_bytes(), 2ull << 30);
  EXPECT_EQ(r.disk_bytes(), 1ull << 30) << "the largest file";
  EXPECT_EQ(r.output_bytes(), 0u) << "0: the node's default total";
  EXPECT_EQ(r.shm_bytes(), 256ull << 20);
  EXPECT_EQ(r.tmp_bytes(), 256ull << 20);
  EXPECT_EQ(r.pids(), 256u);
  EXPECT_FALSE(r.strict_cpu());
  EXPECT_EQ(spec->output_path(), "/out");
  EXPECT_EQ(spec->run_timeout_seconds(), 3600u);
  EXPECT_EQ(spec->queue_timeout_seconds(), 86400u);
  EXPECT_EQ(spec->retries(), 0u);
  EXPECT_FALSE(spec->idempotent());
  EXPECT_EQ(spec->array_count(), 1u);
  EXPECT_EQ(spec->runtime(), "runc");
}

// Found by fuzzing (tests/fuzz/corpus/manifest/regress_invalid_utf8_in_args):
// a raw byte that is not UTF-8 reached a protobuf string field. It is now
// refused where it stands; UTF-8 text (and YAML's escapes) still parse.
TEST(ParseManifestTest, TextThatIsNotUtf8IsRefusedWhereItStands) {
  Result<v1::JobSpec> bad = ParseManifest(kBase + "args: [\"/ou\x84t\"]\n", "job.yaml");
  ASSERT_FALSE(bad.ok());
  const int line = int(std::count(kBase.begin(), kBase.end(), '\n')) + 1;
  EXPECT_EQ(bad.status().message(),
            "job.yaml:" + std::to_string(line) + ":12: not UTF-8 text (byte 0x84): a manifest must be UTF-8");
  Result<v1::JobSpec> good = ParseManifest(kBase + "args: [\"caf\xc3\xa9\", \"\\xe9\"]\n", "job.yaml");
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->args(0), "caf\xc3\xa9");
  EXPECT_EQ(good->args(1), "\xc3\xa9") << "YAML's \\xe9 escape is U+00E9, encoded as UTF-8";
}

TEST(ParseManifestTest, TmpfsSizesFollowTheMemoryWrittenUnlessGiven) {
  const struct {
    std::string resources;
    uint64_t shm, tmp;
  } cases[] = {
      {"{memory: 256Mi}", 64ull << 20, 64ull << 20},  // a quarter each
      {"{memory: 8Gi}", 256ull << 20, 256ull << 20},  // at most 256Mi each
      {"{memory: 4Mi}", 1ull << 20, 1ull << 20},
      {"{memory: 4Gi, shm: 1Gi}", 1ull << 30, 256ull << 20},
      {"{memory: 1Gi, tmp: 768Mi, shm: 256Mi}", 256ull << 20, 768ull << 20},  // exactly the memory
  };
  for (const auto& c : cases) {
    Result<v1::JobSpec> spec = ParseManifest(kBase + "resources: " + c.resources + "\n", "job.yaml");
    ASSERT_TRUE(spec.ok()) << c.resources << ": " << spec.status().ToString();
    EXPECT_EQ(spec->resources().shm_bytes(), c.shm) << c.resources;
    EXPECT_EQ(spec->resources().tmp_bytes(), c.tmp) << c.resources;
  }
}

TEST(ParseManifestTest, DiskIsTheTotalAndCapsTheDefaultLargestFile) {
  const struct {
    std::string resources;
    uint64_t total, largest_file;
  } cases[] = {
      {"{disk: 256Mi}", 256ull << 20, 256ull << 20},  // below the 1Gi default: the total caps a file too
      {"{disk: 20Gi}", 20ull << 30, 1ull << 30},
      {"{disk: 20Gi, maxFileSize: 4Gi}", 20ull << 30, 4ull << 30},
      {"{maxFileSize: 64Mi}", 0, 64ull << 20},  // the total stays the node's default
  };
  for (const auto& c : cases) {
    Result<v1::JobSpec> spec = ParseManifest(kBase + "resources: " + c.resources + "\n", "job.yaml");
    ASSERT_TRUE(spec.ok()) << c.resources << ": " << spec.status().ToString();
    EXPECT_EQ(spec->resources().output_bytes(), c.total) << c.resources;
    EXPECT_EQ(spec->resources().disk_bytes(), c.largest_file) << c.resources;
  }
}

TEST(ParseManifestTest, MinimalManifestEqualsApplyDefaults) {
  v1::JobSpec expected;
  expected.set_api_version("idlegrid/v1");
  expected.set_name("sweep");
  expected.set_image("sim@" + kDigestA);
  ApplyDefaults(&expected);
  Result<v1::JobSpec> spec = ParseManifest(kBase, "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(SameSpec(*spec, expected)) << spec->DebugString();
}

TEST(ParseManifestTest, AcceptedSpellings) {
  struct Case {
    std::string extra;
    std::function<bool(const v1::JobSpec&)> check;
  };
  const std::vector<Case> cases = {
      {"command: /sim --fast\n",
       [](const v1::JobSpec& s) { return s.command_size() == 1 && s.command(0) == "/sim --fast"; }},
      {"args: []\n", [](const v1::JobSpec& s) { return s.args().empty(); }},
      {"env: {}\n", [](const v1::JobSpec& s) { return s.env().empty(); }},
      {"env: {EMPTY: \"\"}\n", [](const v1::JobSpec& s) { return s.env().at("EMPTY").empty(); }},
      {"resources: {cpu: 250m}\n", [](const v1::JobSpec& s) { return s.resources().cpu() == 0.25; }},
      {"resources: {memory: \"1.5Gi\"}\n",
       [](const v1::JobSpec& s) { return s.resources().memory_bytes() == 1610612736ull; }},
      {"resources: {gpus: 1, gpuMemory: 0}\n", [](const v1::JobSpec& s) { return s.resources().gpus() == 1; }},
      {"runTimeout: 90\n", [](const v1::JobSpec& s) { return s.run_timeout_seconds() == 90; }},
      {"runTimeout: 7d\n", [](const v1::JobSpec& s) { return s.run_timeout_seconds() == 604800; }},
      {"retries: 100\n", [](const v1::JobSpec& s) { return s.retries() == 100; }},
      {"array:\n  count: 100000\n", [](const v1::JobSpec& s) { return s.array_count() == 100000; }},
      {"idempotent: false\n", [](const v1::JobSpec& s) { return !s.idempotent(); }},
      {"inputs: []\n", [](const v1::JobSpec& s) { return s.inputs().empty(); }},
  };
  for (const Case& c : cases) {
    Result<v1::JobSpec> spec = ParseManifest(kBase + c.extra, "job.yaml");
    ASSERT_TRUE(spec.ok()) << c.extra << ": " << spec.status().ToString();
    EXPECT_TRUE(c.check(*spec)) << c.extra << "\n" << spec->DebugString();
  }
}

TEST(ParseManifestTest, DigestOnlyImageAndCommentsAreAccepted) {
  const std::string yaml =
      "# A job.\n"
      "apiVersion: idlegrid/v1  # required\n"
      "name: a.b_c-1\n"
      "image: '" +
      kDigestB + "'\n";
  Result<v1::JobSpec> spec = ParseManifest(yaml, "job.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->image(), kDigestB);
  EXPECT_EQ(spec->name(), "a.b_c-1");
}

// ---------------------------------------------------------------------------
// Errors: every case names the exact line and column and part of the message.

struct ErrorCase {
  std::string name;
  std::string yaml;
  int line;
  int column;
  std::string message;  // a substring of what follows "job.yaml:<line>:<column>: "
};

void PrintTo(const ErrorCase& c, std::ostream* os) { *os << c.name; }

class ManifestErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ManifestErrorTest, PointsAtTheProblem) {
  const ErrorCase& c = GetParam();
  Result<v1::JobSpec> spec = ParseManifest(c.yaml, "job.yaml");
  ASSERT_FALSE(spec.ok()) << "parsed:\n" << c.yaml;
  EXPECT_EQ(spec.status().code(), Code::kInvalidArgument);
  const std::string& message = spec.status().message();
  const std::string prefix = "job.yaml:" + std::to_string(c.line) + ":" + std::to_string(c.column) + ": ";
  EXPECT_EQ(message.substr(0, prefix.size()), prefix) << message;
  EXPECT_NE(message.find(c.message), std::string::npos) << message;
}

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

const std::string kInputsHeader = "inputs:\n  - artifact: " + kDigestB + "\n";

INSTANTIATE_TEST_SUITE_P(
    Errors, ManifestErrorTest,
    ::testing::ValuesIn(std::vector<ErrorCase>{
        // Document shape.
        {"SyntaxError", kBase + "command: [\"/sim\"\nargs: []\n", 5, 1, "invalid YAML: "},
        {"BadIndentation", kBase + "resources:\n  cpu: 1\n memory: 1Gi\n", 6, 2, "invalid YAML: "},
        {"Empty", "", 1, 1, "manifest is empty"},
        {"TopLevelList", "- name: x\n", 1, 1, "must be a map of fields"},
        {"TopLevelScalarAfterComment", "# job\nhello\n", 2, 1, "got \"hello\""},
        {"TwoDocuments", kBase + "---\n" + kBase, 5, 1, "single YAML document"},
        {"TooLarge", kBase + "# " + std::string(kMaxManifestBytes, 'x') + "\n", 1, 1, "larger than 1Mi"},
        {"NonStringKey", kBase + "[a]: 1\n", 4, 1, "keys must be strings, got a list"},
        // Unknown and duplicate keys.
        {"UnknownTopLevel", kBase + "foo: 1\n", 4, 1, "unknown field \"foo\""},
        {"UnknownWithSuggestion", kBase + "imag: x\n", 4, 1, "(did you mean \"image\"?)"},
        {"UnknownSnakeCase", kBase + "run_timeout: 1m\n", 4, 1,
         "unknown field \"run_timeout\" (did you mean \"runTimeout\"?)"},
        {"UnknownInResources", kBase + "resources:\n  cpu: 1\n  memroy: 1Gi\n", 6, 3,
         "unknown field \"memroy\" in resources (did you mean \"memory\"?)"},
        {"UnknownInInput", kInputsHeader + "    path: /a\n    mode: ro\n" + kBase, 4, 5,
         "unknown field \"mode\" in inputs[0]"},
        {"UnknownInArray", kBase + "array: {count: 2, size: 3}\n", 4, 19, "unknown field \"size\" in array"},
        {"MergeKey", kBase + "<<: {retries: 1}\n", 4, 1, "unknown field \"<<\" (YAML merge keys are not supported)"},
        {"DuplicateTopLevel", kBase + "name: other\n", 4, 1, "duplicate key \"name\""},
        {"DuplicateInResources", kBase + "resources:\n  cpu: 1\n  cpu: 2\n", 6, 3,
         "duplicate key \"cpu\" in resources"},
        {"DuplicateEnv", kBase + "env:\n  A: 1\n  A: 2\n", 6, 3, "duplicate key \"A\" in env"},
        // Missing fields.
        {"MissingImage", "apiVersion: idlegrid/v1\nname: sweep\n", 1, 1, "missing required field \"image\""},
        {"MissingNameAfterComment", "# job\n\napiVersion: idlegrid/v1\nimage: " + kDigestA + "\n", 3, 1,
         "missing required field \"name\""},
        {"MissingInputPath", kBase + "inputs:\n  - artifact: " + kDigestB + "\n", 5, 5,
         "inputs[0]: missing required field \"path\""},
        {"MissingArrayCount", kBase + "array: {}\n", 4, 8, "array: expected count or items"},
        // Wrong types.
        {"RetriesNotANumber", kBase + "retries: abc\n", 4, 10, "retries: expected a non-negative integer, got \"abc\""},
        {"RetriesNegative", kBase + "retries: -1\n", 4, 10, "expected a non-negative integer, got \"-1\""},
        {"RetriesFloat", kBase + "retries: 1.5\n", 4, 10, "expected a non-negative integer, got \"1.5\""},
        {"RetriesQuoted", kBase + "retries: \"2\"\n", 4, 10, "got the quoted string \"2\""},
        {"RetriesOverflow", kBase + "retries: 4294967296\n", 4, 10, "retries: \"4294967296\" is too large"},
        {"GpusHex", kBase + "resources: {gpus: 0x10}\n", 4, 19, "resources.gpus: expected a non-negative integer"},
        {"CommandMap", kBase + "command: {a: 1}\n", 4, 10, "command: expected a list of strings, got a map"},
        {"CommandNestedList", kBase + "command: [a, [b]]\n", 4, 14, "command[1]: expected a string, got a list"},
        {"ArgsNull", kBase + "args:\n", 4, 1, "args: expected a list of strings, got null"},
        {"NameNull", kBase.substr(0, kBase.find("name")) + "name:\nimage: " + kDigestA + "\n", 2, 1,
         "name: expected a string, got null"},
        {"ImageList", "apiVersion: idlegrid/v1\nname: a\nimage: [x]\n", 3, 8, "image: expected a string, got a list"},
        {"BoolYes", kBase + "idempotent: yes\n", 4, 13, "idempotent: expected true or false, got \"yes\""},
        {"BoolQuoted", kBase + "resources: {strictCpu: \"true\"}\n", 4, 24, "expected true or false"},
        {"ResourcesScalar", kBase + "resources: 5\n", 4, 12, "resources: expected a map, got \"5\""},
        {"EnvList", kBase + "env: [A]\n", 4, 6, "env: expected a map of variable names to values"},
        {"EnvValueMap", kBase + "env:\n  A: {b: 1}\n", 5, 6, "env.A: expected a string, number or boolean, got a map"},
        {"InputsMap", kBase + "inputs: {path: /a}\n", 4, 9, "inputs: expected a list"},
        {"InputNotMap", kBase + "inputs:\n  - /a\n", 5, 5, "inputs[0]: expected a map, got \"/a\""},
        {"MemoryUnit", kBase + "resources:\n  memory: 12XB\n", 5, 11, "unknown unit \"XB\""},
        {"MemoryNull", kBase + "resources:\n  memory:\n", 5, 3, "resources.memory: expected a byte quantity"},
        {"MemoryFraction", kBase + "resources: {memory: 1.5}\n", 4, 21, "not a whole number of bytes"},
        {"CpuNegative", kBase + "resources: {cpu: -1}\n", 4, 18, "resources.cpu: invalid CPU amount \"-1\""},
        {"DurationUnit", kBase + "runTimeout: 10x\n", 4, 13, "runTimeout: invalid duration \"10x\""},
        // Impossible values (from validation, mapped back to the node).
        {"MemoryZero", kBase + "resources:\n  cpu: 1\n  memory: 0\n", 6, 11,
         "resources.memory: must be at least 4194304 (4Mi)"},
        {"MemoryTooSmall", kBase + "resources: {memory: 4095Ki}\n", 4, 21, "must be at least 4194304 (4Mi)"},
        {"DiskZero", kBase + "resources: {disk: 0}\n", 4, 19,
         "resources.disk: must be at least 1048576 (1Mi); leave it out for the node's default"},
        {"DiskTooSmall", kBase + "resources: {disk: 512Ki}\n", 4, 19,
         "resources.disk: must be at least 1048576 (1Mi), got 512Ki"},
        {"DiskUnit", kBase + "resources: {disk: 3XB}\n", 4, 19, "unknown unit \"XB\""},
        {"MaxFileSizeZero", kBase + "resources: {maxFileSize: 0}\n", 4, 26,
         "resources.maxFileSize: must be at least 1048576 (1Mi)"},
        {"MaxFileSizeAboveTheTotal", kBase + "resources: {disk: 1Gi, maxFileSize: 2Gi}\n", 4, 37,
         "resources.maxFileSize: must be at most resources.disk, the total the job may write (1Gi), got 2Gi"},
        // An old manifest's `disk` was the per-file cap: refused, saying what the keys are now.
        {"DiskTotalRenamed", kBase + "resources: {disk: 1Gi, diskTotal: 20Gi}\n", 4, 35,
         "resources.diskTotal: renamed: the total a job may write is now resources.disk, and the per-file cap "
         "the old resources.disk set is resources.maxFileSize"},
        {"ShmZero", kBase + "resources: {shm: 0}\n", 4, 18, "resources.shm: must be at least 1048576 (1Mi)"},
        {"TmpTooSmall", kBase + "resources: {tmp: 4Ki}\n", 4, 18, "resources.tmp: must be at least 1048576 (1Mi)"},
        {"ShmUnit", kBase + "resources: {shm: 3XB}\n", 4, 18, "unknown unit \"XB\""},
        {"ShmPastMemory", kBase + "resources: {memory: 256Mi, shm: 512Mi}\n", 4, 33,
         "resources.shm: resources.shm (512Mi) and resources.tmp (64Mi) are held in memory and must fit in "
         "resources.memory (256Mi) together"},
        {"ShmAndTmpPastMemory", kBase + "resources:\n  memory: 512Mi\n  shm: 384Mi\n  tmp: 256Mi\n", 7, 8,
         "resources.tmp: resources.shm (384Mi) and resources.tmp (256Mi) are held in memory and must fit in "
         "resources.memory (512Mi) together"},
        {"CpuZero", kBase + "resources: {cpu: 0}\n", 4, 18, "resources.cpu: must be greater than 0"},
        {"CpuTooMany", kBase + "resources: {cpu: 1025}\n", 4, 18, "at most 1024 cores, got 1025"},
        {"GpusTooMany", kBase + "resources:\n  gpus: 65\n", 5, 9, "resources.gpus: must be at most 64, got 65"},
        {"GpuMemoryWithoutGpus", kBase + "resources:\n  gpus: 0\n  gpuMemory: 20Gi\n", 6, 14,
         "resources.gpuMemory: is only allowed when gpus is at least 1"},
        {"PidsZero", kBase + "resources: {pids: 0}\n", 4, 19, "resources.pids: must be between 1 and 65536"},
        {"PidsTooMany", kBase + "resources: {pids: 65537}\n", 4, 19, "must be between 1 and 65536, got 65537"},
        {"ArrayCountZero", kBase + "array:\n  count: 0\n", 5, 10, "array.count: must be between 1 and 100000, got 0"},
        {"ArrayCountTooMany", kBase + "array: {count: 100001}\n", 4, 16, "got 100001"},
        {"RetriesTooMany", kBase + "retries: 101\n", 4, 10, "retries: must be at most 100, got 101"},
        {"RunTimeoutZero", kBase + "runTimeout: 0s\n", 4, 13, "runTimeout: must be more than 0"},
        {"RunTimeoutTooLong", kBase + "runTimeout: 8d\n", 4, 13, "must be more than 0 and at most 7d, got 8d"},
        {"QueueTimeoutZero", kBase + "queueTimeout: 0\n", 4, 15, "queueTimeout: must be more than 0"},
        {"WrongApiVersion", "apiVersion: idlegrid/v2\nname: a\nimage: " + kDigestA + "\n", 1, 13,
         "apiVersion: must be \"idlegrid/v1\", got \"idlegrid/v2\""},
        {"BadName", "apiVersion: idlegrid/v1\nname: Sweep\nimage: " + kDigestA + "\n", 2, 7, "name: must be 1 to 63"},
        {"NameTooLong", "apiVersion: idlegrid/v1\nname: " + std::string(64, 'a') + "\nimage: " + kDigestA + "\n", 2, 7,
         "name: must be 1 to 63"},
        {"ImageTag", "apiVersion: idlegrid/v1\nname: a\nimage: sim:latest\n", 3, 8, "images must be pinned by digest"},
        {"ImageNoDigest", "apiVersion: idlegrid/v1\nname: a\nimage: sim\n", 3, 8, "not pinned by digest"},
        {"ImageShortDigest", "apiVersion: idlegrid/v1\nname: a\nimage: sim@sha256:abc\n", 3, 8,
         "image: invalid digest \"sha256:abc\""},
        {"ImageUppercaseDigest", "apiVersion: idlegrid/v1\nname: a\nimage: sha256:" + std::string(64, 'A') + "\n", 3, 8,
         "64 lowercase hex characters"},
        {"ImageEmptyName", "apiVersion: idlegrid/v1\nname: a\nimage: \"@" + kDigestA + "\"\n", 3, 8,
         "expected an image name before \"@\""},
        {"ImageOtherAlgorithm", "apiVersion: idlegrid/v1\nname: a\nimage: sim@md5:abc\n", 3, 8, "invalid digest"},
        {"EnvReserved", kBase + "env:\n  SEED: 1\n  IDLEGRID_TASK_INDEX: 3\n", 6, 3,
         "env.IDLEGRID_TASK_INDEX: names starting with IDLEGRID_ are reserved"},
        {"EnvBadName", kBase + "env:\n  1X: a\n", 5, 3, "variable names must match"},
        {"EnvDashName", kBase + "env: {MY-VAR: a}\n", 4, 7, "got \"MY-VAR\""},
        {"UnknownRuntime", kBase + "runtime: kata\n", 4, 10, "runtime: must be \"runc\" or \"runsc\", got \"kata\""},
        {"EmptyRuntime", kBase + "runtime: \"\"\n", 4, 10, "runtime: must be"},
        {"UnknownJobClass", kBase + "jobClass: privileged\n", 4, 11,
         "jobClass: must be \"io-uring\" or absent, got \"privileged\""},
        {"OutputRoot", kBase + "output: /\n", 4, 9, "output: must not be \"/\""},
        {"OutputRelative", kBase + "output: out\n", 4, 9, "output: must be an absolute path"},
        {"OutputTrailingSlash", kBase + "output: /out/\n", 4, 9, "must be a normalized path"},
        {"InputRelative", kBase + kInputsHeader + "    path: data/in.bin\n", 6, 11,
         "inputs[0].path: must be an absolute path, got \"data/in.bin\""},
        {"InputDotDot", kBase + kInputsHeader + "    path: /data/../etc\n", 6, 11, "must not contain \"..\""},
        {"InputRoot", kBase + kInputsHeader + "    path: /\n", 6, 11, "must not be \"/\""},
        {"InputInsideOutput", kBase + kInputsHeader + "    path: /out/x\n", 6, 11,
         "inputs[0].path: \"/out/x\" is inside the output directory \"/out\""},
        {"InputIsOutput", kBase + "output: /data\n" + kInputsHeader + "    path: /data\n", 7, 11,
         "is inside the output directory"},
        {"InputContainsOutput", kBase + "output: /data/out\n" + kInputsHeader + "    path: /data\n", 7, 11,
         "contains the output directory \"/data/out\""},
        {"InputDuplicate",
         kBase + "inputs:\n  - {artifact: " + kDigestB + ", path: /in/a}\n  - {artifact: " + kDigestC +
             ", path: /in/a}\n",
         6, 15 + 71 + 8 + 1, "inputs[1].path: duplicate path \"/in/a\" (also inputs[0].path)"},
        {"InputNested",
         kBase + "inputs:\n  - {artifact: " + kDigestB + ", path: /in/a/b}\n  - {artifact: " + kDigestC +
             ", path: /in/a}\n",
         5, 15 + 71 + 8 + 1, "inputs[0].path: \"/in/a/b\" is inside inputs[1].path \"/in/a\""},
        {"InputBadArtifact", kBase + "inputs:\n  - artifact: sha256:xyz\n    path: /a\n", 5, 15,
         "inputs[0].artifact: expected \"sha256:\" followed by 64 lowercase hex characters"},
    }),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

TEST(ParseManifestTest, ErrorUsesTheGivenFilename) {
  Result<v1::JobSpec> spec = ParseManifest("- x\n", "jobs/sweep.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message().rfind("jobs/sweep.yaml:1:1: ", 0), 0u) << spec.status().message();
}

TEST(ParseManifestTest, UnknownFieldWithoutCloseMatchHasNoSuggestion) {
  Result<v1::JobSpec> spec = ParseManifest(kBase + "resources: {bandwidth: 1}\n", "job.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(), "job.yaml:4:13: unknown field \"bandwidth\" in resources");
}

TEST(ParseManifestTest, ValidationErrorHasExactFormat) {
  Result<v1::JobSpec> spec = ParseManifest(kBase + "resources:\n  memory: 0\n", "job.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(), "job.yaml:5:11: resources.memory: must be at least 4194304 (4Mi)");
}

TEST(ParseManifestTest, AHugeBadValueIsEchoedCutWithItsLength) {
  const std::string huge(100000, '9');
  for (const std::string& field : {"memory: " + huge + "X", "cpu: " + huge + "q"}) {
    Result<v1::JobSpec> spec = ParseManifest(kBase + "resources:\n  " + field + "\n", "job.yaml");
    ASSERT_FALSE(spec.ok()) << field.substr(0, 10);
    const std::string& message = spec.status().message();
    EXPECT_LT(message.size(), 400u) << message.substr(0, 400);
    EXPECT_NE(message.find("(100001 bytes)"), std::string::npos) << message.substr(0, 400);
    EXPECT_NE(message.find("job.yaml:5:"), std::string::npos) << message.substr(0, 400) << ": the line is still named";
  }
}

TEST(ParseManifestTest, DeeplyNestedInputDoesNotCrash) {
  Result<v1::JobSpec> spec = ParseManifest(kBase + "args: " + Repeat("[", 5000) + Repeat("]", 5000) + "\n", "job.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), Code::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// LoadManifestFile.

class LoadManifestFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "manifest_test_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::remove((dir_ + "/job.yaml").c_str());
    ::rmdir(dir_.c_str());
  }
  std::string dir_;
};

TEST_F(LoadManifestFileTest, ReadsAndParses) {
  const std::string path = dir_ + "/job.yaml";
  std::ofstream(path) << kBase << "retries: 3\n";
  Result<v1::JobSpec> spec = LoadManifestFile(path);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->retries(), 3u);
}

TEST_F(LoadManifestFileTest, ErrorsNameThePath) {
  const std::string path = dir_ + "/job.yaml";
  std::ofstream(path) << kBase << "retries: x\n";
  Result<v1::JobSpec> spec = LoadManifestFile(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message().rfind(path + ":4:10: retries:", 0), 0u) << spec.status().message();
}

TEST_F(LoadManifestFileTest, MissingFile) {
  const std::string path = dir_ + "/absent.yaml";
  Result<v1::JobSpec> spec = LoadManifestFile(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(spec.status().message().rfind(path + ": cannot read: ", 0), 0u) << spec.status().message();
}

TEST_F(LoadManifestFileTest, Directory) {
  Result<v1::JobSpec> spec = LoadManifestFile(dir_);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message().rfind(dir_ + ": cannot read: ", 0), 0u) << spec.status().message();
}

// ---------------------------------------------------------------------------
// ApplyDefaults and ValidateJobSpec on specs built by hand (as from JSON).

v1::JobSpec ValidSpec() {
  v1::JobSpec spec;
  spec.set_api_version("idlegrid/v1");
  spec.set_name("sweep");
  spec.set_image(kDigestA);
  (*spec.mutable_env())["SEED"] = "1";
  v1::InputSpec* input = spec.add_inputs();
  input->set_artifact(kDigestB);
  input->set_path("/data/in");
  ApplyDefaults(&spec);
  return spec;
}

TEST(ApplyDefaultsTest, FillsOnlyUnsetFields) {
  v1::JobSpec spec;
  spec.mutable_resources()->set_memory_bytes(1ull << 30);
  spec.set_runtime("runsc");
  spec.set_retries(4);
  ApplyDefaults(&spec);
  EXPECT_EQ(spec.resources().memory_bytes(), 1ull << 30);
  EXPECT_EQ(spec.runtime(), "runsc");
  EXPECT_EQ(spec.retries(), 4u);
  EXPECT_DOUBLE_EQ(spec.resources().cpu(), kDefaultCpu);
  EXPECT_EQ(spec.resources().disk_bytes(), kDefaultMaxFileBytes);
  EXPECT_EQ(spec.resources().shm_bytes(), 256ull << 20) << "a quarter of 1Gi";
  EXPECT_EQ(spec.resources().tmp_bytes(), 256ull << 20);
  EXPECT_EQ(spec.resources().pids(), kDefaultPids);
  EXPECT_EQ(spec.output_path(), "/out");
  EXPECT_EQ(spec.run_timeout_seconds(), kDefaultRunTimeoutSeconds);
  EXPECT_EQ(spec.queue_timeout_seconds(), kDefaultQueueTimeoutSeconds);
  EXPECT_EQ(spec.array_count(), 1u);
}

TEST(ValidateJobSpecTest, ValidSpecPasses) {
  Status status = ValidateJobSpec(ValidSpec());
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(ValidateJobSpecTest, EmptySpecFailsOnApiVersion) {
  v1::JobSpec spec;
  ApplyDefaults(&spec);
  EXPECT_EQ(ValidateJobSpec(spec).message(), "spec.api_version: must be \"idlegrid/v1\", got \"\"");
}

struct ViolationCase {
  std::string name;
  std::function<void(v1::JobSpec*)> mutate;
  std::string message;         // exact ValidateJobSpec message
  std::string manifest_field;  // FindViolation's manifest path
};

void PrintTo(const ViolationCase& c, std::ostream* os) { *os << c.name; }

class ValidateJobSpecTableTest : public ::testing::TestWithParam<ViolationCase> {};

TEST_P(ValidateJobSpecTableTest, ReportsTheField) {
  const ViolationCase& c = GetParam();
  v1::JobSpec spec = ValidSpec();
  c.mutate(&spec);
  Status status = ValidateJobSpec(spec);
  EXPECT_EQ(status.code(), Code::kInvalidArgument);
  EXPECT_EQ(status.message(), c.message);
  std::optional<FieldViolation> violation = FindViolation(spec);
  ASSERT_TRUE(violation.has_value());
  EXPECT_EQ(violation->manifest_field, c.manifest_field);
}

INSTANTIATE_TEST_SUITE_P(
    Violations, ValidateJobSpecTableTest,
    ::testing::ValuesIn(std::vector<ViolationCase>{
        {"Memory", [](v1::JobSpec* s) { s->mutable_resources()->set_memory_bytes(4194303); },
         "spec.resources.memory_bytes: must be at least 4194304 (4Mi)", "resources.memory"},
        {"GpuMemory", [](v1::JobSpec* s) { s->mutable_resources()->set_gpu_memory_bytes(1); },
         "spec.resources.gpu_memory_bytes: is only allowed when gpus is at least 1", "resources.gpuMemory"},
        {"CpuNaN", [](v1::JobSpec* s) { s->mutable_resources()->set_cpu(std::nan("")); },
         "spec.resources.cpu: must be greater than 0 and at most 1024 cores, got nan", "resources.cpu"},
        {"CpuNegative", [](v1::JobSpec* s) { s->mutable_resources()->set_cpu(-0.5); },
         "spec.resources.cpu: must be greater than 0 and at most 1024 cores, got -0.5", "resources.cpu"},
        {"MaxFileSizeAboveTheTotal",
         [](v1::JobSpec* s) {
           s->mutable_resources()->set_disk_bytes(2ull << 20);
           s->mutable_resources()->set_output_bytes(1ull << 20);
         },
         "spec.resources.disk_bytes: must be at most resources.disk, the total the job may write (1Mi), got 2Mi",
         "resources.maxFileSize"},
        {"DiskTotalTooSmall", [](v1::JobSpec* s) { s->mutable_resources()->set_output_bytes(1000); },
         "spec.resources.output_bytes: must be at least 1048576 (1Mi), got 1000", "resources.disk"},
        {"TmpfsPastMemory",
         [](v1::JobSpec* s) {
           s->mutable_resources()->set_memory_bytes(64ull << 20);
           s->mutable_resources()->set_shm_bytes(32ull << 20);
           s->mutable_resources()->set_tmp_bytes(33ull << 20);
         },
         "spec.resources.tmp_bytes: resources.shm (32Mi) and resources.tmp (33Mi) are held in memory and must fit "
         "in resources.memory (64Mi) together",
         "resources.tmp"},
        {"ArrayCount", [](v1::JobSpec* s) { s->set_array_count(0); },
         "spec.array_count: must be between 1 and 100000, got 0", "array.count"},
        {"RunTimeout", [](v1::JobSpec* s) { s->set_run_timeout_seconds(604801); },
         "spec.run_timeout_seconds: must be more than 0 and at most 7d, got 7d1s", "runTimeout"},
        {"QueueTimeout", [](v1::JobSpec* s) { s->set_queue_timeout_seconds(31 * 86400); },
         "spec.queue_timeout_seconds: must be more than 0 and at most 30d, got 31d", "queueTimeout"},
        {"Output", [](v1::JobSpec* s) { s->set_output_path("/out/./x"); },
         "spec.output_path: must be a normalized path (no \"//\", \"/./\" or trailing \"/\"), got "
         "\"/out/./x\"",
         "output"},
        {"OutputEmpty", [](v1::JobSpec* s) { s->set_output_path(""); }, "spec.output_path: must not be empty",
         "output"},
        {"EnvReserved", [](v1::JobSpec* s) { (*s->mutable_env())["IDLEGRID_TASK_COUNT"] = "1"; },
         "spec.env[\"IDLEGRID_TASK_COUNT\"]: names starting with IDLEGRID_ are reserved for the "
         "platform",
         "env.IDLEGRID_TASK_COUNT"},
        {"EnvNul", [](v1::JobSpec* s) { (*s->mutable_env())["A"] = std::string("x\0y", 3); },
         "spec.env[\"A\"]: value must not contain NUL characters", "env.A"},
        {"CommandNul", [](v1::JobSpec* s) { s->add_command(std::string("a\0", 2)); },
         "spec.command[0]: must not contain NUL characters", "command[0]"},
        {"InputDoubleSlash", [](v1::JobSpec* s) { s->mutable_inputs(0)->set_path("/data//in"); },
         "spec.inputs[0].path: must be a normalized path (no \"//\", \"/./\" or trailing \"/\"), "
         "got \"/data//in\"",
         "inputs[0].path"},
        {"InputSiblingPrefixIsNotNested",  // "/data/in-b" is not inside "/data/in"; "/data/in/c" is
         [](v1::JobSpec* s) {
           v1::InputSpec* b = s->add_inputs();
           b->set_artifact(kDigestC);
           b->set_path("/data/in-b");
           v1::InputSpec* c = s->add_inputs();
           c->set_artifact(kDigestC);
           c->set_path("/data/in/c");
         },
         "spec.inputs[2].path: \"/data/in/c\" is inside inputs[0].path \"/data/in\"", "inputs[2].path"},
        {"DataClass", [](v1::JobSpec* s) { s->set_data_class("Private"); },
         "spec.data_class: must be public, private or regulated, got \"Private\"", "dataClass"},
        {"Runtime", [](v1::JobSpec* s) { s->set_runtime("docker"); },
         "spec.runtime: must be \"runc\" or \"runsc\", got \"docker\"", "runtime"},
        {"Pids", [](v1::JobSpec* s) { s->mutable_resources()->set_pids(70000); },
         "spec.resources.pids: must be between 1 and 65536, got 70000", "resources.pids"},
        {"Image", [](v1::JobSpec* s) { s->set_image("sim:1.0"); },
         "spec.image: \"sim:1.0\" is not pinned by digest; images must be "
         "pinned by digest, "
         "as \"sha256:<64 hex>\" or \"name@sha256:<64 hex>\" (tags such as \":latest\" are not "
         "allowed), or come from an OCI registry as \"HOST[:PORT]/REPO@sha256:<64 hex>\"",
         "image"},
        {"RegistryImageWithoutDigestOrTag", [](v1::JobSpec* s) { s->set_image("registry.example:5000/sim"); },
         "spec.image: \"registry.example:5000/sim\" names a registry image by neither digest nor tag: add "
         "\"@sha256:<64 hex>\"",
         "image"},
    }),
    [](const ::testing::TestParamInfo<ViolationCase>& info) { return info.param.name; });

TEST(ValidateJobSpecTest, RegistryTagPassesValidation) {
  // Whether a tag may be used is the operator's policy, decided at submit.
  v1::JobSpec spec = ValidSpec();
  spec.set_image("registry.example:5000/sim:1.0");
  Status status = ValidateJobSpec(spec);
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST(ValidateJobSpecTest, ImageWithRegistryPortAndDigestPasses) {
  v1::JobSpec spec = ValidSpec();
  spec.set_image("registry.example:5000/team/sim@" + kDigestA);
  Status status = ValidateJobSpec(spec);
  EXPECT_TRUE(status.ok()) << status.ToString();
}

// ---------------------------------------------------------------------------
// Quantities.

TEST(ParseBytesTest, Valid) {
  const std::vector<std::pair<std::string, uint64_t>> cases = {
      {"0", 0},
      {"1024", 1024},
      {"500k", 500000},
      {"2G", 2000000000},
      {"256Mi", 256ull << 20},
      {"1Gi", 1ull << 30},
      {"1.5Gi", 1610612736},
      {"0.5Ki", 512},
      {"1.25k", 1250},
      {"0.001k", 1},
      {"3Ti", 3ull << 40},
      {"1Pi", 1ull << 50},
      {"2E", 2000000000000000000ull},
      {"15Ei", 15ull << 60},
      {"18446744073709551615", 18446744073709551615ull},
  };
  for (const auto& [text, bytes] : cases) {
    Result<uint64_t> result = ParseBytes(text);
    ASSERT_TRUE(result.ok()) << text << ": " << result.status().ToString();
    EXPECT_EQ(*result, bytes) << text;
  }
}

TEST(ParseBytesTest, Invalid) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "expected a number"},
      {"Mi", "expected a number"},
      {"-1", "expected a number"},
      {"1.", "expected digits after"},
      {".5Gi", "expected a number"},
      {"1.5", "not a whole number of bytes"},
      {"0.0001k", "not a whole number of bytes"},
      {"12XB", "unknown unit \"XB\""},
      {"1GB", "unknown unit \"GB\""},
      {"1 Gi", "unknown unit \" Gi\""},
      {"1gi", "unknown unit"},
      {"16Ei", "too large"},
      {"18446744073709551616", "too large"},
      {"99999999999999999999999", "too large"},
      {"1.0000000000000000001", "too many decimal places"},
  };
  for (const auto& [text, message] : cases) {
    Result<uint64_t> result = ParseBytes(text);
    ASSERT_FALSE(result.ok()) << text << " parsed as " << *result;
    EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
    EXPECT_NE(result.status().message().find(message), std::string::npos) << result.status().message();
  }
}

TEST(ParseDurationSecondsTest, Valid) {
  const std::vector<std::pair<std::string, uint32_t>> cases = {
      {"0", 0},
      {"90", 90},
      {"30s", 30},
      {"10m", 600},
      {"2h", 7200},
      {"1d", 86400},
      {"1h30m", 5400},
      {"1d2h3m4s", 93784},
      {"90m", 5400},
      {"0s", 0},
      {"4294967295", 4294967295u},
  };
  for (const auto& [text, seconds] : cases) {
    Result<uint32_t> result = ParseDurationSeconds(text);
    ASSERT_TRUE(result.ok()) << text << ": " << result.status().ToString();
    EXPECT_EQ(*result, seconds) << text;
  }
}

TEST(ParseDurationSecondsTest, Invalid) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "invalid duration"},     {"s", "invalid duration"},     {"10", ""},
      {"-5s", "invalid duration"},  {"1.5h", "invalid duration"},  {"10ms", "invalid duration"},
      {"1w", "invalid duration"},   {"30m1h", "invalid duration"}, {"1h1h", "invalid duration"},
      {"10 m", "invalid duration"}, {"4294967296", "is too long"}, {"49711d", "is too long"},
      {"1H", "invalid duration"},
  };
  for (const auto& [text, message] : cases) {
    if (message.empty()) continue;  // a valid spelling kept in the table to show the boundary
    Result<uint32_t> result = ParseDurationSeconds(text);
    ASSERT_FALSE(result.ok()) << text << " parsed as " << *result;
    EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
    EXPECT_NE(result.status().message().find(message), std::string::npos) << result.status().message();
  }
}

TEST(ParseCpuTest, ValidAndInvalid) {
  const std::vector<std::pair<std::string, double>> valid = {
      {"1", 1}, {"0.5", 0.5}, {"2.25", 2.25}, {"500m", 0.5}, {"0", 0}, {"1024", 1024},
  };
  for (const auto& [text, cores] : valid) {
    Result<double> result = ParseCpu(text);
    ASSERT_TRUE(result.ok()) << text << ": " << result.status().ToString();
    EXPECT_DOUBLE_EQ(*result, cores) << text;
  }
  for (const std::string text : {"", "-1", ".5", "1.", "1e3", "nan", "inf", "0.5m", "1 m", "m", "+1"}) {
    Result<double> result = ParseCpu(text);
    EXPECT_FALSE(result.ok()) << text << " parsed";
  }
}

TEST(FormatTest, BytesAndDurations) {
  EXPECT_EQ(FormatBytes(0), "0");
  EXPECT_EQ(FormatBytes(1000), "1000");
  EXPECT_EQ(FormatBytes(4ull << 20), "4Mi");
  EXPECT_EQ(FormatBytes(1536), "1536");
  EXPECT_EQ(FormatBytes(3072), "3Ki");
  EXPECT_EQ(FormatBytes(3ull << 60), "3Ei");
  EXPECT_EQ(FormatDuration(0), "0s");
  EXPECT_EQ(FormatDuration(45), "45s");
  EXPECT_EQ(FormatDuration(5400), "1h30m");
  EXPECT_EQ(FormatDuration(604800), "7d");
  EXPECT_EQ(FormatDuration(93784), "1d2h3m4s");
}

}  // namespace
}  // namespace idlegrid::manifest
