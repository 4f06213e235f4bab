#include "discovery/simulated.h"

#include <charconv>
#include <cstdio>
#include <optional>
#include <string_view>

namespace idlegrid::discovery {
namespace {

struct MemoryUnit {
  std::string_view suffix;
  uint64_t bytes;
};

// Longer suffixes first, so "GiB" is not read as "G" followed by junk.
constexpr MemoryUnit kMemoryUnits[] = {
    {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30}, {"TiB", 1ull << 40},
    {"K", 1ull << 10},   {"M", 1ull << 20},   {"G", 1ull << 30},   {"T", 1ull << 40},
};
constexpr size_t kMaxFractionDigits = 6;
constexpr uint64_t kMaxMemoryBytes = 1ull << 50;  // 1 PiB: far beyond any GPU

std::string_view Trim(std::string_view s) {
  size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

bool IsDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::optional<uint64_t> ToUnsigned(std::string_view digits) {
  uint64_t value = 0;
  auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return value;
}

Status BadMemory(std::string_view memory, const std::string& why) {
  return Status::InvalidArgument("memory \"" + std::string(memory) + "\": " + why);
}

Result<uint64_t> ParseMemory(std::string_view memory) {
  const MemoryUnit* unit = nullptr;
  for (const MemoryUnit& candidate : kMemoryUnits) {
    if (memory.ends_with(candidate.suffix)) {
      unit = &candidate;
      break;
    }
  }
  if (unit == nullptr) return BadMemory(memory, "needs a unit: KiB, MiB, GiB or TiB (or K, M, G, T)");
  std::string_view number = memory.substr(0, memory.size() - unit->suffix.size());
  std::string_view whole = number.substr(0, number.find('.'));
  std::string_view fraction = whole.size() < number.size() ? number.substr(whole.size() + 1) : std::string_view();
  bool has_point = whole.size() < number.size();
  if (!IsDigits(whole) || (has_point && !IsDigits(fraction))) {
    return BadMemory(memory, "expected a number such as 24GiB or 1.5TiB");
  }
  if (fraction.size() > kMaxFractionDigits) return BadMemory(memory, "too many decimals");
  std::optional<uint64_t> units = ToUnsigned(whole);
  if (!units || *units > kMaxMemoryBytes / unit->bytes) return BadMemory(memory, "too large");
  uint64_t bytes = *units * unit->bytes;
  if (!fraction.empty()) {
    uint64_t scale = 1;
    for (size_t i = 0; i < fraction.size(); ++i) scale *= 10;
    // unit->bytes <= 2^40 and fraction < 10^6 < 2^20: the product fits.
    bytes += *ToUnsigned(fraction) * unit->bytes / scale;
  }
  if (bytes == 0) return BadMemory(memory, "must be more than zero");
  if (bytes > kMaxMemoryBytes) return BadMemory(memory, "too large");
  return bytes;
}

Result<std::string> ParseComputeCapability(std::string_view cc) {
  size_t point = cc.find('.');
  std::string_view major = cc.substr(0, point);
  std::string_view minor = point == std::string_view::npos ? std::string_view() : cc.substr(point + 1);
  if (point == std::string_view::npos || !IsDigits(major) || !IsDigits(minor) || major.size() > 2 || minor.size() > 1 ||
      *ToUnsigned(major) == 0) {
    return Status::InvalidArgument("compute capability \"" + std::string(cc) +
                                   "\": expected MAJOR.MINOR such as 8.9 or 10.0");
  }
  return std::to_string(*ToUnsigned(major)) + "." + std::string(minor);
}

uint64_t Fnv1a64(std::string_view data) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string SimulatedUuid(const std::string& canonical_spec, uint32_t index) {
  char text[32];
  std::snprintf(text, sizeof(text), "SIM-%016llx",
                static_cast<unsigned long long>(Fnv1a64(canonical_spec + "#" + std::to_string(index))));
  return text;
}

}  // namespace

Result<v1::GpuDevice> ParseSimulatedGpu(const std::string& spec, uint32_t index) {
  auto invalid = [&](const std::string& why) {
    return Status::InvalidArgument("simulated GPU \"" + spec + "\": " + why +
                                   " (expected MODEL:MEMORY:CC, e.g. \"RTX 4090:24GiB:8.9\")");
  };
  std::string_view rest = spec;
  size_t first = rest.find(':');
  size_t second = first == std::string_view::npos ? first : rest.find(':', first + 1);
  if (second == std::string_view::npos || rest.find(':', second + 1) != std::string_view::npos) {
    return invalid("needs exactly three parts separated by ':'");
  }
  std::string_view model = Trim(rest.substr(0, first));
  std::string_view memory = Trim(rest.substr(first + 1, second - first - 1));
  std::string_view cc = Trim(rest.substr(second + 1));
  if (model.empty()) return invalid("model is empty");
  Result<uint64_t> bytes = ParseMemory(memory);
  if (!bytes.ok()) return invalid(bytes.status().message());
  Result<std::string> capability = ParseComputeCapability(cc);
  if (!capability.ok()) return invalid(capability.status().message());

  v1::GpuDevice device;
  device.set_index(index);
  device.set_name(std::string(model));
  device.set_uuid(SimulatedUuid(std::string(model) + ":" + std::to_string(*bytes) + ":" + *capability, index));
  device.set_memory_total_bytes(*bytes);
  device.set_memory_free_bytes(*bytes);
  device.set_compute_capability(*capability);
  device.set_driver_version("simulated");
  device.set_mig_mode("unsupported");
  device.set_simulated(true);
  return device;
}

Result<v1::GpuDiscovery> SimulatedGpus(const std::vector<std::string>& specs, uint32_t first_index) {
  v1::GpuDiscovery discovery;
  for (size_t i = 0; i < specs.size(); ++i) {
    IG_ASSIGN_OR_RETURN(*discovery.add_devices(), ParseSimulatedGpu(specs[i], first_index + static_cast<uint32_t>(i)));
  }
  discovery.set_available(!specs.empty());
  if (specs.empty()) discovery.set_reason("no device");
  return discovery;
}

}  // namespace idlegrid::discovery
