#include "common/coordinator_target.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <set>

namespace idlegrid {

namespace {

std::string Trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

struct HostPort {
  std::string host;  // without brackets
  std::string port;
};

Result<HostPort> Split(const std::string& entry) {
  auto bad = [&] {
    return Status::InvalidArgument("coordinator \"" + entry + "\": give HOST:PORT (an IPv6 address as [ADDR]:PORT)");
  };
  HostPort out;
  if (!entry.empty() && entry.front() == '[') {
    auto close = entry.find(']');
    if (close == std::string::npos || close + 1 >= entry.size() || entry[close + 1] != ':') return bad();
    out.host = entry.substr(1, close - 1);
    out.port = entry.substr(close + 2);
  } else {
    auto colon = entry.rfind(':');
    if (colon == std::string::npos || entry.find(':') != colon) return bad();
    out.host = entry.substr(0, colon);
    out.port = entry.substr(colon + 1);
  }
  if (out.host.empty() || out.port.empty() || out.port.size() > 5 ||
      !std::all_of(out.port.begin(), out.port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return bad();
  }
  return out;
}

bool IsIpv6(const std::string& addr) { return addr.find(':') != std::string::npos; }

}  // namespace

std::vector<std::string> SplitCoordinators(const std::string& list) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= list.size()) {
    size_t comma = list.find(',', at);
    std::string one = Trimmed(list.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (!one.empty()) out.push_back(one);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

Result<std::string> ChannelTarget(const std::string& coordinators, const ResolveHost& resolve) {
  const std::vector<std::string> entries = SplitCoordinators(coordinators);
  if (entries.empty()) return Status::InvalidArgument("no coordinator address given (--coordinator HOST:PORT)");
  if (entries.size() == 1) return entries[0];  // any target gRPC takes, as before
  std::vector<HostPort> parsed;
  for (const std::string& e : entries) {
    IG_ASSIGN_OR_RETURN(HostPort hp, Split(e));
    parsed.push_back(hp);
  }
  std::vector<std::string> addresses;
  std::set<std::string> seen;
  bool v4 = false, v6 = false;
  for (const HostPort& hp : parsed) {
    IG_ASSIGN_OR_RETURN(std::vector<std::string> found, resolve(hp.host));
    if (found.empty()) return Status::InvalidArgument("coordinator " + hp.host + " has no address");
    for (const std::string& a : found) {
      const std::string one = IsIpv6(a) ? "[" + a + "]:" + hp.port : a + ":" + hp.port;
      if (!seen.insert(one).second) continue;
      (IsIpv6(a) ? v6 : v4) = true;
      addresses.push_back(one);
    }
  }
  if (v4 && v6) {
    return Status::InvalidArgument("coordinators " + coordinators +
                                   " mix IPv4 and IPv6 addresses: give addresses of one family");
  }
  std::string target = v6 ? "ipv6:" : "ipv4:";
  for (size_t i = 0; i < addresses.size(); ++i) target += (i ? "," : "") + addresses[i];
  return target;
}

Result<std::vector<std::string>> ResolveWithSystem(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0) return Status::Unavailable("cannot resolve coordinator " + host + ": " + gai_strerror(rc));
  std::vector<std::string> out;
  for (addrinfo* p = res; p; p = p->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {};
    const void* src = p->ai_family == AF_INET6
                          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(p->ai_addr)->sin6_addr)
                          : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(p->ai_addr)->sin_addr);
    if (::inet_ntop(p->ai_family, src, buf, sizeof buf)) out.emplace_back(buf);
  }
  ::freeaddrinfo(res);
  return out;
}

}  // namespace idlegrid
