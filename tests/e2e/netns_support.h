#pragma once
// Network namespaces the e2e tests create (root only): a home network behind
// a masquerading router, whose links the tests cut or degrade.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"

namespace idlegrid::testing {

// Runs argv (30 s at most); a failure is a test failure naming the command.
bool Sh(const std::vector<std::string>& argv);

// A home network behind a masquerading router, all in namespaces this test creates:
//   [home ns] agent 192.168.77.2 ── 192.168.77.1 [router ns] 10.213.0.2 ── 10.213.0.1 [host] coordinator
// The host gets an explicit "unreachable" route for the home subnet, so nothing
// it sends there can leave the machine.
class NatNetwork {
 public:
  NatNetwork();
  ~NatNetwork();
  NatNetwork(const NatNetwork&) = delete;
  NatNetwork& operator=(const NatNetwork&) = delete;

  bool ok = false;
  std::string home, router;
  std::string wan_rtr;   // the router's uplink: setting it down cuts the home network off
  std::string lan_home;  // the home side of the home link (in `home`): what the agent sends leaves here
  std::string lan_rtr;   // the router's side of it (in `router`): what the agent receives leaves here

 private:
  std::string tag_;
};

// Whether this kernel has tc's netem qdisc (delay and loss); "" when it
// does, else why not (some VM kernels are built without sch_netem).
std::string NetemMissing();

// A TCP relay that holds every byte `delay_ms` before passing it on, each
// direction on its own: the latency of a long home link, for kernels
// without netem. It delays data, not TCP's own handshake and
// acknowledgements, so what it models is the latency every call and
// response meets. Listens on `listen_host`:port(); one thread per direction
// per connection.
class DelayRelay {
 public:
  DelayRelay(const std::string& listen_host, const std::string& target_host, int target_port, int delay_ms);
  ~DelayRelay();
  DelayRelay(const DelayRelay&) = delete;
  DelayRelay& operator=(const DelayRelay&) = delete;

  const Status& status() const { return status_; }
  int port() const { return port_; }

 private:
  void AcceptLoop();
  void Pump(int from, int to);

  std::string target_host_;
  int target_port_;
  int delay_ms_;
  int listen_fd_ = -1;
  int port_ = 0;
  Status status_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::vector<int> fds_;              // guarded by mu_: every socket, closed on destruction
  std::vector<std::thread> threads_;  // guarded by mu_
  std::thread acceptor_;
};

}  // namespace idlegrid::testing
