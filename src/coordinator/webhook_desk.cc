// Webhook deliveries (webhook_desk.h).
#include "coordinator/webhook_desk.h"

#include <google/protobuf/util/json_util.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "common/random.h"
#include "jobs/task_state.h"
#include "webhook/callback.h"

namespace idlegrid::coordinator {
namespace {

constexpr size_t kBatch = 50;
constexpr size_t kMinSecretChars = 16;

Result<std::string> Json(const google::protobuf::Message& m) {
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(m, &out).ok()) return Status::Internal("cannot encode callback");
  return out;
}

std::string Body(const std::string& event, const std::string& delivery_id, const std::string& subject,
                 const std::string& json) {
  return "{\"event\":\"" + event + "\",\"deliveryId\":\"" + delivery_id + "\",\"" + subject + "\":" + json + "}";
}

}  // namespace

Status WebhookDesk::Prepare(const std::string& url, std::string* secret) const {
  IG_ASSIGN_OR_RETURN(webhook::CallbackUrl parsed, webhook::ParseCallbackUrl(url));
  IG_RETURN_IF_ERROR(webhook::CheckAllowed(parsed, allow_));
  if (secret->empty()) {
    *secret = RandomHex(32);
  } else if (secret->size() < kMinSecretChars) {
    return Status::InvalidArgument("callback secret: at least " + std::to_string(kMinSecretChars) +
                                   " characters, or none to have the coordinator draw one");
  }
  return Status::Ok();
}

Status WebhookDesk::Register(const std::string& subject, const std::string& id, const std::string& url,
                             const std::string& secret) {
  store::WebhookRow row;
  v1::WebhookDelivery& d = row.delivery;
  d.set_id("wh-" + id);
  d.set_subject(subject);
  d.set_subject_id(id);
  d.set_url(url);
  d.set_state("waiting");
  d.set_created_at_ms(clock_->NowMs());
  d.set_next_attempt_ms(clock_->NowMs());
  row.secret = secret;
  return store_->AddWebhook(row).WithContext("registering the callback of " + subject + " " + id);
}

Result<v1::ListWebhookDeliveriesResponse> WebhookDesk::List(const std::string& subject, const std::string& id) {
  IG_ASSIGN_OR_RETURN(auto deliveries, store_->WebhooksOf(subject, id));
  v1::ListWebhookDeliveriesResponse out;
  for (auto& d : deliveries) *out.add_deliveries() = std::move(d);
  return out;
}

Result<std::pair<std::string, std::string>> WebhookDesk::Ended(const v1::WebhookDelivery& d) {
  if (d.subject() == "workflow") {
    IG_ASSIGN_OR_RETURN(v1::Workflow wf, hooks_.workflow(d.subject_id()));
    if (wf.state() == "running") return std::pair<std::string, std::string>{};
    wf.mutable_spec()->clear_callback_secret();
    IG_ASSIGN_OR_RETURN(std::string json, Json(wf));
    const std::string event = webhook::EventName("workflow", wf.state());
    return std::pair{event, Body(event, d.id(), "workflow", json)};
  }
  IG_ASSIGN_OR_RETURN(v1::Job job, hooks_.job(d.subject_id()));
  if (!job.settled()) return std::pair<std::string, std::string>{};
  // The receiver knows the secret; the items may be thousands: neither is sent.
  job.mutable_spec()->clear_callback_secret();
  job.mutable_spec()->clear_items();
  IG_ASSIGN_OR_RETURN(std::string json, Json(job));
  const std::string event = webhook::EventName("job", jobs::StateName(job.state()));
  return std::pair{event, Body(event, d.id(), "job", json)};
}

// A waiting callback: pending once its subject ended, checked again later otherwise.
void WebhookDesk::Promote(store::WebhookRow row, int64_t now_ms) {
  const int64_t read_next = row.delivery.next_attempt_ms();
  auto ended = Ended(row.delivery);
  v1::WebhookDelivery& d = row.delivery;
  if (!ended.ok() && ended.status().code() == Code::kNotFound) {
    d.set_state("failed");
    d.set_last_error(d.subject() + " deleted before it ended");
  } else if (!ended.ok()) {
    spdlog::warn("webhook {}: {} (checked again)", d.id(), ended.status().ToString());
    d.set_next_attempt_ms(now_ms + kCheckMs);
  } else if (ended->first.empty()) {
    d.set_next_attempt_ms(now_ms + kCheckMs);
  } else {
    d.set_state("pending");
    d.set_event(ended->first);
    d.set_next_attempt_ms(now_ms);
    row.body = std::move(ended->second);
  }
  auto written = store_->UpdateWebhook(row, "waiting", read_next);
  if (!written.ok()) spdlog::warn("webhook {}: {}", d.id(), written.status().ToString());
}

// One try of a pending callback, claimed first; true when a POST was made.
bool WebhookDesk::Deliver(store::WebhookRow row, int64_t now_ms) {
  v1::WebhookDelivery& d = row.delivery;
  const int64_t read_next = d.next_attempt_ms();
  d.set_next_attempt_ms(now_ms + kClaimMs);
  auto claimed = store_->UpdateWebhook(row, "pending", read_next);
  if (!claimed.ok() || !*claimed) return false;  // another coordinator has it (or the store is down: next pass)
  const int64_t claim = d.next_attempt_ms();
  bool posted = false;
  auto url = webhook::ParseCallbackUrl(d.url());
  Status allowed = url.ok() ? webhook::CheckAllowed(*url, allow_) : url.status();
  if (!allowed.ok()) {
    // The operator took the host off the list since submit: never sent.
    d.set_state("failed");
    d.set_next_attempt_ms(0);
    d.set_last_error(allowed.message());
  } else {
    const int64_t at = clock_->NowMs();
    webhook::PostResult result = poster_->Post(*url,
                                               {{"User-Agent", "idlegrid-webhook/1"},
                                                {"X-Idlegrid-Event", d.event()},
                                                {"X-Idlegrid-Delivery", d.id()},
                                                {"X-Idlegrid-Signature", webhook::Sign(row.secret, at, row.body)}},
                                               row.body);
    posted = true;
    webhook::RecordTry(&d, result.http_status, result.error, clock_->NowMs());
  }
  spdlog::info("webhook {} ({} to {}): {} after {} tr{}{}", d.id(), d.event(), d.url(), d.state(), d.attempts(),
               d.attempts() == 1 ? "y" : "ies", d.last_error().empty() ? "" : ": " + d.last_error());
  auto written = store_->UpdateWebhook(row, "pending", claim);
  if (!written.ok()) spdlog::warn("webhook {}: {} (tried again after the claim)", d.id(), written.status().ToString());
  return posted;
}

int WebhookDesk::Pass() {
  const int64_t now = clock_->NowMs();
  auto waiting = store_->DueWebhooks("waiting", now, kBatch);
  if (!waiting.ok()) spdlog::warn("webhooks: {}", waiting.status().ToString());
  for (auto& row : waiting.ok() ? *waiting : std::vector<store::WebhookRow>{}) Promote(std::move(row), now);
  auto due = store_->DueWebhooks("pending", now, kBatch);
  if (!due.ok()) spdlog::warn("webhooks: {}", due.status().ToString());
  int posts = 0;
  for (auto& row : due.ok() ? *due : std::vector<store::WebhookRow>{}) posts += Deliver(std::move(row), now) ? 1 : 0;
  return posts;
}

void WebhookDesk::Start() {
  MutexLock lock(&mu_);
  stopping_ = false;
  thread_ = std::thread([this] {
    while (true) {
      {
        MutexLock lock(&mu_);
        if (wake_.WaitFor(&mu_, std::chrono::milliseconds(kPassMs), [this]() IG_REQUIRES(mu_) { return stopping_; }))
          return;
      }
      Pass();
    }
  });
}

void WebhookDesk::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

}  // namespace idlegrid::coordinator
