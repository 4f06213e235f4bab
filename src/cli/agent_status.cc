#include "cli/agent_status.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "cli/support.h"
#include "common/clock.h"
#include "common/grpc_status.h"
#include "common/units.h"
#include "ledger/accounts.h"
#include "market/market.h"

namespace idlegrid::cli {

namespace {

std::string Ago(int64_t then_ms, int64_t now_ms) {
  if (then_ms <= 0) return "never";
  const int64_t s = (now_ms - then_ms) / 1000;
  if (s < 120) return std::to_string(s < 0 ? 0 : s) + "s ago";
  if (s < 7200) return std::to_string(s / 60) + "m ago";
  return std::to_string(s / 3600) + "h ago";
}

}  // namespace

std::string FormatNodePause(const v1::NodePause& pause, int64_t now_ms) {
  if (pause.pauses() == 0 && !pause.paused()) return "";
  const std::string total =
      std::to_string(pause.pauses()) + " pause(s), " + std::to_string(pause.paused_ms_total() / 1000) + " s in all";
  if (!pause.paused()) return "not paused (" + total + ")";
  std::string out = pause.cause() + " since " + Ago(pause.since_ms(), now_ms) + ": " + pause.reason();
  if (pause.frozen_attempts_size() > 0)
    out += "; " + std::to_string(pause.frozen_attempts_size()) + " attempt(s) frozen";
  if (pause.until_ms() > 0) {
    const int64_t left_s = std::max<int64_t>(0, (pause.until_ms() - now_ms + 999) / 1000);
    out += "; ends by itself in " + (left_s < 120 ? std::to_string(left_s) + "s" : std::to_string(left_s / 60) + "m");
  } else if (pause.cause() == "owner-command") {
    out += "; until `idlegrid agent resume`";
  }
  return out + " (" + total + ")";
}

std::string FormatAsks(const v1::Advertisement& ad) {
  market::Asks asks;
  for (const v1::PriceAsk& a : ad.asks()) asks.emplace(a.device_class(), a.per_hour());
  const auto& gpus = ad.inventory().gpus().devices();
  std::vector<std::string> names;
  for (const v1::GpuDevice& d : gpus) names.push_back(d.name());
  const market::Asks unmatched = market::UnmatchedAsks(asks, names);
  std::string out, warnings;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : "; ") + part; };
  for (const auto& [device_class, price] : asks) {
    if (device_class == market::kCpuCoreClass) {
      add(device_class + " " + market::FormatCredits(price) + "/core-h");
      continue;
    }
    if (unmatched.count(device_class) > 0) {
      warnings += "; warning: \"" + device_class + "\" matches no GPU on this node";
      continue;
    }
    std::string priced, shadowed;
    for (const v1::GpuDevice& d : gpus) {
      const market::Asks::value_type* applied = market::MatchingAsk(asks, d.name());
      const std::string gpu = "GPU " + std::to_string(d.index());
      if (applied != nullptr && applied->first == device_class) {
        priced += (priced.empty() ? "" : ", ") + gpu + " (" + d.name() + ")";
      } else if (applied != nullptr && market::UnmatchedAsks({{device_class, price}}, {d.name()}).empty()) {
        shadowed += (shadowed.empty() ? "" : ", ") + gpu + " priced by \"" + applied->first + "\"";
      }
    }
    std::string part = "\"" + device_class + "\" " + market::FormatCredits(price) + "/h";
    if (!priced.empty()) part += " matches " + priced;
    if (!shadowed.empty()) part += (priced.empty() ? ": " : ", not ") + shadowed;
    add(part);
  }
  if (out.empty() && !warnings.empty()) return warnings.substr(2);
  return out + warnings;
}

std::string FormatAgentStatus(const AgentStatusView& v) {
  std::ostringstream out;
  auto line = [&](const char* label, const std::string& value) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%-12s ", label);
    out << buf << value << "\n";
  };
  line("node", v.node_id + (v.node != nullptr && !v.node->name().empty() ? " (" + v.node->name() + ")" : ""));
  line("coordinator", v.coordinator);
  line("service", v.service);
  if (!v.image_cache.empty()) line("images", v.image_cache);
  if (v.node == nullptr) {
    line("state", "unknown: " + v.node_error);
  } else {
    const v1::Node& n = *v.node;
    std::string state = n.state() + " (last heartbeat " + Ago(n.last_heartbeat_ms(), v.now_ms) + ")";
    // Why it takes no work: drained, unmeasured, offline, the owner's policy.
    state += n.schedulable() ? ", schedulable" : ", not schedulable: " + n.unschedulable_reason();
    line("state", state);
    if (std::string pause = FormatNodePause(n.pause(), v.now_ms); !pause.empty()) line("paused", pause);
    std::string work = std::to_string(n.running_attempts()) + " attempt(s)";
    const auto& ids = n.advertisement().running_attempts();
    for (int i = 0; i < ids.size(); ++i) work += (i == 0 ? ": " : ", ") + ids[i];
    line("running", work);
    char cap[160];
    std::snprintf(cap, sizeof cap, "%.1f of %u cores, %s of %s memory allocated", n.cpu_allocated(),
                  n.info().cpu_cores(), FormatGiB(n.memory_allocated()).c_str(),
                  FormatGiB(n.info().memory_bytes()).c_str());
    line("capacity", cap);
    if (std::string asks = FormatAsks(n.advertisement()); !asks.empty()) line("asks", asks);
    char rel[64];
    std::snprintf(rel, sizeof rel, "%.2f", n.reliability());
    line("reliability", std::string(rel) + (n.reliability_detail().empty() ? "" : " (" + n.reliability_detail() + ")"));
    line("handshake", FormatHandshake(n.reliability_components()));
    if (!n.provider().empty()) line("provider", n.provider());
  }
  if (v.balance != nullptr) {
    const auto& b = *v.balance;
    line("earnings", ledger::FormatCredits(b.available_micros()) + " credits available, " +
                         ledger::FormatCredits(b.pending_micros()) + " pending release, " +
                         ledger::FormatCredits(b.stake_micros()) + " staked (account " + b.account() +
                         ", all its nodes)");
  } else {
    line("earnings", "not shown: " + v.balance_error);
  }
  if (v.earnings != nullptr) {
    for (const auto& e : v.earnings->nodes()) {
      if (e.node_id() != v.node_id) continue;
      char buf[160];
      std::snprintf(buf, sizeof buf, "%u accepted attempt(s) worth %.4f credits at their placement prices",
                    e.attempts(), e.metered_credits());
      line("this node", buf);
      std::snprintf(buf, sizeof buf, "%.4f credits/hour if fully used; ", e.estimate_per_hour());
      line("estimate", buf + e.estimate_basis());
    }
  }
  return out.str();
}

std::string FormatHandshake(const v1::ReliabilityComponents& c) {
  char buf[240];
  std::snprintf(buf, sizeof buf,
                "heartbeat jitter %.0f ms, %.0f%% late, %.0f%% lost; round trip %.0f ms; %u stall(s); %u throttle "
                "report(s)",
                c.heartbeat_jitter_ms(), c.heartbeat_lateness() * 100, c.heartbeat_loss() * 100, c.rtt_ms(), c.stalls(),
                c.throttle_reports());
  std::string out = buf;
  if (c.owner_pauses() > 0) {
    std::snprintf(buf, sizeof buf, "; owner pauses %u (%lld s, not held against it)", c.owner_pauses(),
                  static_cast<long long>(c.owner_paused_ms() / 1000));
    out += buf;
  }
  return out;
}

std::string FormatImageCache(int images, int blobs, uint64_t bytes, uint64_t budget_bytes) {
  return std::to_string(images) + " image(s), " + std::to_string(blobs) + " blob(s), " + FormatGiB(bytes) + " of a " +
         FormatGiB(budget_bytes) + " budget (policy.yaml imageCache)";
}

int AgentStatus(const CommonFlags& f, const std::string& node_id, const std::string& coordinator,
                const std::string& service, const std::string& image_cache) {
  AgentStatusView view;
  view.image_cache = image_cache;
  view.node_id = node_id;
  view.coordinator = coordinator;
  view.service = service;
  view.now_ms = SystemClock::Get()->NowMs();
  v1::ListNodesResponse nodes;
  v1::LedgerBalanceResponse balance;
  v1::ProviderEarningsResponse earnings;
  auto client = Open(f);
  if (!client.ok()) {
    view.node_error = client.status().message() +
                      "; the coordinator shows a node to its provider: give a provider API token "
                      "(agent join --api-token, or --token)";
    view.balance_error = "no provider API token";
  } else {
    auto ctx = (*client)->Context();
    Status st = FromGrpc((*client)->stub()->ListNodes(ctx.get(), v1::ListNodesRequest{}, &nodes));
    if (!st.ok()) view.node_error = st.message();
    for (const v1::Node& n : nodes.nodes()) {
      if (n.id() == node_id) view.node = &n;
    }
    if (st.ok() && view.node == nullptr) {
      view.node_error = "the coordinator shows this token no node " + node_id +
                        " (a token of the provider it joined under can see it)";
    }
    auto lctx = (*client)->Context();
    st = FromGrpc((*client)->stub()->LedgerBalance(lctx.get(), v1::LedgerAccountRequest{}, &balance));
    if (st.ok())
      view.balance = &balance;
    else
      view.balance_error = st.message();
    auto ectx = (*client)->Context();
    if (FromGrpc((*client)->stub()->ProviderEarnings(ectx.get(), v1::ProviderEarningsRequest{}, &earnings)).ok()) {
      view.earnings = &earnings;
    }
  }
  if (f.json && view.node != nullptr)
    PrintJson(*view.node);
  else
    std::fputs(FormatAgentStatus(view).c_str(), stdout);
  return view.node != nullptr ? 0 : 1;
}

}  // namespace idlegrid::cli
