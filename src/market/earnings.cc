#include "market/earnings.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "jobs/lease.h"
#include "jobs/task_state.h"
#include "ledger/accounts.h"

namespace idlegrid::market {

namespace {

// Earnings are small sums: four places.
std::string Money(double credits) { return FormatCredits(credits, 4); }

// One class's part of the estimate: "2 x NVIDIA H200 at 0.35/h (recently 0.40)".
std::string Part(const std::string& cls, double units, double ask, const std::map<std::string, RecentPrice>& recent) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%g x %s at %s/h", units, cls.c_str(), Money(ask).c_str());
  std::string out = buf;
  if (auto it = recent.find(cls); it != recent.end() && it->second.placements > 0) {
    out += " (recently cleared at " + Money(it->second.median) + "/h)";
  }
  return out;
}

}  // namespace

v1::ProviderEarningsResponse SummarizeEarnings(const EarningsInputs& in) {
  v1::ProviderEarningsResponse out;
  out.set_provider(in.provider);
  std::map<std::string, v1::NodeEarnings*> by_node;
  for (const NodeOffering& n : in.nodes) {
    v1::NodeEarnings* e = out.add_nodes();
    e->set_node_id(n.node_id);
    e->set_name(n.name);
    std::map<std::string, double> units;
    for (const std::string& cls : n.gpu_classes) units[cls] += 1;
    double per_hour = 0;
    std::string basis;
    for (const auto& [cls, count] : units) {
      const double ask = AskFor(n.asks, cls);
      per_hour += count * ask;
      basis += (basis.empty() ? "" : " + ") + Part(cls, count, ask, in.recent);
    }
    if (n.cpu_cores > 0) {
      const double ask = AskFor(n.asks, kCpuCoreClass);
      per_hour += n.cpu_cores * ask;
      basis += (basis.empty() ? "" : " + ") + Part(kCpuCoreClass, n.cpu_cores, ask, in.recent);
    }
    if (per_hour == 0 && !basis.empty()) basis += "; it asks nothing, so it earns nothing";
    e->set_estimate_per_hour(per_hour);
    e->set_estimate_basis(basis.empty() ? "offers nothing" : "fully used, at its asks: " + basis);
    out.set_estimate_per_hour(out.estimate_per_hour() + per_hour);
    by_node[n.node_id] = e;
  }
  for (const v1::Attempt& a : in.attempts) {
    if (!jobs::IsAcceptedResult(a)) continue;  // wrong or awaiting its verdict: not earned
    v1::NodeEarnings*& e = by_node[a.node_id()];
    if (e == nullptr) {  // a node no longer listed (removed): its work still counts
      e = out.add_nodes();
      e->set_node_id(a.node_id());
      e->set_estimate_basis("not connected");
    }
    e->set_attempts(e->attempts() + 1);
    e->set_cpu_millis(e->cpu_millis() + a.metering().cpu_millis());
    e->set_gpu_millis(e->gpu_millis() + a.metering().gpu_millis());
    const double credits = jobs::AttemptCost(a, in.now_ms);
    e->set_metered_credits(e->metered_credits() + credits);
    out.set_metered_credits(out.metered_credits() + credits);
  }
  AddRecentPrices(in.recent, out.mutable_market());
  return out;
}

void AddRecentPrices(const std::map<std::string, RecentPrice>& recent,
                     google::protobuf::RepeatedPtrField<v1::MarketRow>* rows) {
  std::map<std::string, RecentPrice> left = recent;
  const auto fill = [](const RecentPrice& p, v1::MarketRow* row) {
    row->set_recent_price(p.latest);
    row->set_recent_median(p.median);
    row->set_recent_placements(p.placements);
  };
  for (v1::MarketRow& row : *rows) {
    auto it = left.find(row.device_class());
    if (it == left.end()) continue;
    fill(it->second, &row);
    left.erase(it);
  }
  for (const auto& [cls, p] : left) {
    v1::MarketRow* row = rows->Add();
    row->set_device_class(cls);
    fill(p, row);
  }
}

std::string DescribeRecentPrice(const v1::MarketRow& row) {
  return "median " + Money(row.recent_median()) + "/h, latest " + Money(row.recent_price()) + "/h over " +
         std::to_string(row.recent_placements()) + " placement(s)";
}

std::string FormatEarnings(const v1::ProviderEarningsResponse& e) {
  std::ostringstream out;
  out << "provider " << e.provider() << "\n";
  out << "metered work accepted: " << Money(e.metered_credits()) << " credits\n";
  if (e.ledger()) {
    out << "ledger: " << ledger::FormatCredits(e.available_micros()) << " available, "
        << ledger::FormatCredits(e.pending_micros()) << " pending release, " << ledger::FormatCredits(e.stake_micros())
        << " staked\n";
  } else {
    out << "ledger: not kept by this coordinator (the metered figure is what the work was worth)\n";
  }
  out << "estimate: " << Money(e.estimate_per_hour()) << " credits/hour with every node fully used\n";
  for (const auto& n : e.nodes()) {
    out << "  " << n.node_id() << (n.name().empty() ? "" : " (" + n.name() + ")") << ": " << n.attempts()
        << " accepted attempt(s), " << Money(n.metered_credits()) << " credits, cpu " << n.cpu_millis() / 1000
        << " s, gpu " << n.gpu_millis() / 1000 << " s; " << Money(n.estimate_per_hour()) << "/h " << n.estimate_basis()
        << "\n";
  }
  if (e.market_size() > 0) {
    out << "recent clearing prices (per unit-hour, last hour):\n";
    for (const auto& r : e.market()) {
      out << "  " << r.device_class() << ": " << DescribeRecentPrice(r) << "\n";
    }
  }
  return out.str();
}

}  // namespace idlegrid::market
