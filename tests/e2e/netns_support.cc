// Network namespaces for the e2e tests (netns_support.h).
#include "e2e/netns_support.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <utility>

#include "e2e/harness.h"

namespace idlegrid::testing {

bool Sh(const std::vector<std::string>& argv) {
  auto r = RunCommand(argv, 30);
  if (r.exit_code != 0) ADD_FAILURE() << argv[0] << " " << (argv.size() > 1 ? argv[1] : "") << ": " << r.err;
  return r.exit_code == 0;
}

// A home network behind a masquerading router, all in namespaces this test creates:
//   [home ns] agent 192.168.77.2 ── 192.168.77.1 [router ns] 10.213.0.2 ── 10.213.0.1 [host] coordinator
// The host gets an explicit "unreachable" route for the home subnet, so nothing
// it sends there can leave the machine.
NatNetwork::NatNetwork() : tag_(std::to_string(::getpid() % 100000)) {
  home = "ighome" + tag_;
  router = "igrtr" + tag_;
  std::string wan_host = "igw" + tag_;
  lan_rtr = "iglr" + tag_;
  lan_home = "iglh" + tag_;
  wan_rtr = "igwr" + tag_;
  ok = Sh({"ip", "netns", "add", home}) && Sh({"ip", "netns", "add", router}) &&
       Sh({"ip", "link", "add", wan_host, "type", "veth", "peer", "name", wan_rtr}) &&
       Sh({"ip", "link", "set", wan_rtr, "netns", router}) &&
       Sh({"ip", "addr", "add", "10.213.0.1/30", "dev", wan_host}) && Sh({"ip", "link", "set", wan_host, "up"}) &&
       Sh({"ip", "-n", router, "addr", "add", "10.213.0.2/30", "dev", wan_rtr}) &&
       Sh({"ip", "-n", router, "link", "set", wan_rtr, "up"}) &&
       Sh({"ip", "-n", router, "link", "add", lan_rtr, "type", "veth", "peer", "name", lan_home}) &&
       Sh({"ip", "-n", router, "link", "set", lan_home, "netns", home}) &&
       Sh({"ip", "-n", router, "addr", "add", "192.168.77.1/24", "dev", lan_rtr}) &&
       Sh({"ip", "-n", router, "link", "set", lan_rtr, "up"}) &&
       Sh({"ip", "-n", home, "addr", "add", "192.168.77.2/24", "dev", lan_home}) &&
       Sh({"ip", "-n", home, "link", "set", lan_home, "up"}) && Sh({"ip", "-n", home, "link", "set", "lo", "up"}) &&
       Sh({"ip", "-n", home, "route", "add", "default", "via", "192.168.77.1"}) &&
       Sh({"ip", "netns", "exec", router, "sysctl", "-qw", "net.ipv4.ip_forward=1"}) &&
       Sh({"ip", "netns", "exec", router, "iptables", "-t", "nat", "-A", "POSTROUTING", "-o", wan_rtr, "-j",
           "MASQUERADE"}) &&
       Sh({"ip", "route", "add", "unreachable", "192.168.77.0/24"});
}
NatNetwork::~NatNetwork() {
  RunCommand({"ip", "route", "del", "unreachable", "192.168.77.0/24"});
  RunCommand({"ip", "link", "del", "igw" + tag_});
  RunCommand({"ip", "netns", "del", home});
  RunCommand({"ip", "netns", "del", router});
}

std::string NetemMissing() {
  auto probe = RunCommand({"tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"}, 10);
  if (probe.exit_code != 0) return "no tc netem on this kernel (" + Trim(probe.err) + ")";
  RunCommand({"tc", "qdisc", "del", "dev", "lo", "root"}, 10);
  return "";
}

namespace {

sockaddr_in Address(const std::string& host, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  return a;
}

}  // namespace

DelayRelay::DelayRelay(const std::string& listen_host, const std::string& target_host, int target_port, int delay_ms)
    : target_host_(target_host), target_port_(target_port), delay_ms_(delay_ms) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = Address(listen_host, 0);
  socklen_t len = sizeof a;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listen_fd_, 16) != 0 || ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    status_ = Status::Internal("delay relay on " + listen_host + ": " + std::strerror(errno));
    return;
  }
  port_ = ntohs(a.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

DelayRelay::~DelayRelay() {
  stopping_ = true;
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
  for (int fd : fds_) ::close(fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void DelayRelay::AcceptLoop() {
  while (!stopping_) {
    int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR) continue;
      return;  // shut down
    }
    int upstream = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = Address(target_host_, target_port_);
    if (upstream < 0 || ::connect(upstream, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(client);
      if (upstream >= 0) ::close(upstream);
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    fds_.push_back(client);
    fds_.push_back(upstream);
    threads_.emplace_back([this, client, upstream] { Pump(client, upstream); });
    threads_.emplace_back([this, client, upstream] { Pump(upstream, client); });
  }
}

// Reads `from` as bytes arrive, writes each chunk to `to` once it is
// delay_ms old, in order. A closed side closes the other's direction.
void DelayRelay::Pump(int from, int to) {
  using Clock = std::chrono::steady_clock;
  std::deque<std::pair<Clock::time_point, std::string>> queue;
  bool open = true;
  while (!stopping_ && (open || !queue.empty())) {
    int wait_ms = -1;
    if (!queue.empty()) {
      auto due = queue.front().first + std::chrono::milliseconds(delay_ms_);
      wait_ms = static_cast<int>(
          std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(due - Clock::now()).count()));
    }
    if (open) {
      pollfd p{from, POLLIN, 0};
      int n = ::poll(&p, 1, wait_ms);
      if (n > 0) {
        char buf[16384];
        ssize_t got = ::read(from, buf, sizeof buf);
        if (got <= 0) {
          open = false;
        } else {
          queue.emplace_back(Clock::now(), std::string(buf, static_cast<size_t>(got)));
        }
      }
    } else if (wait_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    }
    while (!queue.empty() && Clock::now() >= queue.front().first + std::chrono::milliseconds(delay_ms_)) {
      const std::string& chunk = queue.front().second;
      size_t sent = 0;
      while (sent < chunk.size()) {
        ssize_t w = ::send(to, chunk.data() + sent, chunk.size() - sent, MSG_NOSIGNAL);
        if (w <= 0) {
          ::shutdown(from, SHUT_RD);
          return;
        }
        sent += static_cast<size_t>(w);
      }
      queue.pop_front();
    }
  }
  ::shutdown(to, SHUT_WR);
}

}  // namespace idlegrid::testing
