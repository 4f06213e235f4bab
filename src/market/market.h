#pragma once
// The spot market: pure pricing rules over providers' asks and jobs' bids. No
// I/O, no clock. The scheduler (src/sched) asks it whether an offer satisfies a
// bid and what a placement costs; the coordinator publishes OrderBook.
//
// Units: prices are in the grid's credit unit per hour. A provider asks a
// price per device-hour for each device class and per core-hour for CPU
// (class kCpuCoreClass). A device's class is its GPU model name as NVML
// reports it ("NVIDIA GeForce RTX 4090", "NVIDIA A100-SXM4-80GB"); an ask
// applies to it by the model-name rule of MatchingAsk, so "RTX 4090" prices
// that card. A class the provider asks nothing for is free (0).
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

// A GPU model name reduced to what tells models apart, for matching asks:
// ASCII letters upper-cased; split into tokens at whitespace, '-' and '_';
// the vendor and brand words NVML puts before the model ("NVIDIA", "GeForce",
// "Tesla", "Quadro") dropped while they lead; tokens joined by one space.
//   "NVIDIA GeForce RTX 4090" -> "RTX 4090"   "rtx  4090" -> "RTX 4090"
//   "NVIDIA A100-SXM4-80GB"   -> "A100 SXM4 80GB"   "Tesla T4" -> "T4"
// "TITAN" and "RTX" are model words and stay ("NVIDIA TITAN RTX" -> "TITAN RTX").
std::string NormalizeGpuModel(std::string_view name);

// Which ask applies to a device of `device_class`; nullptr when none does.
//  1. An ask keyed exactly `device_class` wins (and is the only rule for
//     kCpuCoreClass, whose ask never prices a GPU).
//  2. Else the GPU rule on normalised names: a token is a *variant* when it
//     names memory size, bus or package only (NNGB, PCIE, SXM[N], HBM[N][E]);
//     the others are the *model*. An ask applies when its model tokens equal
//     the device's, in order, and each of its variant tokens is among the
//     device's. So "A100" prices "NVIDIA A100-SXM4-80GB" and "NVIDIA A100
//     80GB PCIe", "A100 80GB" both of them but not "NVIDIA A100-PCIE-40GB";
//     "RTX 4090" prices "NVIDIA GeForce RTX 4090" but neither "... RTX 4090 D"
//     nor "... RTX 4090 Laptop GPU" (other models), nor "RTX 4080".
//  3. Of several asks that apply by rule 2 the one naming the most variant
//     tokens wins; a tie goes to the key that sorts first.
// Pure; the returned pointer is into `asks`.
const Asks::value_type* MatchingAsk(const Asks& asks, std::string_view device_class);

// The price of the ask MatchingAsk picks for `device_class`, or 0 when none
// applies. Negative or NaN asks count as 0.
double AskFor(const Asks& asks, std::string_view device_class);

// The GPU asks that apply (rule 1 or 2 of MatchingAsk) to none of
// `device_names`: they price nothing on that node, which its owner should be
// told. An ask that applies to a device but loses to a more specific one is
// not listed. kCpuCoreClass is never listed. Pure.
Asks UnmatchedAsks(const Asks& asks, const std::vector<std::string>& device_names);

// What a job is willing to pay. Zero fields mean "no limit".
struct Bid {
  double max_price_per_gpu_hour = 0;
  double max_price_per_cpu_core_hour = 0;
  double max_cost = 0;   // cap on the estimated cost of one task's run
  double run_hours = 0;  // run-time bound; 0: unbounded
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
  double median_ask = 0;  // over free units: half of them ask at most this
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
