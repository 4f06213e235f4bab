// Webhooks end to end (docs/webhooks.md): a real coordinator allowing one
// loopback receiver, the real CLI submitting a job whose manifest names a
// callback. The receiver is down when the job ends (cancelled: no node has
// joined), so the first try fails and is recorded; once it is up, the next
// try delivers a body it can verify with the job's secret. A callback to a
// host the operator did not allow is refused at submit, with nothing stored.
#include <gtest/gtest.h>

#include <string>

#include "e2e/harness.h"
#include "webhook/callback.h"
#include "webhook/receiver.h"

namespace idlegrid::testing {
namespace {

// The job's deliveries, read over HTTPS until `done` holds (or 30 s pass).
Result<v1::ListWebhookDeliveriesResponse> WaitDeliveries(
    Grid& grid, const std::string& job_id, const std::function<bool(const v1::ListWebhookDeliveriesResponse&)>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  v1::ListWebhookDeliveriesResponse last;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = grid.Curl("/v1/jobs/" + job_id + "/webhooks");
    if (r.exit_code != 0) return Status::Internal(r.err + r.out);
    last = ParseJson<v1::ListWebhookDeliveriesResponse>(r.out);
    if (done(last)) return last;
    std::this_thread::yield();
  }
  return last;
}

TEST(WebhookE2E, ACallbackRefusedByADownReceiverIsDeliveredOnceItIsUp) {
  Receiver receiver;
  Grid grid("Webhook");
  ASSERT_TRUE(grid.StartCoordinator({"--webhook-allow", "127.0.0.1:" + std::to_string(receiver.port())}).ok());

  // Not on the allow list: refused at submit, nothing stored.
  auto refused = grid.Cli(
      {"submit", grid.Manifest("elsewhere", {"sleep", "1"}, "callback: {url: \"http://127.0.0.2:8080/hook\"}\n")});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("--webhook-allow"), std::string::npos) << refused.err;
  auto jobs = grid.Cli({"jobs", "--json"});
  EXPECT_EQ(jobs.out.find("elsewhere"), std::string::npos) << jobs.out;

  const std::string secret = "a-secret-of-some-length";
  auto submitted =
      grid.Cli({"submit",
                grid.Manifest("called-back", {"sleep", "1"},
                              "callback: {url: \"" + receiver.Url("/done") + "\", secret: \"" + secret + "\"}\n"),
                "--json"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const v1::Job job = ParseJson<v1::Job>(submitted.out);
  EXPECT_EQ(job.spec().callback_url(), receiver.Url("/done"));
  ASSERT_EQ(grid.Cli({"cancel", job.id()}).exit_code, 0);

  auto failing = WaitDeliveries(grid, job.id(), [](const v1::ListWebhookDeliveriesResponse& l) {
    return l.deliveries_size() == 1 && l.deliveries(0).attempts() >= 1;
  });
  ASSERT_TRUE(failing.ok()) << failing.status().message();
  ASSERT_EQ(failing->deliveries_size(), 1);
  EXPECT_EQ(failing->deliveries(0).state(), "pending");
  EXPECT_EQ(failing->deliveries(0).event(), "job.cancelled");
  EXPECT_EQ(failing->deliveries(0).last_http_status(), 0);
  EXPECT_FALSE(failing->deliveries(0).last_error().empty());

  ASSERT_TRUE(receiver.Serve());
  ASSERT_TRUE(receiver.WaitForHits(1, 30'000)) << "the retry (after 1 s, then 2 s) reaches the receiver";
  const Receiver::Hit hit = receiver.Hits().front();
  EXPECT_EQ(hit.path, "/done");
  EXPECT_EQ(hit.event, "job.cancelled");
  EXPECT_TRUE(webhook::Verify(secret, hit.signature, hit.body)) << hit.signature;
  EXPECT_NE(hit.body.find("\"id\":\"" + job.id() + "\""), std::string::npos) << hit.body;
  EXPECT_EQ(hit.body.find(secret), std::string::npos) << "the secret is never sent";

  auto delivered = WaitDeliveries(grid, job.id(), [](const v1::ListWebhookDeliveriesResponse& l) {
    return l.deliveries_size() == 1 && l.deliveries(0).state() == "delivered";
  });
  ASSERT_TRUE(delivered.ok());
  ASSERT_EQ(delivered->deliveries_size(), 1);
  EXPECT_EQ(delivered->deliveries(0).state(), "delivered");
  EXPECT_GE(delivered->deliveries(0).attempts(), 2u);
}

}  // namespace
}  // namespace idlegrid::testing
