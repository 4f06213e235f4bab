#pragma once
// Webhooks (docs/webhooks.md): the rules, pure. Which callback URLs a
// coordinator accepts (its operator's allow list), how a POST is signed, and
// what a delivery becomes after each try (retried with exponential backoff,
// given up after kMaxTries). Sending is webhook/poster.h's; when, the
// coordinator's (coordinator/webhook_desk.h).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::webhook {

struct CallbackUrl {
  bool https = false;
  std::string host;  // lowercase; an IPv6 literal without its brackets
  int port = 0;      // the scheme's default when the URL names none
  std::string path;  // with its query; "/" when empty
};

// http:// or https:// URLs only, with a host, no user info and no fragment;
// InvalidArgument saying what is wrong.
Result<CallbackUrl> ParseCallbackUrl(std::string_view url);

// Whether the operator's allow list admits `url`: an entry "HOST" admits any
// port of that host, "HOST:PORT" that port only (hosts compared without
// case). An empty list admits nothing. PermissionDenied naming the host and
// how the operator allows it.
Status CheckAllowed(const CallbackUrl& url, const std::vector<std::string>& allow);

// The signature header's value for `body` sent at `at_ms`:
// "t=<at_ms>,v1=<hex HMAC-SHA256(secret, "<at_ms>." + body)>". The time is
// signed too, so a receiver can refuse a replayed old delivery.
std::string Sign(std::string_view secret, int64_t at_ms, std::string_view body);
// Whether `header` is Sign's value for `body` under `secret` (constant time).
bool Verify(std::string_view secret, std::string_view header, std::string_view body);

// Tries a delivery gets before it is given up as "failed".
inline constexpr uint32_t kMaxTries = 10;
// The wait after the `tries`-th failed try: 1 s, 2 s, 4 s, ... at most 5 min.
int64_t RetryDelayMs(uint32_t tries);

// Records one try of `d` at `now_ms`: a 2xx `http_status` delivers it;
// anything else (another status, or 0 with `error` when there was no answer)
// schedules the next try, or fails it for good after kMaxTries.
void RecordTry(v1::WebhookDelivery* d, int http_status, const std::string& error, int64_t now_ms);

// "job.succeeded", "workflow.failed": the subject and its final state, lowercase.
std::string EventName(std::string_view subject, std::string_view state);

}  // namespace idlegrid::webhook
