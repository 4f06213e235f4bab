#include "market/recent_prices.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace idlegrid::market {

void RecentPrices::Record(const std::string& device_class, double unit_price, int64_t now_ms) {
  if (!std::isfinite(unit_price) || unit_price < 0) return;
  auto& q = samples_[device_class];
  q.push_back({now_ms, unit_price});
  while (q.size() > per_class_ || (!q.empty() && q.front().at_ms < now_ms - window_ms_)) q.pop_front();
}

RecentPrice RecentPrices::Of(const std::string& device_class, int64_t now_ms) const {
  RecentPrice out;
  auto it = samples_.find(device_class);
  if (it == samples_.end()) return out;
  std::vector<double> prices;
  for (const Sample& s : it->second) {
    if (s.at_ms < now_ms - window_ms_) continue;
    prices.push_back(s.price);
    out.latest = s.price;
  }
  if (prices.empty()) return out;
  out.placements = static_cast<uint32_t>(prices.size());
  // The lower median: a price some placement actually paid.
  auto mid = prices.begin() + static_cast<std::ptrdiff_t>((prices.size() - 1) / 2);
  std::nth_element(prices.begin(), mid, prices.end());
  out.median = *mid;
  return out;
}

std::map<std::string, RecentPrice> RecentPrices::All(int64_t now_ms) const {
  std::map<std::string, RecentPrice> out;
  for (const auto& [cls, q] : samples_) {
    RecentPrice p = Of(cls, now_ms);
    if (p.placements > 0) out[cls] = p;
  }
  return out;
}

}  // namespace idlegrid::market
