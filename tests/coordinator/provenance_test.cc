// Provenance records through the coordinator: an agent's record is stored
// with its attempt, naming the node the coordinator authenticated (and the
// key it registered), whatever the agent claimed; its job spec digest is the
// one the job was stored with.
#include <gtest/gtest.h>

#include <string>

#include "advert/node_key.h"
#include "coordinator/pipeline_support.h"
#include "manifest/manifest.h"

namespace idlegrid::coordinator::testing {
namespace {

class ProvenanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status init = h_.Init();
    ASSERT_TRUE(init.ok()) << init.ToString();
  }

  // The fingerprint of the key `node_id` registered with.
  std::string FingerprintOf(const std::string& node_id) {
    auto rec = h_.coordinator().store()->GetNode(node_id);
    EXPECT_TRUE(rec.ok() && rec->has_value()) << rec.status().ToString();
    return rec.ok() && rec->has_value() ? advert::KeyFingerprint((*rec)->public_key) : "";
  }

  PipelineHarness h_;
};

TEST_F(ProvenanceTest, TheRecordNamesTheAuthenticatedNodeAndItsRegisteredKey) {
  auto a = h_.AddNode("node-a");
  auto b = h_.AddNode("node-b");
  ASSERT_TRUE(a.ok() && b.ok());
  v1::JobSpec spec = CpuJob("traced");
  (*spec.mutable_env())["MODE"] = "fast";
  auto job = h_.Submit(spec);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  h_.coordinator().Tick();
  auto task = h_.Task(*job);
  ASSERT_TRUE(task.ok() && task->attempts_size() == 1);
  const v1::Attempt attempt = task->attempts(0);
  const std::string holder = attempt.node_id();
  const std::string other = holder == *a ? *b : *a;
  // The spec the agent is sent hashes to the job's spec digest: the agent's
  // record and the job name the same spec.
  v1::Assignment assignment;
  for (const v1::Command& c : h_.TakeCommands(holder)) {
    if (c.has_assign() && c.assign().attempt_id() == attempt.id()) assignment = c.assign();
  }
  ASSERT_EQ(assignment.attempt_id(), attempt.id());
  auto stored = h_.coordinator().jobs().Get(*job);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(manifest::SpecDigest(assignment.spec()), stored->spec_digest());

  // The holder claims to be the other node, with a key of its choosing.
  ASSERT_TRUE(h_.Accept(holder, attempt.id()).ok());
  v1::ReportAttemptRequest started;
  started.set_attempt_id(attempt.id());
  started.set_event(v1::STARTED);
  started.set_lease_epoch(attempt.lease_epoch());
  v1::Provenance* claimed = started.mutable_provenance();
  claimed->set_node_id(other);
  claimed->set_node_key_fingerprint(FingerprintOf(other));
  claimed->set_kernel_release("6.1.0-18-amd64");
  claimed->set_job_spec_digest(stored->spec_digest());
  claimed->add_env_names("MODE");
  ASSERT_TRUE(h_.coordinator().attempts().Report(holder, started).ok());

  auto after = h_.Task(*job);
  ASSERT_TRUE(after.ok());
  const v1::Provenance& p = after->attempts(0).provenance();
  EXPECT_EQ(p.node_id(), holder);
  EXPECT_EQ(p.node_key_fingerprint(), FingerprintOf(holder));
  EXPECT_NE(p.node_key_fingerprint(), FingerprintOf(other));
  EXPECT_EQ(p.node_key_fingerprint().substr(7, 16), holder.substr(2)) << "the node id derives from the same key";
  // What only the agent knows is kept as it said.
  EXPECT_EQ(p.kernel_release(), "6.1.0-18-amd64");
  EXPECT_EQ(p.job_spec_digest(), stored->spec_digest());
  ASSERT_EQ(p.env_names_size(), 1);
  EXPECT_EQ(p.env_names(0), "MODE");
}

}  // namespace
}  // namespace idlegrid::coordinator::testing
