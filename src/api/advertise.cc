#include "api/advertise.h"

#include <algorithm>

namespace idlegrid::api {

namespace {

bool IsWildcard(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]" || host == "*";
}

bool AllDigits(const std::string& s) {
  return !s.empty() && s.size() <= 5 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A host as it goes in a URL: IPv6 literals in brackets.
std::string UrlHost(const std::string& host) {
  if (host.find(':') != std::string::npos && host.front() != '[') return "[" + host + "]";
  return host;
}

struct HostPort {
  std::string host;
  int port = 0;  // 0: none given
};

Result<HostPort> ParseAdvertise(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("--advertise-address " + text + ": " + why +
                                   " (give HOST or HOST:PORT, an IPv6 address as [ADDR] or [ADDR]:PORT)");
  };
  if (text.find("://") != std::string::npos || text.find('/') != std::string::npos) return bad("not a URL");
  if (text.find_first_of(" \t\r\n") != std::string::npos) return bad("it has white space");
  HostPort out;
  std::string port;
  if (text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close == 1) return bad("an unclosed or empty '['");
    out.host = text.substr(0, close + 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') return bad("expected ':' after ']'");
      port = text.substr(close + 2);
      if (port.empty()) return bad("an empty port");
    }
  } else if (std::count(text.begin(), text.end(), ':') > 1) {
    out.host = "[" + text + "]";  // a bare IPv6 address: no port
  } else if (auto colon = text.find(':'); colon != std::string::npos) {
    out.host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (port.empty()) return bad("an empty port");
  } else {
    out.host = text;
  }
  if (out.host.empty()) return bad("no host");
  if (!port.empty()) {
    if (!AllDigits(port) || std::stoi(port) < 1 || std::stoi(port) > 65535) return bad("the port must be 1-65535");
    out.port = std::stoi(port);
  }
  return out;
}

}  // namespace

Result<Advertised> AdvertisedAddress(const AdvertiseInputs& in) {
  Advertised out;
  const std::string port = std::to_string(in.grpc_port);
  out.local_address = (IsWildcard(in.listen_host) ? "127.0.0.1" : UrlHost(in.listen_host)) + ":" + port;
  if (!in.advertise.empty()) {
    IG_ASSIGN_OR_RETURN(HostPort hp, ParseAdvertise(in.advertise));
    out.url = "https://" + UrlHost(hp.host) + ":" + (hp.port ? std::to_string(hp.port) : port);
    return out;
  }
  if (!IsWildcard(in.listen_host)) {
    out.url = "https://" + UrlHost(in.listen_host) + ":" + port;
    return out;
  }
  out.guessed = true;
  out.url = "https://" + UrlHost(in.hostname.empty() ? "localhost" : in.hostname) + ":" + port;
  return out;
}

std::string AgentJoinLine(const std::string& url, const std::string& join_token, const std::string& ca_hash) {
  return "idlegrid agent join " + url + " --token " + join_token + " --ca-hash " + ca_hash + "\n";
}

std::string LoginLine(const std::string& url, const std::string& ca_hash) {
  return "idlegrid login " + url + " --ca-hash " + ca_hash + " --token TOKEN\n";
}

}  // namespace idlegrid::api
