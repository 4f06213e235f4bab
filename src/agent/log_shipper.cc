#include "agent/log_shipper.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace idlegrid::agent {

LogShipper::LogShipper(Send send, size_t max_pending_bytes_per_attempt)
    : send_(std::move(send)), max_pending_bytes_(max_pending_bytes_per_attempt) {
  thread_ = std::thread([this] { Loop(); });
}

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
  const auto mine = pending_of_.find(attempt_id);
  if ((mine == pending_of_.end() ? 0 : mine->second) + data.size() > max_pending_bytes_) {
    // Never block the caller: it pumps the container's output and must stay
    // free to stop it. The coordinator keeps only a task's head and tail
    // anyway (jobs/log_cap.h). The budget is the attempt's own, so a flood
    // from one job never drops another job's last lines.
    dropped_[attempt_id] += data.size();
    cv_.notify_all();
    return;
  }
  if (!pending_.empty() && pending_.back().attempt_id() == attempt_id && pending_.back().stream() == stream &&
      pending_.back().data().size() < kMaxBatchBytes) {
    pending_.back().mutable_data()->append(data);
    pending_bytes_ += data.size();
    pending_of_[attempt_id] += data.size();
  } else {
    v1::LogChunk c;
    c.set_attempt_id(attempt_id);
    c.set_stream(stream);
    c.set_data(std::string(data));
    Queue(std::move(c));
  }
  if (pending_bytes_ >= kMaxBatchBytes) cv_.notify_all();
}

void LogShipper::Queue(v1::LogChunk chunk) {
  pending_bytes_ += chunk.data().size();
  pending_of_[chunk.attempt_id()] += chunk.data().size();
  pending_.push_back(std::move(chunk));
}

void LogShipper::TakeRequest(v1::AppendLogsRequest* req) {
  size_t bytes = 0;
  size_t taken = 0;
  while (taken < pending_.size() && (taken == 0 || bytes + pending_[taken].data().size() <= kMaxRequestBytes)) {
    const size_t size = pending_[taken].data().size();
    bytes += size;
    if (auto it = pending_of_.find(pending_[taken].attempt_id());
        it != pending_of_.end() && (it->second -= size) == 0) {
      pending_of_.erase(it);
    }
    *req->add_chunks() = std::move(pending_[taken]);
    ++taken;
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(taken));
  pending_bytes_ -= bytes;
}

void LogShipper::SendPending(std::unique_lock<std::mutex>& lock) {
  // Notes for what was dropped go after what was kept before the drop.
  for (const auto& [attempt_id, bytes] : dropped_) {
    v1::LogChunk note;
    note.set_attempt_id(attempt_id);
    note.set_stream("idlegrid");
    note.set_data("[idlegrid agent] " + std::to_string(bytes) +
                  " byte(s) of output dropped: the job wrote faster than the coordinator took its logs\n");
    Queue(std::move(note));
  }
  dropped_.clear();
  while (!pending_.empty()) {
    v1::AppendLogsRequest req;
    TakeRequest(&req);
    sending_ = true;
    lock.unlock();
    bool sent = false;
    for (int attempt = 0; attempt < 5 && !(sent = send_(req)); ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));  // backoff on a flaky link
    }
    if (!sent)
      spdlog::warn("dropped {} log chunk(s): the coordinator did not take them after 5 tries", req.chunks_size());
    lock.lock();
    sending_ = false;
    sent_cv_.notify_all();
  }
}

void LogShipper::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  flush_requested_ = true;
  cv_.notify_all();
  sent_cv_.wait(lock, [&] { return (pending_.empty() && dropped_.empty() && !sending_) || stopping_; });
}

void LogShipper::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::milliseconds(200), [&] {
      return stopping_ || flush_requested_ || pending_bytes_ >= kMaxBatchBytes || !dropped_.empty();
    });
    flush_requested_ = false;
    SendPending(lock);
    sent_cv_.notify_all();
  }
  SendPending(lock);
  sent_cv_.notify_all();
}

}  // namespace idlegrid::agent
