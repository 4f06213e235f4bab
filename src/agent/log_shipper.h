#pragma once
// Batches container output and ships it to the coordinator: at most every
// 200 ms, or at once when a batch grows past 64 KiB, so `logs --follow` is live
// without one RPC per write.
#include <condition_variable>
#include <functional>
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
  explicit LogShipper(Send send);
  ~LogShipper();
  void Add(const std::string& attempt_id, const std::string& stream, std::string_view data);
  // Sends everything buffered so far; returns when it was sent (or dropped after retries).
  void Flush();

 private:
  void Loop();
  // Sends what is pending; releases `lock` while the RPC runs.
  void SendPending(std::unique_lock<std::mutex>& lock);
  Send send_;
  // Only the shipper thread sends, so batches stay in order; Flush waits for it.
  std::mutex mu_;
  std::condition_variable cv_;         // work for the shipper thread
  std::condition_variable sent_cv_;    // a batch went out
  std::vector<v1::LogChunk> pending_;  // guarded by mu_
  size_t pending_bytes_ = 0;           // guarded by mu_
  bool flush_requested_ = false;       // guarded by mu_
  bool sending_ = false;               // guarded by mu_
  bool stopping_ = false;              // guarded by mu_
  std::thread thread_;
};

}  // namespace idlegrid::agent
