#pragma once
// What `cancel --tasks/--state` and `retry --tasks` accept. Pure parsing.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::jobs {

// Most task indices one selection may name: a typo like "0-4000000000"
// must not allocate gigabytes before the coordinator says the job is smaller.
inline constexpr uint32_t kMaxSelectedTasks = 1'000'000;

// "3,7-9" -> {3, 7, 8, 9}: indices and inclusive ranges separated by commas
// (spaces around them allowed), returned ascending without duplicates.
// InvalidArgument naming the offending part and where it starts (1-based):
// an empty part, a non-number, a range whose end is below its start, an
// index past 2^32-1, or more than kMaxSelectedTasks indices.
Result<std::vector<uint32_t>> ParseTaskRanges(std::string_view text);

// Task states as `status` names them ("queued", "running", ...), each value
// a name or a comma list ("--state queued --state running,lost"); duplicates
// are dropped. InvalidArgument naming an unknown state and listing the known.
Result<std::vector<v1::TaskState>> ParseTaskStates(const std::vector<std::string>& values);

}  // namespace idlegrid::jobs
