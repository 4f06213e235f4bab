#pragma once
// Batches container output and ships it to the coordinator: at most every
// 200 ms, or at once when a batch grows past 64 KiB, so `logs --follow` is live
// without one RPC per write. Each request stays under kMaxRequestBytes (the
// coordinator refuses messages over 8 MiB), and what waits is bounded per
// attempt: a job that writes faster than the coordinator takes it loses its own
// excess here, counted in a note on its log, instead of growing the agent
// without limit, and never costs another job on the node a line of its output.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::agent {

class LogShipper {
 public:
  using Send = std::function<bool(const v1::AppendLogsRequest&)>;
  static constexpr size_t kMaxBatchBytes = 64 << 10;
  static constexpr size_t kMaxRequestBytes = 1 << 20;
  // Per attempt: the node's whole buffer is this times the attempts it runs at once.
  static constexpr size_t kDefaultMaxPendingBytes = 16 << 20;

  explicit LogShipper(Send send, size_t max_pending_bytes_per_attempt = kDefaultMaxPendingBytes);
  ~LogShipper();
  void Add(const std::string& attempt_id, const std::string& stream, std::string_view data);
  // Sends everything buffered so far; returns when it was sent (or dropped after retries).
  void Flush();

 private:
  void Loop();
  // Sends what is pending; releases `lock` while the RPCs run.
  void SendPending(std::unique_lock<std::mutex>& lock);
  // Takes up to kMaxRequestBytes of pending chunks (at least one) into `req`.
  void TakeRequest(v1::AppendLogsRequest* req);
  void Queue(v1::LogChunk chunk);
  Send send_;
  const size_t max_pending_bytes_;  // per attempt
  // Only the shipper thread sends, so batches stay in order; Flush waits for it.
  std::mutex mu_;
  std::condition_variable cv_;                // work for the shipper thread
  std::condition_variable sent_cv_;           // a batch went out
  std::vector<v1::LogChunk> pending_;         // guarded by mu_
  size_t pending_bytes_ = 0;                  // guarded by mu_
  std::map<std::string, size_t> pending_of_;  // attempt id -> its bytes in pending_; guarded by mu_
  std::map<std::string, uint64_t> dropped_;   // attempt id -> bytes dropped, not yet noted; guarded by mu_
  bool flush_requested_ = false;              // guarded by mu_
  bool sending_ = false;                      // guarded by mu_
  bool stopping_ = false;                     // guarded by mu_
  std::thread thread_;
};

}  // namespace idlegrid::agent
