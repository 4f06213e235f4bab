#pragma once
// Webhooks (docs/webhooks.md): when a job or workflow that named a callback
// URL ends, the coordinator POSTs its final state there, signed with
// HMAC-SHA256 under the callback's secret, and retries with backoff until the
// receiver answers 2xx or kMaxTries are spent. Every callback is a row in the
// store from submit on ("waiting"), so a coordinator that restarts, or
// another one sharing the database, picks up where it left off; each try is
// claimed with a compare-and-set, so two coordinators do not both send one.
// The rules (allow list, signature, backoff) are src/webhook's.
//
// Owns its thread and the lock guarding only its stop flag; Pass runs on
// that thread (or a test's), never under another service's lock.
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "store/store.h"
#include "webhook/poster.h"

namespace idlegrid::coordinator {

class WebhookDesk {
 public:
  // How often the thread passes; waiting callbacks re-check their subject
  // at most every kCheckMs; a claimed try is another coordinator's for kClaimMs.
  static constexpr int64_t kPassMs = 250;
  static constexpr int64_t kCheckMs = 1000;
  static constexpr int64_t kClaimMs = 60'000;

  struct Hooks {
    // A job's state and summary, no tasks (NotFound once deleted).
    std::function<Result<v1::Job>(const std::string& job_id)> job;
    std::function<Result<v1::Workflow>(const std::string& workflow_id)> workflow;
  };

  // `allow`: the operator's --webhook-allow entries (webhook::CheckAllowed).
  WebhookDesk(store::WebhookStore* store, webhook::Poster* poster, const Clock* clock, std::vector<std::string> allow,
              Hooks hooks)
      : store_(store), poster_(poster), clock_(clock), allow_(std::move(allow)), hooks_(std::move(hooks)) {}
  ~WebhookDesk() { Stop(); }

  // At submit: whether this coordinator accepts `url` (InvalidArgument for a
  // malformed one, PermissionDenied for a host not allowed), and a secret,
  // drawn when `secret` is empty (it must be at least 16 characters otherwise).
  Status Prepare(const std::string& url, std::string* secret) const;
  // Records the callback of `subject` ("job" or "workflow") `id`, waiting
  // for it to end. Registering the same subject again keeps the first.
  Status Register(const std::string& subject, const std::string& id, const std::string& url, const std::string& secret);
  Result<v1::ListWebhookDeliveriesResponse> List(const std::string& subject, const std::string& id);

  // Waiting callbacks whose subject ended become pending, their body fixed
  // now; due pending ones are POSTed and each try recorded. Returns the
  // number of POSTs made. Errors are logged; the next pass tries again.
  int Pass();

  // Runs Pass every kPassMs on a thread of its own (a slow receiver delays
  // callbacks, never the dispatch loop) until Stop.
  void Start() IG_EXCLUDES(mu_);
  void Stop() IG_EXCLUDES(mu_);

 private:
  // The event and body of a waiting callback whose subject ended; "" event
  // while it runs. A deleted subject is NotFound.
  Result<std::pair<std::string, std::string>> Ended(const v1::WebhookDelivery& d);
  void Promote(store::WebhookRow row, int64_t now_ms);
  bool Deliver(store::WebhookRow row, int64_t now_ms);

  store::WebhookStore* const store_;
  webhook::Poster* const poster_;
  const Clock* const clock_;
  const std::vector<std::string> allow_;
  const Hooks hooks_;

  Mutex mu_;  // guards stopping_ only
  CondVar wake_;
  bool stopping_ IG_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace idlegrid::coordinator
