#pragma once
// The spot market: pure pricing rules over providers' asks and jobs' bids. No
// I/O, no clock. The scheduler (src/sched) asks it whether an offer satisfies a
// bid and what a placement costs; the coordinator publishes OrderBook.
//
// Units: prices are in the grid's credit unit per hour. A provider asks a
// price per device-hour for each device class (a GPU model name as the device
// reports it, e.g. "NVIDIA A100-SXM4-80GB") and per core-hour for CPU
// (class kCpuCoreClass). A class the provider asks nothing for is free (0).
//
// Pricing rule kPayAsAsk: a placement pays what its provider asks, pro rata:
//   price/hour = sum over held GPUs of ask(class) x share (1 for a whole GPU,
//                gpu_milli/1000 for a share) + cores x ask("cpu-core")
//   estimated cost = price/hour x run-time bound (the job's run timeout).
// A bid (maxPricePerGpuHour) is compared with the per-device ask, not with the
// pro-rata price, so a share is never cheaper to bid for than a whole GPU.
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace idlegrid::market {

inline constexpr char kCpuCoreClass[] = "cpu-core";
inline constexpr char kPayAsAsk[] = "pay-as-ask";

// device class -> ask per unit-hour.
using Asks = std::map<std::string, double, std::less<>>;

// The provider's ask for `device_class`, or 0 when it asks nothing for it.
// Negative or NaN asks count as 0.
double AskFor(const Asks& asks, std::string_view device_class);

// What a job is willing to pay. Zero fields mean "no limit".
struct Bid {
  double max_price_per_gpu_hour = 0;
  double max_price_per_cpu_core_hour = 0;
  double max_cost = 0;    // cap on the estimated cost of one task's run
  double run_hours = 0;   // run-time bound; 0: unbounded
};

// pay-as-ask price per hour of holding `gpu_share` of each of the devices
// asking `device_asks` plus `cpu_cores` cores at `cpu_ask`.
double HourlyPrice(std::span<const double> device_asks, double gpu_share, double cpu_cores, double cpu_ask);

// "" when `ask` (per device-hour) is within the bid, else a reason a user can
// act on: "over max price (ask 2.10/GPU-h, bid 1.50)".
std::string GpuBidShortfall(double ask, const Bid& bid);
std::string CpuBidShortfall(double ask, const Bid& bid);

// "" when the estimated cost of running at `price_per_hour` fits the cap, else
// why not: "estimated cost 12.00 (2.00/h x 6.0 h) exceeds maxCost 10.00", or
// "maxCost needs a run timeout" when the run time is unbounded and the price is
// not zero.
std::string CostCapExceeded(double price_per_hour, const Bid& bid);

// What one provider offers of one device class right now.
struct Offer {
  std::string node_id;
  std::string device_class;  // GPU model or kCpuCoreClass
  double free_units = 0;     // free devices (or cores)
  double ask = 0;            // per unit-hour
};

struct OrderBookRow {
  std::string device_class;
  uint32_t providers = 0;  // offers with free units
  double free_units = 0;
  double min_ask = 0;
  double median_ask = 0;   // over free units: half of them ask at most this
  double max_ask = 0;
};

// One row per device class with free units, sorted by class name; classes
// with nothing free are left out. Deterministic for a given multiset of offers.
std::vector<OrderBookRow> OrderBook(const std::vector<Offer>& offers);

// A plain-text table for `idlegrid market`.
std::string FormatOrderBook(const std::vector<OrderBookRow>& rows);

// Credits (prices, costs) as the CLI prints them: fixed, `decimals` places.
std::string FormatCredits(double credits, int decimals = 2);

}  // namespace idlegrid::market
