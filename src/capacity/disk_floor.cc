#include "capacity/disk_floor.h"

#include <algorithm>

namespace idlegrid::capacity {
namespace {

// Whole MiB, rounded down: free space is never overstated.
std::string Mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

bool DiskIsFull(uint64_t free_bytes, uint64_t total_bytes) {
  if (total_bytes == 0) return false;
  return free_bytes < std::min(kDiskFullFloorBytes, total_bytes / 20);
}

std::string DiskFullReason(uint64_t free_bytes, uint64_t total_bytes, const std::string& path) {
  if (!DiskIsFull(free_bytes, total_bytes)) return "";
  return "disk is full: " + Mib(free_bytes) + " free of " + Mib(total_bytes) + " at " + path;
}

}  // namespace idlegrid::capacity
