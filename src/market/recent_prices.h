#pragma once
// Recent clearing prices (docs/provider.md, Earnings): what placements paid
// per unit-hour of each device class lately, so a provider can see where its
// asks stand. In memory, per coordinator; pure (every time is passed in).
#include <cstdint>
#include <deque>
#include <map>
#include <string>

namespace idlegrid::market {

struct RecentPrice {
  double latest = 0;
  double median = 0;
  uint32_t placements = 0;  // inside the window
};

class RecentPrices {
 public:
  // Keeps at most `per_class` placements of each class, none older than `window_ms`.
  explicit RecentPrices(int64_t window_ms = 3'600'000, size_t per_class = 256)
      : window_ms_(window_ms), per_class_(per_class) {}

  // A placement of one unit-hour price for `device_class` at `now_ms`.
  void Record(const std::string& device_class, double unit_price, int64_t now_ms);
  // The class's recent figures at `now_ms` (placements 0: none recently).
  RecentPrice Of(const std::string& device_class, int64_t now_ms) const;
  // Every class with a placement inside the window.
  std::map<std::string, RecentPrice> All(int64_t now_ms) const;

 private:
  struct Sample {
    int64_t at_ms;
    double price;
  };
  int64_t window_ms_;
  size_t per_class_;
  std::map<std::string, std::deque<Sample>> samples_;
};

}  // namespace idlegrid::market
