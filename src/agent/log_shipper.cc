#include "agent/log_shipper.h"

#include <chrono>

namespace idlegrid::agent {

namespace {
constexpr size_t kMaxBatchBytes = 64 << 10;
}

LogShipper::LogShipper(Send send) : send_(std::move(send)) { thread_ = std::thread([this] { Loop(); }); }

LogShipper::~LogShipper() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  thread_.join();
}

void LogShipper::Add(const std::string& attempt_id, const std::string& stream, std::string_view data) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!pending_.empty() && pending_.back().attempt_id() == attempt_id && pending_.back().stream() == stream &&
      pending_.back().data().size() < kMaxBatchBytes) {
    pending_.back().mutable_data()->append(data);
  } else {
    v1::LogChunk c;
    c.set_attempt_id(attempt_id);
    c.set_stream(stream);
    c.set_data(std::string(data));
    pending_.push_back(std::move(c));
  }
  pending_bytes_ += data.size();
  if (pending_bytes_ >= kMaxBatchBytes) cv_.notify_all();
}

void LogShipper::SendPending(std::unique_lock<std::mutex>& lock) {
  if (pending_.empty()) return;
  v1::AppendLogsRequest req;
  for (auto& c : pending_) *req.add_chunks() = std::move(c);
  pending_.clear();
  pending_bytes_ = 0;
  sending_ = true;
  lock.unlock();
  for (int attempt = 0; attempt < 5 && !send_(req); ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));  // backoff on a flaky link
  }
  lock.lock();
  sending_ = false;
  sent_cv_.notify_all();
}

void LogShipper::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  flush_requested_ = true;
  cv_.notify_all();
  sent_cv_.wait(lock, [&] { return (pending_.empty() && !sending_) || stopping_; });
}

void LogShipper::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::milliseconds(200),
                 [&] { return stopping_ || flush_requested_ || pending_bytes_ >= kMaxBatchBytes; });
    flush_requested_ = false;
    SendPending(lock);
    sent_cv_.notify_all();
  }
  SendPending(lock);
  sent_cv_.notify_all();
}

}  // namespace idlegrid::agent
