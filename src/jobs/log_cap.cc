#include "jobs/log_cap.h"

#include <algorithm>
#include <deque>

namespace idlegrid::jobs {

bool LogAppendReachesTail(const LogCap& cap, const LogUsage& usage, uint64_t incoming_bytes) {
  return usage.head + incoming_bytes > cap.head_bytes;
}

namespace {

std::string Size(uint64_t bytes) {
  return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

}  // namespace

std::string LogCapNote(const LogCap& cap) {
  return "[idlegrid] this task's output passed " + Size(cap.head_bytes) +
         ": the first part is kept above, only the last " + Size(cap.tail_bytes) +
         " below; what lies between is dropped (`idlegrid status JOB` shows how much)\n";
}

namespace {

// A row of `in`'s task, attempt and stream holding `data`: built field by
// field, so a large incoming chunk is not copied only to have its data replaced.
LogRowWrite RowOf(const v1::LogChunk& in, LogPart part, std::string_view data, std::string_view stream = {}) {
  LogRowWrite w;
  w.part = part;
  w.chunk.set_task_index(in.task_index());
  w.chunk.set_attempt_id(in.attempt_id());
  w.chunk.set_stream(stream.empty() ? in.stream() : std::string(stream));
  w.chunk.set_data(std::string(data));
  return w;
}

}  // namespace

std::map<uint32_t, std::vector<v1::LogChunk>> ChunksByTask(const std::vector<v1::LogChunk>& chunks) {
  std::map<uint32_t, std::vector<v1::LogChunk>> out;
  for (const auto& c : chunks) out[c.task_index()].push_back(c);
  return out;
}

LogAppendPlan PlanLogAppend(const LogCap& cap, const LogUsage& usage, const std::vector<TailRow>& tail,
                            const std::vector<v1::LogChunk>& incoming) {
  LogAppendPlan plan;
  plan.usage = usage;
  // Tail rows, stored and planned, oldest first.
  struct Held {
    int64_t seq;  // stored row; 0 when planned
    size_t row;   // index in plan.rows when planned
    uint64_t size;
  };
  std::deque<Held> held;
  for (const TailRow& t : tail) held.push_back({t.seq, 0, t.size});
  std::vector<bool> dropped_rows;
  for (const v1::LogChunk& in : incoming) {
    std::string_view data = in.data();
    if (plan.usage.head < cap.head_bytes && !data.empty()) {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(data.size(), cap.head_bytes - plan.usage.head));
      plan.rows.push_back(RowOf(in, LogPart::kHead, data.substr(0, take)));
      dropped_rows.push_back(false);
      plan.usage.head += take;
      data.remove_prefix(take);
    }
    if (data.empty()) continue;
    // The note goes in once, when the first byte passes the head.
    if (plan.usage.tail == 0 && plan.usage.dropped == 0 && held.empty()) {
      plan.rows.push_back(RowOf(in, LogPart::kNote, LogCapNote(cap), "idlegrid"));
      dropped_rows.push_back(false);
    }
    if (data.size() > cap.tail_bytes) {
      plan.usage.dropped += data.size() - cap.tail_bytes;
      data.remove_prefix(data.size() - cap.tail_bytes);
    }
    if (cap.tail_bytes == 0) continue;
    plan.rows.push_back(RowOf(in, LogPart::kTail, data));
    dropped_rows.push_back(false);
    held.push_back({0, plan.rows.size() - 1, data.size()});
    plan.usage.tail += data.size();
    while (plan.usage.tail > cap.tail_bytes && !held.empty()) {
      const Held oldest = held.front();
      held.pop_front();
      plan.usage.tail -= oldest.size;
      plan.usage.dropped += oldest.size;
      if (oldest.seq != 0) {
        plan.evict.push_back(oldest.seq);
      } else {
        dropped_rows[oldest.row] = true;
      }
    }
  }
  // Planned rows evicted by later ones in the same batch are never written.
  std::vector<LogRowWrite> kept;
  kept.reserve(plan.rows.size());
  for (size_t i = 0; i < plan.rows.size(); ++i) {
    if (!dropped_rows[i]) kept.push_back(std::move(plan.rows[i]));
  }
  plan.rows = std::move(kept);
  return plan;
}

}  // namespace idlegrid::jobs
