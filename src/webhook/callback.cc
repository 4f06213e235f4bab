// Webhook rules (callback.h). Pure.
#include "webhook/callback.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace idlegrid::webhook {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Status Bad(std::string_view url, const std::string& why) {
  return Status::InvalidArgument("callback URL '" + std::string(url.substr(0, 200)) + "': " + why);
}

std::string Hex(const unsigned char* data, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[data[i] >> 4]);
    out.push_back(kDigits[data[i] & 15]);
  }
  return out;
}

// The port of an authority's ":PORT" part (`text` after the colon).
Result<int> PortOf(std::string_view url, std::string_view text) {
  int port = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || port < 1 || port > 65535) {
    return Bad(url, "port '" + std::string(text) + "' is not a number from 1 to 65535");
  }
  return port;
}

}  // namespace

Result<CallbackUrl> ParseCallbackUrl(std::string_view url) {
  CallbackUrl out;
  std::string_view rest;
  if (url.rfind("https://", 0) == 0) {
    out.https = true;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    return Bad(url, "must start with https:// or http://");
  }
  if (url.size() > 2048) return Bad(url, "longer than 2048 characters");
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return Bad(url, "has a space or control character");
  }
  if (url.find('#') != std::string_view::npos) return Bad(url, "has a fragment (#)");
  const size_t slash = rest.find_first_of("/?");
  const std::string_view authority = rest.substr(0, slash);
  out.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (out.path[0] == '?') out.path = "/" + out.path;
  if (authority.find('@') != std::string_view::npos) return Bad(url, "has user info (user@host)");
  out.port = out.https ? 443 : 80;
  std::string_view after_host;
  if (!authority.empty() && authority[0] == '[') {  // [IPv6]:port
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return Bad(url, "has an unclosed [");
    out.host = Lower(authority.substr(1, close - 1));
    after_host = authority.substr(close + 1);
  } else {
    const size_t colon = authority.find(':');
    out.host = Lower(authority.substr(0, colon));
    if (colon != std::string_view::npos) after_host = authority.substr(colon);
  }
  if (out.host.empty()) return Bad(url, "has no host");
  if (!after_host.empty()) {
    if (after_host[0] != ':') return Bad(url, "has text after the host");
    IG_ASSIGN_OR_RETURN(out.port, PortOf(url, after_host.substr(1)));
  }
  return out;
}

Status CheckAllowed(const CallbackUrl& url, const std::vector<std::string>& allow) {
  for (const std::string& entry : allow) {
    const std::string e = Lower(entry);
    if (e == url.host || e == url.host + ":" + std::to_string(url.port) ||
        e == "[" + url.host + "]:" + std::to_string(url.port)) {
      return Status::Ok();
    }
  }
  return Status::PermissionDenied("callback host " + url.host + ":" + std::to_string(url.port) +
                                  " is not allowed by this coordinator; its operator allows hosts with "
                                  "--webhook-allow HOST[:PORT]" +
                                  (allow.empty() ? " (none is allowed now)" : ""));
}

std::string Sign(std::string_view secret, int64_t at_ms, std::string_view body) {
  const std::string message = std::to_string(at_ms) + "." + std::string(body);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
  return "t=" + std::to_string(at_ms) + ",v1=" + Hex(mac, len);
}

bool Verify(std::string_view secret, std::string_view header, std::string_view body) {
  if (header.rfind("t=", 0) != 0) return false;
  const size_t comma = header.find(",v1=");
  if (comma == std::string_view::npos) return false;
  int64_t at = 0;
  auto [end, ec] = std::from_chars(header.data() + 2, header.data() + comma, at);
  if (ec != std::errc() || end != header.data() + comma) return false;
  const std::string expected = Sign(secret, at, body);
  return expected.size() == header.size() && CRYPTO_memcmp(expected.data(), header.data(), header.size()) == 0;
}

int64_t RetryDelayMs(uint32_t tries) {
  constexpr int64_t kMaxDelayMs = 5 * 60 * 1000;
  if (tries == 0) return 0;
  const uint32_t doublings = std::min<uint32_t>(tries - 1, 20);
  return std::min<int64_t>(int64_t{1000} << doublings, kMaxDelayMs);
}

void RecordTry(v1::WebhookDelivery* d, int http_status, const std::string& error, int64_t now_ms) {
  d->set_attempts(d->attempts() + 1);
  d->set_last_http_status(http_status);
  if (http_status >= 200 && http_status < 300) {
    d->set_state("delivered");
    d->set_delivered_at_ms(now_ms);
    d->set_next_attempt_ms(0);
    d->clear_last_error();
    return;
  }
  d->set_last_error(http_status != 0 ? "HTTP " + std::to_string(http_status) : error);
  if (d->attempts() >= kMaxTries) {
    d->set_state("failed");
    d->set_next_attempt_ms(0);
    return;
  }
  d->set_state("pending");
  d->set_next_attempt_ms(now_ms + RetryDelayMs(d->attempts()));
}

std::string EventName(std::string_view subject, std::string_view state) { return Lower(subject) + "." + Lower(state); }

}  // namespace idlegrid::webhook
