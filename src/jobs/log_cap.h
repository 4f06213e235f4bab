#pragma once
// How much of a task's output the coordinator keeps: the first `head_bytes`
// and the last `tail_bytes`, with one note where the middle was dropped. A
// job printing 1 GiB must not fill the coordinator's disk (every tenant's).
// Pure: the store backends load a task's usage and its tail rows, ask for a
// plan and execute it.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::jobs {

struct LogCap {
  uint64_t head_bytes = 4ull << 20;
  uint64_t tail_bytes = 4ull << 20;
};

// Where a stored log row belongs. Values are stored: never renumber.
enum class LogPart : int { kHead = 0, kTail = 1, kNote = 2 };

// What one task's log holds so far (all its attempts together).
struct LogUsage {
  uint64_t head = 0;
  uint64_t tail = 0;
  uint64_t dropped = 0;
};

// A stored tail row, oldest first.
struct TailRow {
  int64_t seq = 0;
  uint64_t size = 0;
};

struct LogRowWrite {
  v1::LogChunk chunk;  // task_index, attempt_id, stream, data (possibly cut)
  LogPart part = LogPart::kHead;
};

struct LogAppendPlan {
  std::vector<LogRowWrite> rows;  // to insert, in order
  std::vector<int64_t> evict;     // tail rows to delete
  LogUsage usage;                 // the task's usage afterwards
};

// Appends `incoming` (one task's chunks, in order) to a log whose usage is
// `usage` and whose tail rows are `tail`. Bytes fill the head first; once it
// is full a note row is written (once) and the rest goes to the tail, whose
// oldest rows are evicted (counted as dropped) while it is over its cap; a
// chunk larger than the whole tail keeps only its last tail_bytes.
LogAppendPlan PlanLogAppend(const LogCap& cap, const LogUsage& usage, const std::vector<TailRow>& tail,
                            const std::vector<v1::LogChunk>& incoming);

// Whether appending `incoming_bytes` may touch the tail (so the caller must
// load the tail rows first).
bool LogAppendReachesTail(const LogCap& cap, const LogUsage& usage, uint64_t incoming_bytes);

// `chunks` grouped by task index, each group in arrival order.
std::map<uint32_t, std::vector<v1::LogChunk>> ChunksByTask(const std::vector<v1::LogChunk>& chunks);

// The text of the note row, written where the head ends.
std::string LogCapNote(const LogCap& cap);

}  // namespace idlegrid::jobs
