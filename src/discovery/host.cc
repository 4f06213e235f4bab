#include "discovery/host.h"

#include <sys/statvfs.h>
#include <sys/utsname.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <set>
#include <utility>

#include "common/fs.h"

namespace idlegrid::discovery {
namespace {

std::string_view Trim(std::string_view s) {
  const char* kSpace = " \t\r";
  size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return {};
  size_t end = s.find_last_not_of(kSpace);
  return s.substr(begin, end - begin + 1);
}

// One "key : value" line of a /proc file; nullopt for lines without a colon.
struct ProcLine {
  std::string_view key;
  std::string_view value;
};

std::optional<ProcLine> SplitProcLine(std::string_view line) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  return ProcLine{Trim(line.substr(0, colon)), Trim(line.substr(colon + 1))};
}

// Calls `visit` with each line of `text`, without its newline.
template <typename Visit>
void ForEachLine(std::string_view text, Visit visit) {
  while (!text.empty()) {
    size_t newline = text.find('\n');
    visit(text.substr(0, newline));
    if (newline == std::string_view::npos) break;
    text.remove_prefix(newline + 1);
  }
}

std::optional<uint64_t> ParseUnsigned(std::string_view text) {
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    return std::nullopt;
  }
  return value;
}

std::vector<std::string> FlagsOfInterest(std::string_view flag_list) {
  std::set<std::string_view> present;
  size_t pos = 0;
  while (pos < flag_list.size()) {
    size_t end = flag_list.find_first_of(" \t", pos);
    if (end == std::string_view::npos) end = flag_list.size();
    if (end > pos) present.insert(flag_list.substr(pos, end - pos));
    pos = end + 1;
  }
  std::vector<std::string> flags;
  for (std::string_view flag : kCpuFlagsOfInterest) {
    if (present.count(flag) > 0) flags.emplace_back(flag);
  }
  return flags;
}

// Accumulates /proc/cpuinfo one line at a time.
class CpuInfoBuilder {
 public:
  void Add(const ProcLine& line) {
    if (line.key == "processor") {
      EndProcessor();
      ++logical_cores_;
    } else if (line.key == "physical id") {
      physical_id_ = std::string(line.value);
    } else if (line.key == "core id") {
      core_id_ = std::string(line.value);
    } else if (line.key == "flags" || line.key == "Features") {
      if (!flags_seen_) flags_ = FlagsOfInterest(line.value);
      flags_seen_ = true;
    } else if (int rank = ModelRank(line.key); rank > model_rank_) {
      model_ = std::string(line.value);
      model_rank_ = rank;
    }
  }

  Result<v1::CpuInfo> Finish() {
    EndProcessor();
    if (logical_cores_ == 0) return Status::InvalidArgument("cpuinfo lists no processor");
    v1::CpuInfo cpu;
    cpu.set_model(model_);
    cpu.set_logical_cores(logical_cores_);
    cpu.set_physical_cores(cores_.empty() ? logical_cores_ : static_cast<uint32_t>(cores_.size()));
    for (const std::string& flag : flags_) cpu.add_flags(flag);
    return cpu;
  }

 private:
  void EndProcessor() {
    // Hyperthread siblings share (physical id, core id); a missing physical
    // id means one socket.
    if (core_id_.has_value()) cores_.emplace(physical_id_.value_or("0"), *core_id_);
    physical_id_.reset();
    core_id_.reset();
  }

  // x86 names the CPU in "model name"; Arm kernels at best in "Model" or "Hardware".
  static int ModelRank(std::string_view key) {
    return key == "model name" ? 3 : key == "Model" ? 2 : key == "Hardware" ? 1 : 0;
  }

  uint32_t logical_cores_ = 0;
  std::string model_;
  int model_rank_ = 0;
  std::vector<std::string> flags_;
  bool flags_seen_ = false;
  std::optional<std::string> physical_id_;
  std::optional<std::string> core_id_;
  std::set<std::pair<std::string, std::string>> cores_;
};

}  // namespace

Result<v1::CpuInfo> ParseCpuInfo(std::string_view cpuinfo) {
  CpuInfoBuilder builder;
  ForEachLine(cpuinfo, [&](std::string_view text) {
    if (std::optional<ProcLine> line = SplitProcLine(text)) builder.Add(*line);
  });
  return builder.Finish();
}

Result<MemoryInfo> ParseMemInfo(std::string_view meminfo) {
  std::optional<uint64_t> total, available, free, buffers, cached;
  Status bad;
  ForEachLine(meminfo, [&](std::string_view text) {
    std::optional<ProcLine> line = SplitProcLine(text);
    if (!line) return;
    std::optional<uint64_t>* slot = line->key == "MemTotal"       ? &total
                                    : line->key == "MemAvailable" ? &available
                                    : line->key == "MemFree"      ? &free
                                    : line->key == "Buffers"      ? &buffers
                                    : line->key == "Cached"       ? &cached
                                                                  : nullptr;
    if (slot == nullptr) return;
    std::string_view number = line->value;
    if (number.ends_with("kB")) number = Trim(number.substr(0, number.size() - 2));
    std::optional<uint64_t> kib = ParseUnsigned(number);
    // 2^54 KiB is 16 EiB: anything larger is garbage, not memory.
    if (!kib || *kib >= (uint64_t{1} << 54)) {
      if (bad.ok())
        bad = Status::InvalidArgument("meminfo: bad value for " + std::string(line->key) + ": \"" +
                                      std::string(line->value) + "\"");
      return;
    }
    *slot = *kib * 1024;
  });
  if (!bad.ok()) return bad;
  if (!total) return Status::InvalidArgument("meminfo: no MemTotal");
  MemoryInfo memory;
  memory.total_bytes = *total;
  memory.available_bytes = available ? *available : free.value_or(0) + buffers.value_or(0) + cached.value_or(0);
  return memory;
}

Result<v1::CpuInfo> ReadCpuInfo(const std::string& path) {
  IG_ASSIGN_OR_RETURN(std::string content, ReadFile(path));
  Result<v1::CpuInfo> cpu = ParseCpuInfo(content);
  if (!cpu.ok()) return cpu.status().WithContext(path);
  return cpu;
}

Result<MemoryInfo> ReadMemInfo(const std::string& path) {
  IG_ASSIGN_OR_RETURN(std::string content, ReadFile(path));
  Result<MemoryInfo> memory = ParseMemInfo(content);
  if (!memory.ok()) return memory.status().WithContext(path);
  return memory;
}

Result<v1::DiskInfo> ReadDisk(const std::string& path) {
  struct statvfs fs {};
  if (statvfs(path.c_str(), &fs) != 0) {
    std::string why = "statvfs " + path + ": " + std::strerror(errno);
    return errno == ENOENT ? Status::NotFound(why) : Status::Internal(why);
  }
  v1::DiskInfo disk;
  disk.set_path(path);
  disk.set_total_bytes(static_cast<uint64_t>(fs.f_blocks) * fs.f_frsize);
  disk.set_free_bytes(static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize);
  return disk;
}

Result<std::string> ReadKernelRelease() {
  struct utsname names {};
  if (uname(&names) != 0) return Status::Internal(std::string("uname: ") + std::strerror(errno));
  return std::string(names.release);
}

v1::HostInventory DiscoverHost(const std::vector<std::string>& disk_paths, const std::string& nvml_path,
                               const std::string& cuda_path) {
  v1::HostInventory inventory;
  if (Result<v1::CpuInfo> cpu = ReadCpuInfo(); cpu.ok()) *inventory.mutable_cpu() = *cpu;
  if (Result<MemoryInfo> memory = ReadMemInfo(); memory.ok()) {
    inventory.set_memory_total_bytes(memory->total_bytes);
    inventory.set_memory_available_bytes(memory->available_bytes);
  }
  for (const std::string& path : disk_paths) {
    Result<v1::DiskInfo> disk = ReadDisk(path);
    if (disk.ok()) {
      *inventory.add_disks() = *disk;
    } else {
      inventory.add_disks()->set_path(path);
    }
  }
  if (Result<std::string> kernel = ReadKernelRelease(); kernel.ok()) {
    inventory.set_kernel(*kernel);
  }
  *inventory.mutable_gpus() = DiscoverNvidiaGpus(nvml_path, cuda_path);
  return inventory;
}

}  // namespace idlegrid::discovery
