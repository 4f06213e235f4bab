// One webhook POST over cpp-httplib (poster.h).
#include "webhook/poster.h"

#include <httplib.h>

namespace idlegrid::webhook {

PostResult HttpPoster::Post(const CallbackUrl& url, const std::vector<std::pair<std::string, std::string>>& headers,
                            const std::string& body) {
  const std::string host = url.host.find(':') != std::string::npos ? "[" + url.host + "]" : url.host;
  std::unique_ptr<httplib::Client> client;
  if (url.https) {
    client = std::make_unique<httplib::Client>("https://" + host + ":" + std::to_string(url.port));
    client->set_ca_cert_path("/etc/ssl/certs/ca-certificates.crt");
    client->enable_server_certificate_verification(true);
  } else {
    client = std::make_unique<httplib::Client>(host, url.port);
  }
  client->set_connection_timeout(timeout_seconds_, 0);
  client->set_read_timeout(timeout_seconds_, 0);
  client->set_write_timeout(timeout_seconds_, 0);
  client->set_follow_location(false);  // a redirect could leave the allowed hosts
  httplib::Headers h;
  for (const auto& [name, value] : headers) h.emplace(name, value);
  auto res = client->Post(url.path, h, body, "application/json");
  if (!res)
    return {0, "no answer from " + host + ":" + std::to_string(url.port) + ": " + httplib::to_string(res.error())};
  return {res->status, ""};
}

}  // namespace idlegrid::webhook
