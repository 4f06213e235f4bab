// End to end: a real job on a real agent leaves a signed, countersigned receipt
// (docs/receipts.md) that `idlegrid receipt` fetches and `receipt verify`
// checks offline (the coordinator is stopped first): it passes as fetched, and
// fails once edited, re-signed by another node's key, or checked against
// another coordinator key.
#include <gtest/gtest.h>
#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <functional>
#include <string>

#include "advert/node_key.h"
#include "common/fs.h"
#include "e2e/harness.h"
#include "receipt/receipt.h"

namespace idlegrid::testing {
namespace {

v1::Receipt ParseReceipt(const std::string& json) {
  v1::Receipt r;
  auto st = google::protobuf::util::JsonStringToMessage(json, &r);
  EXPECT_TRUE(st.ok()) << st.message() << "\n" << json;
  return r;
}

std::string JsonOf(const v1::Receipt& r) {
  std::string json;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(r, &json).ok());
  return json;
}

class ReceiptE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(grid_->StartCoordinator().ok());
  }

  // `receipt verify FILE` with the fingerprint given (none: from the client config).
  CmdResult Verify(const std::string& file, const std::string& fingerprint) {
    if (fingerprint.empty()) return grid_->Cli({"receipt", "verify", file});
    return grid_->Cli({"receipt", "verify", file, "--coordinator-key-fingerprint", fingerprint}, false);
  }

  std::unique_ptr<Grid> grid_;
};

TEST_F(ReceiptE2E, FetchedReceiptVerifiesOfflineAndAnyTamperingFails) {
  Status started = grid_->StartAgent(1);
  ASSERT_TRUE(started.ok()) << started.message();
  // One job burns CPU (its metering is checked), one writes outputs (its
  // receipt is saved, verified and tampered with).
  auto spun = grid_->Cli({"submit", grid_->Manifest("spin", {"spin", "2"}), "--wait", "--json"});
  ASSERT_EQ(spun.exit_code, 0) << spun.out << spun.err;
  v1::Job spin_job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(spun.out, &spin_job).ok()) << spun.out;
  auto spin_receipt = grid_->Cli({"receipt", spin_job.id(), "--json"});
  ASSERT_EQ(spin_receipt.exit_code, 0) << spin_receipt.err;
  const v1::Receipt spin = ParseReceipt(spin_receipt.out);
  // Measured: the spin ran >= 1 s, and its CPU time: waited for under the
  // runc driver, sampled from /proc under podman (conmon is no child of the
  // agent), a lower bound short of at most one 500 ms interval.
  const v1::Metering& m = spin.statement().metering();
  EXPECT_GE(m.run_ms(), 1000u);
  EXPECT_EQ(m.gpu_millis(), 0u);
  EXPECT_EQ(m.cpu_source(), spin.statement().provenance().driver() == "runc" ? "rusage" : "proc");
  const bool sampled = m.cpu_source() == "proc";
  EXPECT_GE(m.cpu_millis(), sampled ? 300u : 800u) << "a 1-2 s spin";
  EXPECT_LE(m.cpu_millis(), m.run_ms() + 1000) << "one thread";
  std::printf("spin metering: run %llu ms, cpu %llu ms (%s), driver %s\n", static_cast<unsigned long long>(m.run_ms()),
              static_cast<unsigned long long>(m.cpu_millis()), m.cpu_source().c_str(),
              spin.statement().provenance().driver().c_str());

  auto submitted = grid_->Cli({"submit", grid_->Manifest("metered", {"write", "receipted"}), "--wait", "--json"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  v1::Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(submitted.out, &job).ok()) << submitted.out;
  auto status = grid_->Cli({"status", job.id(), "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(status.out, &job).ok());
  ASSERT_EQ(job.state(), v1::SUCCEEDED) << status.out;
  const v1::Attempt& attempt = job.tasks(0).attempts(0);
  ASSERT_TRUE(attempt.has_receipt()) << "the exit left no receipt: " << status.out;
  EXPECT_EQ(attempt.metering().run_ms(), attempt.receipt().statement().metering().run_ms());

  const std::string file = grid_->root + "/receipt.json";
  auto fetched = grid_->Cli({"receipt", job.id(), "--task", "0", "-o", file});
  ASSERT_EQ(fetched.exit_code, 0) << fetched.err;
  auto text = ReadFile(file);
  ASSERT_TRUE(text.ok());
  const v1::Receipt r = ParseReceipt(*text);
  const v1::ReceiptStatement& s = r.statement();
  EXPECT_EQ(s.job_id(), job.id());
  EXPECT_EQ(s.attempt_id(), attempt.id());
  EXPECT_EQ(s.lease_epoch(), attempt.lease_epoch());
  EXPECT_EQ(s.node_id(), grid_->node_ids[0]);
  EXPECT_EQ(r.provider(), "operator");
  EXPECT_EQ(r.state(), "SUCCEEDED");
  EXPECT_EQ(r.started_at_ms(), attempt.started_at_ms());
  EXPECT_EQ(r.finished_at_ms(), attempt.finished_at_ms());
  EXPECT_EQ(r.charge_micro(), receipt::ChargeMicro(r.price_per_hour_micro(), r.finished_at_ms() - r.started_at_ms()));
  ASSERT_GT(s.outputs_size(), 0);
  ASSERT_EQ(s.outputs_size(), attempt.outputs_size());
  uint64_t output_bytes = 0;
  for (int i = 0; i < s.outputs_size(); ++i) {
    EXPECT_EQ(s.outputs(i).digest(), attempt.outputs(i).digest());
    output_bytes += s.outputs(i).size();
  }
  EXPECT_EQ(s.metering().bytes_out(), output_bytes) << "the outputs, uploaded";
  EXPECT_EQ(s.provenance().image_config_digest(), attempt.provenance().image_config_digest());

  auto fp = ReadFile(grid_->coordinator_dir + "/receipt-key.fingerprint");
  ASSERT_TRUE(fp.ok()) << fp.status().message();
  const std::string pinned = Trim(*fp);
  EXPECT_EQ(receipt::Fingerprint(r.coordinator_public_key()), pinned);

  // Offline: nobody left to ask.
  grid_->StopAgent(1);
  grid_->StopCoordinator();
  auto ok = Verify(file, pinned);
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("verifies"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("signed attempt " + attempt.id()), std::string::npos) << ok.out;
  auto from_config = Verify(file, "");
  EXPECT_EQ(from_config.exit_code, 0) << from_config.out << from_config.err;
  EXPECT_NE(from_config.out.find(grid_->client_yaml), std::string::npos) << from_config.out;

  struct Tamper {
    const char* what;
    std::function<void(v1::Receipt&)> edit;
    const char* reason;
  };
  const advert::NodeKey other = advert::NodeKey::Generate();
  const std::vector<Tamper> tampers = {
      {"CPU time halved", [](v1::Receipt& t) { t.mutable_statement()->mutable_metering()->set_cpu_millis(1); },
       "node signature does not verify"},
      {"an output's digest",
       [](v1::Receipt& t) { t.mutable_statement()->mutable_outputs(0)->set_digest("sha256:" + std::string(64, '0')); },
       "node signature does not verify"},
      {"the charge", [](v1::Receipt& t) { t.set_charge_micro(t.charge_micro() + 1); },
       "coordinator signature does not verify"},
      {"the provider", [](v1::Receipt& t) { t.set_provider("mallory"); }, "coordinator signature does not verify"},
      {"re-signed by another node's key",
       [&](v1::Receipt& t) {
         t.set_node_public_key(other.public_key());
         t.set_node_signature(*receipt::SignStatement(other, t.statement()));
       },
       "but the statement names node"},
  };
  for (const Tamper& t : tampers) {
    v1::Receipt edited = r;
    t.edit(edited);
    const std::string path = grid_->WriteFile("tampered.json", JsonOf(edited));
    auto verdict = Verify(path, pinned);
    EXPECT_EQ(verdict.exit_code, 1) << t.what << ": " << verdict.out << verdict.err;
    EXPECT_NE((verdict.out + verdict.err).find(t.reason), std::string::npos)
        << t.what << ": " << verdict.out << verdict.err;
  }
  auto wrong_pin = Verify(file, receipt::Fingerprint(other.public_key()));
  EXPECT_EQ(wrong_pin.exit_code, 1) << wrong_pin.out << wrong_pin.err;
  EXPECT_NE(wrong_pin.err.find("is not the pinned key"), std::string::npos) << wrong_pin.err;
}

}  // namespace
}  // namespace idlegrid::testing
