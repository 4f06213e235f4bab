// WebhookDesk (coordinator/webhook_desk.h) on a real SQLite store, the real
// HTTP poster and a real receiver on loopback, with a manual clock: a
// callback waits while its job runs, is POSTed signed once the job settles,
// is retried with backoff while the receiver is down or failing, and is
// recorded delivered; a deleted job's callback fails, as does one whose host
// the operator no longer allows; a workflow's callback names the workflow.
#include "coordinator/webhook_desk.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/service_fixture.h"
#include "webhook/receiver.h"
#include "webhook/callback.h"

namespace idlegrid::coordinator {
namespace {

using testing::Receiver;

class WebhookDeskTest : public ServiceTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ServiceTest::SetUp());
    Build({"127.0.0.1:" + std::to_string(receiver_.port())});
  }
  void Build(std::vector<std::string> allow) {
    WebhookDesk::Hooks hooks;
    hooks.job = [this](const std::string& id) -> Result<v1::Job> {
      auto it = jobs_.find(id);
      if (it == jobs_.end()) return Status::NotFound("job " + id + " does not exist");
      return it->second;
    };
    hooks.workflow = [this](const std::string& id) -> Result<v1::Workflow> {
      auto it = workflows_.find(id);
      if (it == workflows_.end()) return Status::NotFound("workflow " + id + " does not exist");
      return it->second;
    };
    desk_ = std::make_unique<WebhookDesk>(store_.get(), &poster_, &clock_, std::move(allow), std::move(hooks));
  }
  void Job(const std::string& id, v1::TaskState state, bool settled) {
    v1::Job& job = jobs_[id];
    job.set_id(id);
    job.set_state(state);
    job.set_settled(settled);
    job.mutable_spec()->set_callback_secret("must-not-be-sent");
  }
  v1::WebhookDelivery Delivery(const std::string& subject, const std::string& id) {
    auto list = desk_->List(subject, id);
    EXPECT_TRUE(list.ok()) << list.status().ToString();
    EXPECT_EQ(list->deliveries_size(), 1);
    return list->deliveries_size() == 1 ? list->deliveries(0) : v1::WebhookDelivery();
  }

  Receiver receiver_;
  webhook::HttpPoster poster_{5};
  std::map<std::string, v1::Job> jobs_;
  std::map<std::string, v1::Workflow> workflows_;
  std::unique_ptr<WebhookDesk> desk_;
};

TEST_F(WebhookDeskTest, PrepareChecksTheAllowListAndDrawsASecret) {
  std::string secret;
  EXPECT_TRUE(desk_->Prepare(receiver_.Url("/hook"), &secret).ok());
  EXPECT_EQ(secret.size(), 64u);
  std::string short_secret = "short";
  EXPECT_EQ(desk_->Prepare(receiver_.Url("/hook"), &short_secret).code(), Code::kInvalidArgument);
  std::string none;
  Status other = desk_->Prepare("http://127.0.0.2:9/hook", &none);
  EXPECT_EQ(other.code(), Code::kPermissionDenied);
  EXPECT_NE(other.message().find("--webhook-allow"), std::string::npos) << other.message();
  EXPECT_EQ(desk_->Prepare("ftp://127.0.0.1/", &none).code(), Code::kInvalidArgument);
}

TEST_F(WebhookDeskTest, WaitsForTheJobThenRetriesADownReceiverUntilItIsDelivered) {
  const std::string secret = "0123456789abcdef-secret";
  Job("j-1", v1::RUNNING, false);
  ASSERT_TRUE(desk_->Register("job", "j-1", receiver_.Url("/hook?x=1"), secret).ok());
  EXPECT_EQ(desk_->Pass(), 0);  // running: nothing sent
  EXPECT_EQ(Delivery("job", "j-1").state(), "waiting");

  Job("j-1", v1::SUCCEEDED, true);
  clock_.AdvanceMs(WebhookDesk::kCheckMs);
  EXPECT_EQ(desk_->Pass(), 1);  // the receiver is down
  v1::WebhookDelivery d = Delivery("job", "j-1");
  EXPECT_EQ(d.state(), "pending");
  EXPECT_EQ(d.event(), "job.succeeded");
  EXPECT_EQ(d.attempts(), 1u);
  EXPECT_EQ(d.last_http_status(), 0);
  EXPECT_FALSE(d.last_error().empty());
  EXPECT_EQ(d.next_attempt_ms(), clock_.NowMs() + webhook::RetryDelayMs(1));

  ASSERT_TRUE(receiver_.Serve());
  receiver_.Answer(503);
  EXPECT_EQ(desk_->Pass(), 0) << "not due before its backoff";
  clock_.AdvanceMs(webhook::RetryDelayMs(1));
  EXPECT_EQ(desk_->Pass(), 1);
  EXPECT_EQ(Delivery("job", "j-1").last_error(), "HTTP 503");
  receiver_.Answer(200);
  clock_.AdvanceMs(webhook::RetryDelayMs(2));
  EXPECT_EQ(desk_->Pass(), 1);
  d = Delivery("job", "j-1");
  EXPECT_EQ(d.state(), "delivered");
  EXPECT_EQ(d.attempts(), 3u);
  EXPECT_EQ(d.delivered_at_ms(), clock_.NowMs());
  clock_.AdvanceMs(600'000);
  EXPECT_EQ(desk_->Pass(), 0) << "delivered once";

  const auto hits = receiver_.Hits();
  ASSERT_EQ(hits.size(), 2u);
  const auto& hit = hits.back();
  EXPECT_EQ(hit.path, "/hook");
  EXPECT_EQ(hit.event, "job.succeeded");
  EXPECT_EQ(hit.delivery, "wh-j-1");
  EXPECT_TRUE(webhook::Verify(secret, hit.signature, hit.body)) << hit.signature;
  EXPECT_FALSE(webhook::Verify("another-secret-entirely", hit.signature, hit.body));
  EXPECT_EQ(hit.body.rfind("{\"event\":\"job.succeeded\",\"deliveryId\":\"wh-j-1\",\"job\":{", 0), 0u) << hit.body;
  EXPECT_EQ(hit.body.find("must-not-be-sent"), std::string::npos);
}

TEST_F(WebhookDeskTest, ADeletedJobOrADisallowedHostFailsWithoutAPost) {
  ASSERT_TRUE(receiver_.Serve());
  ASSERT_TRUE(desk_->Register("job", "j-gone", receiver_.Url("/h"), "0123456789abcdef").ok());
  EXPECT_EQ(desk_->Pass(), 0);
  EXPECT_EQ(Delivery("job", "j-gone").state(), "failed");
  EXPECT_NE(Delivery("job", "j-gone").last_error().find("deleted"), std::string::npos);

  Job("j-2", v1::FAILED, true);
  ASSERT_TRUE(desk_->Register("job", "j-2", receiver_.Url("/h"), "0123456789abcdef").ok());
  Build({"example.org"});  // the operator took the host off the list since submit
  EXPECT_EQ(desk_->Pass(), 0);
  v1::WebhookDelivery d = Delivery("job", "j-2");
  EXPECT_EQ(d.state(), "failed");
  EXPECT_NE(d.last_error().find("not allowed"), std::string::npos) << d.last_error();
  EXPECT_TRUE(receiver_.Hits().empty());
}

TEST_F(WebhookDeskTest, AWorkflowsCallbackNamesTheWorkflowOnceItEnds) {
  ASSERT_TRUE(receiver_.Serve());
  v1::Workflow& wf = workflows_["w-1"];
  wf.set_id("w-1");
  wf.set_state("running");
  ASSERT_TRUE(desk_->Register("workflow", "w-1", receiver_.Url("/wf"), "0123456789abcdef").ok());
  ASSERT_TRUE(desk_->Register("workflow", "w-1", receiver_.Url("/other"), "0123456789abcdef").ok());  // kept once
  EXPECT_EQ(desk_->Pass(), 0);
  wf.set_state("cancelled");
  clock_.AdvanceMs(WebhookDesk::kCheckMs);
  EXPECT_EQ(desk_->Pass(), 1);
  EXPECT_EQ(Delivery("workflow", "w-1").state(), "delivered");
  const auto hits = receiver_.Hits();
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_EQ(hits[0].path, "/wf");
  EXPECT_EQ(hits[0].event, "workflow.cancelled");
  EXPECT_NE(hits[0].body.find("\"workflow\":{\"id\":\"w-1\""), std::string::npos) << hits[0].body;
}

}  // namespace
}  // namespace idlegrid::coordinator
