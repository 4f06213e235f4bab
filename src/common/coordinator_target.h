#pragma once
// An agent (or client) given several coordinators (docs/operations.md, "Failover"):
// `--coordinator a:7443,b:7443` becomes one gRPC channel target listing
// every address, so gRPC's pick_first policy connects to the first that
// answers and moves to the next when it dies; the agent's own reconnect loop
// and report retries then reach a live coordinator. Pure, but for the name
// lookup it is handed.
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace idlegrid {

// "a:7443, b:7443" -> {"a:7443", "b:7443"}; empty entries dropped.
std::vector<std::string> SplitCoordinators(const std::string& list);

// A host's addresses (IPv4 dotted or IPv6 without brackets), or why it has none.
using ResolveHost = std::function<Result<std::vector<std::string>>(const std::string& host)>;

// One coordinator: its address as given, unchecked (gRPC's DNS resolver
// follows the name, and every address it has). Several: "ipv4:A:P,B:P" or
// "ipv6:[A]:P,..." with every address of every name, in the order given,
// looked up once now: IPv4 when every name has an IPv4 address, else IPv6
// when every name has one. InvalidArgument for an entry that is not
// HOST:PORT, no entry at all, or names with no family in common.
Result<std::string> ChannelTarget(const std::string& coordinators, const ResolveHost& resolve);

// getaddrinfo's TCP addresses of `host`.
Result<std::vector<std::string>> ResolveWithSystem(const std::string& host);

}  // namespace idlegrid
