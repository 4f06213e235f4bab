#pragma once
// Pure: when a node's scratch filesystem counts as full. A full node takes no
// work (the coordinator's unschedulable reason, from its advertised disk),
// refuses what reaches it anyway, and a run that fails there is the node's
// failure, not the job's (agent/outcome.h): an owner's download filling the
// disk must not burn a stranger's retries or blame their program.
#include <cstdint>
#include <string>

namespace idlegrid::capacity {

// Full: less than 5 % of the filesystem free, and under 64 MiB.
inline constexpr uint64_t kDiskFullFloorBytes = uint64_t{64} << 20;

bool DiskIsFull(uint64_t free_bytes, uint64_t total_bytes);

// "disk is full: 0 MiB free of 256 MiB at /srv/agent" when full, else "".
// A filesystem whose size is unknown (0) is never full.
std::string DiskFullReason(uint64_t free_bytes, uint64_t total_bytes, const std::string& path);

}  // namespace idlegrid::capacity
