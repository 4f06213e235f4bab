#pragma once
// Sends one webhook POST (docs/webhooks.md). The only I/O of src/webhook:
// the rules are callback.h's, the schedule the coordinator's.
#include <string>
#include <utility>
#include <vector>

#include "webhook/callback.h"

namespace idlegrid::webhook {

struct PostResult {
  int http_status = 0;  // 0: no answer (refused, timed out, TLS failed)
  std::string error;    // why there was no answer
};

class Poster {
 public:
  virtual ~Poster() = default;
  virtual PostResult Post(const CallbackUrl& url, const std::vector<std::pair<std::string, std::string>>& headers,
                          const std::string& body) = 0;
};

// HTTP/1.1 with cpp-httplib: https verifies the receiver's certificate
// against the system's CAs (ca-certificates); connect and read time out
// after `timeout_seconds`, so a black hole delays one delivery, not all.
class HttpPoster : public Poster {
 public:
  explicit HttpPoster(int timeout_seconds = 10) : timeout_seconds_(timeout_seconds) {}
  PostResult Post(const CallbackUrl& url, const std::vector<std::pair<std::string, std::string>>& headers,
                  const std::string& body) override;

 private:
  const int timeout_seconds_;
};

}  // namespace idlegrid::webhook
