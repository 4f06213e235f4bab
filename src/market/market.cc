#include "market/market.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace idlegrid::market {
namespace {

double Sane(double v) { return std::isfinite(v) && v > 0 ? v : 0; }

}  // namespace

double AskFor(const Asks& asks, std::string_view device_class) {
  auto it = asks.find(device_class);
  return it == asks.end() ? 0 : Sane(it->second);
}

double HourlyPrice(std::span<const double> device_asks, double gpu_share, double cpu_cores, double cpu_ask) {
  double price = 0;
  for (double ask : device_asks) price += Sane(ask) * gpu_share;
  return price + Sane(cpu_cores) * Sane(cpu_ask);
}

std::string GpuBidShortfall(double ask, const Bid& bid) {
  if (bid.max_price_per_gpu_hour <= 0 || ask <= bid.max_price_per_gpu_hour + 1e-12) return "";
  return "over max price (ask " + FormatCredits(ask) + "/GPU-h, bid " + FormatCredits(bid.max_price_per_gpu_hour) + ")";
}

std::string CpuBidShortfall(double ask, const Bid& bid) {
  if (bid.max_price_per_cpu_core_hour <= 0 || ask <= bid.max_price_per_cpu_core_hour + 1e-12) return "";
  return "over max price (ask " + FormatCredits(ask) + "/core-h, bid " + FormatCredits(bid.max_price_per_cpu_core_hour) + ")";
}

std::string CostCapExceeded(double price_per_hour, const Bid& bid) {
  if (bid.max_cost <= 0 || price_per_hour <= 0) return "";
  if (bid.run_hours <= 0) return "maxCost needs a run timeout (price " + FormatCredits(price_per_hour) + "/h)";
  const double cost = price_per_hour * bid.run_hours;
  if (cost <= bid.max_cost + 1e-9) return "";
  char hours[32];
  std::snprintf(hours, sizeof hours, "%.1f", bid.run_hours);
  return "estimated cost " + FormatCredits(cost) + " (" + FormatCredits(price_per_hour) + "/h x " + hours +
         " h) exceeds maxCost " + FormatCredits(bid.max_cost);
}

std::vector<OrderBookRow> OrderBook(const std::vector<Offer>& offers) {
  std::map<std::string, std::vector<const Offer*>> by_class;
  for (const Offer& o : offers) {
    if (o.free_units > 0) by_class[o.device_class].push_back(&o);
  }
  std::vector<OrderBookRow> rows;
  for (auto& [device_class, list] : by_class) {
    std::sort(list.begin(), list.end(), [](const Offer* a, const Offer* b) {
      if (Sane(a->ask) != Sane(b->ask)) return Sane(a->ask) < Sane(b->ask);
      return a->node_id < b->node_id;
    });
    OrderBookRow row;
    row.device_class = device_class;
    row.providers = static_cast<uint32_t>(list.size());
    for (const Offer* o : list) row.free_units += o->free_units;
    row.min_ask = Sane(list.front()->ask);
    row.max_ask = Sane(list.back()->ask);
    double seen = 0;
    for (const Offer* o : list) {
      seen += o->free_units;
      if (seen * 2 >= row.free_units) {
        row.median_ask = Sane(o->ask);
        break;
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string FormatOrderBook(const std::vector<OrderBookRow>& rows) {
  std::string out = "CLASS                          PROVIDERS   FREE    MIN/h  MEDIAN/h   MAX/h\n";
  for (const auto& r : rows) {
    char line[256];
    std::snprintf(line, sizeof line, "%-30s %9u %6.0f %8.2f %9.2f %7.2f\n", r.device_class.c_str(), r.providers,
                  r.free_units, r.min_ask, r.median_ask, r.max_ask);
    out += line;
  }
  if (rows.empty()) out += "(nothing offered)\n";
  return out;
}

std::string FormatCredits(double credits, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, credits);
  return buf;
}

}  // namespace idlegrid::market
