#pragma once
// A webhook receiver for tests: an HTTP server on 127.0.0.1 answering a set
// status to every POST and keeping what it was sent (path, body and the
// X-Idlegrid-* headers). Constructed down, on a port it reserved by binding
// once; Serve() and Stop() bring it up and down on that port.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace idlegrid::testing {

class Receiver {
 public:
  struct Hit {
    std::string path, body, signature, event, delivery;
  };
  // Reserves a free port (bound once, then closed): the receiver is down
  // until Serve().
  Receiver() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
    if (fd >= 0) close(fd);
  }
  ~Receiver() { Stop(); }
  // False when the port could not be bound again.
  bool Serve() {
    server_ = std::make_unique<httplib::Server>();
    server_->Post(R"(/.*)", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      hits_.push_back({req.path, req.body, req.get_header_value("X-Idlegrid-Signature"),
                       req.get_header_value("X-Idlegrid-Event"), req.get_header_value("X-Idlegrid-Delivery")});
      res.status = status_;
      arrived_.notify_all();
    });
    if (port_ <= 0 || !server_->bind_to_port("127.0.0.1", port_)) return false;
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    // Bound means listening (connections queue); running means stop() can end it.
    while (!server_->is_running()) std::this_thread::yield();
    return true;
  }
  void Stop() {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }
  void Answer(int status) {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = status;
  }
  // Waits until `n` POSTs have arrived, at most `timeout_ms`; false if they did not.
  bool WaitForHits(size_t n, int timeout_ms) {
    std::unique_lock<std::mutex> lock(mu_);
    return arrived_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return hits_.size() >= n; });
  }
  std::vector<Hit> Hits() {
    std::lock_guard<std::mutex> lock(mu_);
    return hits_;
  }
  std::string Url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  int port() const { return port_; }

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable arrived_;
  int status_ = 204;
  std::vector<Hit> hits_;
};

}  // namespace idlegrid::testing
