// End to end: a real job on a real agent leaves a provenance record
// that `status --json` shows per attempt, `status` in a line, and `fetch`
// beside the results: the image it ran, the spec, the kernel, the node and
// its key, and the environment by name only.
#include <gtest/gtest.h>
#include <google/protobuf/util/json_util.h>
#include <sys/utsname.h>

#include <algorithm>
#include <string>

#include "advert/node_key.h"
#include "common/digest.h"
#include "common/fs.h"
#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

constexpr char kSecret[] = "e2e-secret-5b7d0c31-value";

std::string JsonOf(const v1::Provenance& p) {
  std::string json;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(p, &json).ok());
  return json;
}

class ProvenanceE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(grid_->StartCoordinator().ok());
  }
  std::unique_ptr<Grid> grid_;
};

TEST_F(ProvenanceE2E, StatusShowsWhatTheAttemptRanWithAndFetchKeepsIt) {
  Status started = grid_->StartAgent(1);
  ASSERT_TRUE(started.ok()) << started.message();
  const std::string manifest =
      grid_->Manifest("traced", {"write", "traced"}, std::string("env:\n  SECRET_TOKEN: \"") + kSecret + "\"\n");
  auto pushed_cli = grid_->Cli({"image", "push", Grid::TestImageArchive(), "--json"});
  ASSERT_EQ(pushed_cli.exit_code, 0) << pushed_cli.err;
  const auto pushed = ParseJson<v1::PushImageResponse>(pushed_cli.out);
  ASSERT_FALSE(pushed.config_digest().empty()) << pushed_cli.out;

  auto submitted = grid_->Cli({"submit", manifest, "--wait", "--json"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  const std::string job_id = ParseJson<v1::Job>(submitted.out).id();
  auto status = grid_->Cli({"status", job_id, "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const v1::Job job = ParseJson<v1::Job>(status.out);
  ASSERT_EQ(job.state(), v1::SUCCEEDED) << status.out;
  ASSERT_EQ(job.tasks_size(), 1);
  ASSERT_EQ(job.tasks(0).attempts_size(), 1);
  const v1::Attempt& attempt = job.tasks(0).attempts(0);
  ASSERT_TRUE(attempt.has_provenance()) << status.out;
  const v1::Provenance& p = attempt.provenance();

  // The image, by the digests the coordinator registered at push.
  EXPECT_EQ(p.image_config_digest(), pushed.config_digest());
  EXPECT_EQ(p.image_manifest_digest(), pushed.image());
  // The spec, by the digest the job was stored with.
  EXPECT_EQ(p.job_spec_digest(), job.spec_digest());
  // The host: this machine's kernel, the agent's node id and its key.
  struct utsname names {};
  ASSERT_EQ(::uname(&names), 0);
  EXPECT_EQ(p.kernel_release(), names.release);
  ASSERT_FALSE(grid_->node_ids.empty());
  EXPECT_EQ(p.node_id(), grid_->node_ids[0]);
  EXPECT_EQ(p.node_id(), attempt.node_id());
  auto key = advert::NodeKey::LoadOrCreate(grid_->AgentDataDir(1) + "/state");
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(p.node_key_fingerprint(), advert::KeyFingerprint(key->public_key()));
  // The sandbox, as the driver that ran it describes it.
  EXPECT_EQ(p.runtime(), "runc");
  EXPECT_TRUE(p.driver() == "runc" || p.driver() == "podman") << p.driver();
  EXPECT_FALSE(p.runtime_version().empty()) << JsonOf(p);
  EXPECT_TRUE(IsValidDigest(p.seccomp_digest())) << JsonOf(p);
  EXPECT_FALSE(p.job_user().empty()) << JsonOf(p);
  EXPECT_FALSE(p.agent_version().empty());
  // The environment, by name; the value is nowhere in the record.
  const std::vector<std::string> names_seen(p.env_names().begin(), p.env_names().end());
  EXPECT_NE(std::find(names_seen.begin(), names_seen.end(), "SECRET_TOKEN"), names_seen.end()) << JsonOf(p);
  EXPECT_NE(std::find(names_seen.begin(), names_seen.end(), "IDLEGRID_JOB_ID"), names_seen.end()) << JsonOf(p);
  EXPECT_EQ(JsonOf(p).find(kSecret), std::string::npos) << JsonOf(p);
  EXPECT_EQ(p.SerializeAsString().find(kSecret), std::string::npos);

  // `status` says it in a line.
  auto human = grid_->Cli({"status", job_id});
  ASSERT_EQ(human.exit_code, 0) << human.err;
  EXPECT_NE(human.out.find("ran with image " + pushed.config_digest().substr(7, 12)), std::string::npos) << human.out;
  EXPECT_NE(human.out.find(std::string("kernel ") + names.release), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("SECRET_TOKEN"), std::string::npos) << human.out;
  EXPECT_EQ(human.out.find(kSecret), std::string::npos) << human.out;

  // `fetch` puts the record beside the task's results.
  const std::string out_dir = grid_->root + "/fetched";
  auto fetched = grid_->Cli({"fetch", job_id, out_dir});
  ASSERT_EQ(fetched.exit_code, 0) << fetched.err;
  EXPECT_TRUE(PathExists(out_dir + "/task-0/hello.txt"));
  auto record = ReadFile(out_dir + "/task-0.provenance.json");
  ASSERT_TRUE(record.ok()) << record.status().ToString() << "\n" << fetched.out;
  const auto kept = ParseJson<v1::Provenance>(*record);
  EXPECT_EQ(kept.SerializeAsString(), p.SerializeAsString()) << *record;
  EXPECT_NE(fetched.out.find("attempt " + attempt.id()), std::string::npos) << fetched.out;
}

}  // namespace
}  // namespace idlegrid::testing
