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
  // Each name's addresses by family. A dual-stack name (localhost, most
  // hosts with A and AAAA records) has both; the list takes the family every
  // name has, IPv4 first.
  std::vector<std::vector<std::string>> v4s, v6s;
  for (const HostPort& hp : parsed) {
    IG_ASSIGN_OR_RETURN(std::vector<std::string> found, resolve(hp.host));
    if (found.empty()) return Status::InvalidArgument("coordinator " + hp.host + " has no address");
    std::vector<std::string> v4, v6;
    for (const std::string& a : found)
      (IsIpv6(a) ? v6 : v4).push_back(IsIpv6(a) ? "[" + a + "]:" + hp.port : a + ":" + hp.port);
    v4s.push_back(v4);
    v6s.push_back(v6);
  }
  auto all_have = [](const std::vector<std::vector<std::string>>& lists) {
    return std::all_of(lists.begin(), lists.end(), [](const auto& l) { return !l.empty(); });
  };
  const bool v6 = !all_have(v4s);
  if (v6 && !all_have(v6s)) {
    return Status::InvalidArgument("coordinators " + coordinators +
                                   " have no address family in common (some only IPv4, some only IPv6): give "
                                   "addresses of one family");
  }
  std::vector<std::string> addresses;
  std::set<std::string> seen;
  for (const auto& list : v6 ? v6s : v4s) {
    for (const std::string& one : list) {
      if (seen.insert(one).second) addresses.push_back(one);
    }
  }
  std::string target = v6 ? "ipv6:" : "ipv4:";
  for (size_t i = 0; i < addresses.size(); ++i) target += (i ? "," : "") + addresses[i];
  return target;
}

Result<std::vector<std::string>> ResolveWithSystem(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_ADDRCONFIG;  // no IPv6 addresses on a host without IPv6
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
