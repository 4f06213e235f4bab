#include "metrics/gpu_telemetry.h"

#include <algorithm>
#include <string_view>

namespace idlegrid::metrics {
namespace {

Family Gauge(std::string name, std::string help) {
  return Family{std::move(name), std::move(help), Type::kGauge, {}, {}};
}

// Whether the agent's NVML failed to read `field` (nvml_loader.cc lists each
// failure as "field: why").
bool Unread(const v1::GpuDevice& d, std::string_view field) {
  return std::any_of(d.query_errors().begin(), d.query_errors().end(), [&](const std::string& e) {
    return e.size() > field.size() && e.compare(0, field.size(), field) == 0 && e[field.size()] == ':';
  });
}

}  // namespace

const std::vector<std::pair<uint64_t, std::string>>& ThrottleReasonNames() {
  static const std::vector<std::pair<uint64_t, std::string>> names = {
      {0x1, "gpu_idle"},
      {0x2, "applications_clocks_setting"},
      {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},
      {0x10, "sync_boost"},
      {0x20, "sw_thermal_slowdown"},
      {0x40, "hw_thermal_slowdown"},
      {0x80, "hw_power_brake_slowdown"},
      {0x100, "display_clock_setting"},
  };
  return names;
}

std::vector<Family> GpuTelemetryFamilies(const google::protobuf::RepeatedPtrField<v1::Node>& nodes, int64_t now_ms) {
  Family age =
      Gauge("idlegrid_node_advertisement_age_seconds",
            "Time since the node's latest advertisement was made (the agent's clock): how old its GPU readings are.");
  Family utilization = Gauge("idlegrid_gpu_utilization_ratio",
                             "GPU busy (SM utilisation, 0..1) per device, from its node's latest advertisement.");
  Family used = Gauge("idlegrid_gpu_memory_used_bytes",
                      "Memory in use on the whole device (every process's, not only idlegrid's), per device.");
  Family total = Gauge("idlegrid_gpu_memory_total_bytes", "Memory on the device, per device.");
  Family temperature = Gauge("idlegrid_gpu_temperature_celsius", "GPU core temperature per device.");
  Family power = Gauge("idlegrid_gpu_power_watts", "Power drawn per device.");
  Family power_limit = Gauge("idlegrid_gpu_power_limit_watts", "Enforced power limit per device.");
  Family throttle = Gauge("idlegrid_gpu_throttle_reason",
                          "1 while NVML names this reason for holding the device's clocks down, else 0 (other: bits "
                          "without a name here).");

  uint64_t named_bits = 0;
  for (const auto& [bit, name] : ThrottleReasonNames()) named_bits |= bit;

  for (const v1::Node& n : nodes) {
    if (n.state() == "offline") continue;
    if (n.advertisement().created_at_ms() > 0) {
      const int64_t ms = std::max<int64_t>(0, now_ms - n.advertisement().created_at_ms());
      age.samples.push_back({{{"node", n.id()}}, static_cast<double>(ms) / 1000.0});
    }
    for (const v1::GpuDevice& g : n.gpus()) {
      const Labels device = {{"node", n.id()},
                             {"gpu", std::to_string(g.index())},
                             {"uuid", g.uuid()},
                             {"model", g.name()},
                             {"simulated", g.simulated() ? "true" : "false"}};
      if (!Unread(g, "utilization")) utilization.samples.push_back({device, g.utilization_gpu_pct() / 100.0});
      if (!Unread(g, "memory")) {
        used.samples.push_back({device, static_cast<double>(g.memory_used_bytes())});
        total.samples.push_back({device, static_cast<double>(g.memory_total_bytes())});
      }
      if (!Unread(g, "temperature_c")) temperature.samples.push_back({device, static_cast<double>(g.temperature_c())});
      if (!Unread(g, "power_draw_mw")) power.samples.push_back({device, g.power_draw_mw() / 1000.0});
      if (!Unread(g, "power_limit_mw")) power_limit.samples.push_back({device, g.power_limit_mw() / 1000.0});
      if (!Unread(g, "throttle_reasons")) {
        const uint64_t bits = g.throttle_reasons();
        for (const auto& [bit, name] : ThrottleReasonNames()) {
          Labels l = device;
          l.emplace_back("reason", name);
          throttle.samples.push_back({std::move(l), (bits & bit) != 0 ? 1.0 : 0.0});
        }
        Labels other = device;
        other.emplace_back("reason", "other");
        throttle.samples.push_back({std::move(other), (bits & ~named_bits) != 0 ? 1.0 : 0.0});
      }
    }
  }
  return {std::move(age),         std::move(utilization), std::move(used),        std::move(total),
          std::move(temperature), std::move(power),       std::move(power_limit), std::move(throttle)};
}

}  // namespace idlegrid::metrics
