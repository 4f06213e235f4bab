// Metering an attempt and the node's statement for its receipt
// (agent/metering.h; docs/receipts.md).
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "agent/metering.h"

namespace idlegrid::agent {
namespace {

TEST(MeterAttempt, RunTimeGpuTimeCpuTimeAndBytes) {
  struct Case {
    const char* name;
    MeterInputs in;
    uint64_t run_ms, gpu_millis, cpu_millis;
  };
  const std::vector<Case> cases = {
      {"cpu only", {1000, 61000, 0, 0, 59'999'999, "rusage", 10, 20}, 60000, 0, 59999},
      {"two whole GPUs", {0, 30000, 2, 0, 0, "", 0, 0}, 30000, 60000, 0},
      {"gpu_milli 1000 is whole", {0, 30000, 1, 1000, 0, "", 0, 0}, 30000, 30000, 0},
      {"a quarter of a GPU", {0, 30000, 1, 250, 0, "", 0, 0}, 30000, 7500, 0},
      {"a third, rounded down", {0, 10, 1, 333, 0, "", 0, 0}, 10, 3, 0},
      {"clock went backwards", {5000, 4000, 1, 0, 0, "", 0, 0}, 0, 0, 0},
      {"never started", {0, 0, 1, 0, 0, "", 0, 0}, 0, 0, 0},
      // The owner froze it for 20 s of the 30: the requester pays for 10.
      {"frozen by the owner", {0, 30000, 1, 0, 0, "", 0, 0, 20000}, 10000, 10000, 0},
      {"frozen longer than measured", {0, 3000, 1, 0, 0, "", 0, 0, 5000}, 0, 0, 0},
  };
  for (const Case& c : cases) {
    const v1::Metering m = MeterAttempt(c.in);
    EXPECT_EQ(m.run_ms(), c.run_ms) << c.name;
    EXPECT_EQ(m.gpu_millis(), c.gpu_millis) << c.name;
    EXPECT_EQ(m.cpu_millis(), c.cpu_millis) << c.name;
    EXPECT_EQ(m.cpu_source(), c.in.cpu_source) << c.name;
    EXPECT_EQ(m.bytes_in(), c.in.bytes_in) << c.name;
    EXPECT_EQ(m.bytes_out(), c.in.bytes_out) << c.name;
  }
}

TEST(BuildStatement, NamesTheAttemptItsLeaseAndWhatWentInAndOut) {
  v1::Assignment a;
  a.set_attempt_id("a-7");
  a.set_job_id("j-1");
  a.set_task_index(4);
  a.set_lease_epoch(3);
  a.mutable_spec()->add_inputs()->set_artifact("sha256:" + std::string(64, '1'));
  a.mutable_spec()->add_inputs()->set_artifact("sha256:" + std::string(64, '2'));
  v1::ReportAttemptRequest exited;
  exited.set_event(v1::EXITED);
  exited.set_exit_code(3);
  exited.mutable_provenance()->set_node_id("n-0123456789abcdef");
  auto* out = exited.add_outputs();
  out->set_path("r.txt");
  out->set_digest("sha256:" + std::string(64, '3'));
  v1::Metering m;
  m.set_run_ms(5);
  const v1::ReceiptStatement s = BuildStatement(a, exited, m, 100, 105);
  EXPECT_EQ(s.attempt_id(), "a-7");
  EXPECT_EQ(s.job_id(), "j-1");
  EXPECT_EQ(s.task_index(), 4u);
  EXPECT_EQ(s.lease_epoch(), 3u);
  EXPECT_EQ(s.node_id(), "n-0123456789abcdef");
  EXPECT_EQ(s.exit_code(), 3);
  EXPECT_EQ(s.started_at_ms(), 100);
  EXPECT_EQ(s.finished_at_ms(), 105);
  EXPECT_EQ(s.metering().run_ms(), 5u);
  ASSERT_EQ(s.input_digests_size(), 2);
  EXPECT_EQ(s.input_digests(1), "sha256:" + std::string(64, '2'));
  ASSERT_EQ(s.outputs_size(), 1);
  EXPECT_EQ(s.outputs(0).path(), "r.txt");
  EXPECT_EQ(s.provenance().node_id(), "n-0123456789abcdef");
}

class FakeTransfer : public ArtifactTransfer {
 public:
  Status Download(const std::string& digest, const std::string& path) override {
    if (digest == "missing") return Status::NotFound("no " + digest);
    std::ofstream(path) << std::string(1000, 'x');
    return Status::Ok();
  }
  Result<v1::OutputFile> Upload(const std::string& path, const std::string& rel) override {
    if (rel == "refused") return Status::Unavailable("down");
    v1::OutputFile f;
    f.set_path(rel);
    f.set_size(77);
    return f;
  }
};

TEST(CountingTransfer, CountsWhatMovedAndNothingThatFailed) {
  FakeTransfer inner;
  CountingTransfer counted(&inner);
  const std::string path = ::testing::TempDir() + "/metering-download";
  ASSERT_TRUE(counted.Download("sha256:x", path).ok());
  ASSERT_TRUE(counted.Download("sha256:y", path).ok());
  EXPECT_FALSE(counted.Download("missing", path).ok());
  ASSERT_TRUE(counted.Upload(path, "a").ok());
  EXPECT_FALSE(counted.Upload(path, "refused").ok());
  EXPECT_EQ(counted.bytes_in(), 2000u);
  EXPECT_EQ(counted.bytes_out(), 77u);
}

}  // namespace
}  // namespace idlegrid::agent
