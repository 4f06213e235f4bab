#pragma once
// `idlegrid agent status` (docs/provider.md): the node as this host knows it
// (its id, the agent's service) beside the coordinator's view of it (state,
// current work, why it is not schedulable) and the provider's earnings.
#include <string>

#include "cli/commands.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::cli {

struct AgentStatusView {
  std::string node_id;
  std::string coordinator;         // host:port from the agent's config
  std::string service;             // UserUnitState()
  std::string image_cache;         // FormatImageCache of the agent's data dir; "" to leave the line out
  const v1::Node* node = nullptr;  // the coordinator's record; null when not read
  std::string node_error;          // why it was not read
  const v1::LedgerBalanceResponse* balance = nullptr;  // the provider's; null when not read
  std::string balance_error;
  const v1::ProviderEarningsResponse* earnings = nullptr;  // null when not read
  int64_t now_ms = 0;
};

// Pure: the physical-work handshake in one line, for `nodes` and `agent status`:
// "jitter 12 ms, 1% late, 0% lost, round trip 3 ms, 0 stalls, 0 throttle reports; owner pauses 2 (65 s, not held
// against it)".
std::string FormatHandshake(const v1::ReliabilityComponents& c);

// Pure: the owner's pause in one line, "owner-gpu since 12s ago: process
// steam (pid 4242) uses GPU 0; 1 attempt(s) frozen", or "not paused (2
// pauses, 95 s in all)"; "" for a node that was never paused.
std::string FormatNodePause(const v1::NodePause& pause, int64_t now_ms);

// Pure: what each of the owner's price asks (policy.yaml asks:) prices on
// this node, by market::MatchingAsk over the advertised GPUs, in one line:
//   "RTX 4090" 0.35/h matches GPU 0 (NVIDIA GeForce RTX 4090); cpu-core
//   0.01/core-h; warning: "A6000" matches no GPU on this node
// An ask that applies to a GPU only another, more specific ask prices says
// so ("A100" 1.00/h: GPU 0 priced by "A100 80GB"). "" without asks.
std::string FormatAsks(const v1::Advertisement& ad);

// Pure: the status as aligned "label  value" lines.
std::string FormatAgentStatus(const AgentStatusView& view);

// Reads the node (ListNodes, with the client config's provider token) and the
// provider's ledger balance, then prints FormatAgentStatus (the Node as JSON
// with --json). 0 when the node was read, else 1 (what is known locally is
// printed all the same).
int AgentStatus(const CommonFlags& f, const std::string& node_id, const std::string& coordinator,
                const std::string& service, const std::string& image_cache = "");

// Pure: the agent's layered image cache in one line, "3 image(s), 12 blob(s),
// 1.2 GiB of a 20 GiB budget (policy.yaml imageCache)".
std::string FormatImageCache(int images, int blobs, uint64_t bytes, uint64_t budget_bytes);

}  // namespace idlegrid::cli
