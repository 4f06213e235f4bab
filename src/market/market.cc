#include "market/market.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

namespace idlegrid::market {
namespace {

double Sane(double v) { return std::isfinite(v) && v > 0 ? v : 0; }

std::vector<std::string> ModelTokens(std::string_view name) {
  std::vector<std::string> tokens;
  std::string token;
  auto flush = [&] {
    if (!token.empty()) tokens.push_back(std::move(token));
    token.clear();
  };
  for (char c : name) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '-' || c == '_') {
      flush();
    } else {
      token += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
    }
  }
  flush();
  // The words NVML puts before the model: the vendor, then a product line.
  static constexpr std::string_view kBrands[] = {"NVIDIA", "GEFORCE", "TESLA", "QUADRO"};
  size_t lead = 0;
  while (lead < tokens.size() && std::find(std::begin(kBrands), std::end(kBrands), tokens[lead]) != std::end(kBrands)) {
    ++lead;
  }
  tokens.erase(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(lead));
  return tokens;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Memory size, bus or package: what NVML appends to tell boards of one model
// apart ("A100-SXM4-80GB", "A100 80GB PCIe", "H100 80GB HBM3"). "D", "Ti",
// "SUPER", "NVL", "Laptop" name other models and are not variants.
bool IsVariantToken(std::string_view t) {
  if (t == "PCIE") return true;
  if (t.size() > 2 && t.ends_with("GB") && AllDigits(t.substr(0, t.size() - 2))) return true;
  if (t.starts_with("SXM")) return t.size() == 3 || AllDigits(t.substr(3));
  if (t.starts_with("HBM")) {
    std::string_view rest = t.substr(3);
    if (rest.ends_with("E")) rest.remove_suffix(1);
    return rest.empty() || AllDigits(rest);
  }
  return false;
}

struct ModelName {
  std::vector<std::string> model;
  std::vector<std::string> variants;
};

ModelName SplitModel(std::string_view name) {
  ModelName out;
  for (std::string& t : ModelTokens(name)) (IsVariantToken(t) ? out.variants : out.model).push_back(std::move(t));
  return out;
}

// How specifically `ask` names `device` by rule 2 of MatchingAsk: the count
// of its variant tokens plus one, or 0 when it does not apply.
size_t ModelMatchRank(const ModelName& ask, const ModelName& device) {
  if (ask.model.empty() || ask.model != device.model) return 0;
  for (const std::string& v : ask.variants) {
    if (std::find(device.variants.begin(), device.variants.end(), v) == device.variants.end()) return 0;
  }
  return ask.variants.size() + 1;
}

}  // namespace

std::string NormalizeGpuModel(std::string_view name) {
  std::string out;
  for (const std::string& t : ModelTokens(name)) out += (out.empty() ? "" : " ") + t;
  return out;
}

const Asks::value_type* MatchingAsk(const Asks& asks, std::string_view device_class) {
  if (auto exact = asks.find(device_class); exact != asks.end()) return &*exact;
  if (asks.empty() || device_class == kCpuCoreClass) return nullptr;
  const ModelName device = SplitModel(device_class);
  const Asks::value_type* best = nullptr;
  size_t best_rank = 0;
  for (const auto& entry : asks) {
    if (entry.first == kCpuCoreClass) continue;
    const size_t rank = ModelMatchRank(SplitModel(entry.first), device);
    if (rank > best_rank) best = &entry, best_rank = rank;
  }
  return best;
}

double AskFor(const Asks& asks, std::string_view device_class) {
  const Asks::value_type* ask = MatchingAsk(asks, device_class);
  return ask == nullptr ? 0 : Sane(ask->second);
}

Asks UnmatchedAsks(const Asks& asks, const std::vector<std::string>& device_names) {
  std::vector<ModelName> devices;
  for (const std::string& d : device_names) devices.push_back(SplitModel(d));
  Asks out;
  for (const auto& [device_class, price] : asks) {
    if (device_class == kCpuCoreClass) continue;
    const ModelName ask = SplitModel(device_class);
    bool applies = false;
    for (size_t i = 0; i < devices.size() && !applies; ++i) {
      applies = device_names[i] == device_class || ModelMatchRank(ask, devices[i]) > 0;
    }
    if (!applies) out.emplace(device_class, price);
  }
  return out;
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
  return "over max price (ask " + FormatCredits(ask) + "/core-h, bid " +
         FormatCredits(bid.max_price_per_cpu_core_hour) + ")";
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
