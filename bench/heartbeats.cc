// bench/heartbeats: heartbeat throughput of one coordinator, and how fast it
// notices a dead agent.
//
// 1. Throughput. A real coordinator process (started through the e2e Grid);
//    this process simulates --nodes agents that register like the real agent
//    does (pinned CA, join token, Ed25519 node key, signed advertisement) and
//    then send Heartbeat RPCs with their own agent token over --channels
//    shared TLS channels, using the async gRPC client (many calls in flight).
//    (a) closed loop: a fixed window of calls in flight, as fast as the
//        coordinator answers; (b) open loop: calls sent at a fixed offered
//        rate, latency measured from each call's *intended* send time (no
//        coordinated omission).
// 2. Detection. A coordinator with a short heartbeat interval and two real
//    agents; a long `sleep` job runs, its agent is killed with SIGKILL, and the
//    time until the attempt fails NODE_LOST (task re-queued) is measured;
//    the killed agent is restarted (same data dir) for the next trial.
//
// Prints figures; asserts nothing; exits non-zero only if it cannot run.
// Needs root (it creates the agents' users), like bench_dispatch.
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "advert/node_key.h"
#include "agent/advertiser.h"
#include "common/clock.h"
#include "common/grpc_status.h"
#include "common/version.h"
#include "discovery/host.h"
#include "e2e/harness.h"
#include "jobs/task_state.h"
#include "manifest/manifest.h"
#include "pki/pki.h"

using namespace idlegrid;
using namespace idlegrid::testing;

namespace {

struct Options {
  int nodes = 2000;
  int channels = 48;
  int threads = 2;
  int window = 256;                               // closed loop: calls in flight
  std::vector<int> rates = {20000, 10000, 5000};  // open loop: offered heartbeats/s, one phase each
  int seconds = 10;                               // per throughput phase
  int interval_ms = 5000;                         // coordinator heartbeat interval in the throughput run
  int trials = 20;
  int detect_interval_ms = 500;
  int detect_margin = 3;
  bool throughput = true;
  bool detection = true;
  std::string perf_out;  // when set: perf record -g on the coordinator during the closed loop
};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double Pct(std::vector<double>& v, double p) {  // v sorted
  if (v.empty()) return 0;
  size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// utime + stime of a process, in seconds.
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(s.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::atof(field.c_str());
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// The 1-minute load average: others' work on this machine shows up here.
std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one;
}

double SelfCpuSeconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// --- simulated agents ----------------------------------------------------------

struct Fleet {
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<v1::AgentService::Stub>> stubs;  // one per channel
  std::vector<std::string> auth;                               // "Bearer <agent token>", per node
  v1::HeartbeatRequest request;                                // info only: no attempts, no advertisement
};

v1::NodeInfo SimulatedInfo(int i) {
  v1::NodeInfo info;
  info.set_hostname("sim-" + std::to_string(i));
  info.set_cpu_cores(4);
  info.set_memory_bytes(uint64_t{8} << 30);
  info.add_runtimes("runc");
  info.set_agent_version(AgentVersionString() + " (bench)");
  info.set_gpus(0);
  return info;
}

Status BuildFleet(const Grid& grid, const Options& opt, Fleet* fleet) {
  IG_ASSIGN_OR_RETURN(std::string ca, pki::FetchPinnedCa(grid.grpc_addr, grid.ca_hash));
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = ca;
  auto creds = grpc::SslCredentials(tls);
  for (int c = 0; c < opt.channels; ++c) {
    grpc::ChannelArguments args;
    args.SetSslTargetNameOverride("idlegrid-coordinator");
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // its own TCP+TLS connection
    args.SetInt("idlegrid.bench.channel", c);
    auto ch = grpc::CreateCustomChannel(grid.grpc_addr, creds, args);
    if (!ch->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
      return Status::Unavailable("channel " + std::to_string(c) + " did not connect");
    }
    fleet->stubs.push_back(v1::AgentService::NewStub(ch));
    fleet->channels.push_back(ch);
  }
  // What a real agent advertises, minus GPUs; discovered once, shared.
  v1::HostInventory inventory = discovery::DiscoverHost({"/tmp"}, "/nonexistent", "/nonexistent");
  fleet->auth.assign(static_cast<size_t>(opt.nodes), "");
  std::atomic<int> next{0};
  std::atomic<int> failed{0};
  std::string first_error;
  std::mutex mu;
  std::vector<std::thread> workers;
  for (int w = 0; w < 8; ++w) {
    workers.emplace_back([&] {
      for (int i = next++; i < opt.nodes; i = next++) {
        agent::AdvertiserInputs in;
        in.capacity = SimulatedInfo(i);
        in.inventory = inventory;
        in.agent_version = in.capacity.agent_version();
        agent::Advertiser advertiser(advert::NodeKey::Generate());
        v1::RegisterRequest req;
        req.set_join_secret(grid.join_token);
        req.set_name("sim-" + std::to_string(i));
        *req.mutable_info() = in.capacity;
        *req.mutable_advertisement() =
            *advertiser.Next(agent::BuildAdvertisement(in), SystemClock::Get()->NowMs(), true);
        v1::RegisterResponse resp;
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
        grpc::Status s = fleet->stubs[static_cast<size_t>(i % opt.channels)]->Register(&ctx, req, &resp);
        if (!s.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (failed++ == 0) first_error = s.error_message();
          continue;
        }
        fleet->auth[static_cast<size_t>(i)] = "Bearer " + resp.agent_token();
      }
    });
  }
  for (auto& t : workers) t.join();
  if (failed > 0) return Status::Internal(std::to_string(failed.load()) + " registrations failed: " + first_error);
  *fleet->request.mutable_info() = SimulatedInfo(0);
  return Status::Ok();
}

struct Call {
  grpc::ClientContext ctx;
  v1::HeartbeatResponse resp;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<v1::HeartbeatResponse>> rpc;
  int64_t t0_ns = 0;  // intended (open loop) or actual (closed loop) send time
};

struct PhaseStats {
  uint64_t ok = 0, failed = 0, unsent = 0, done_in_window = 0;
  std::vector<double> lat_ms;  // of calls sent in the measured window
  std::string first_error;
  void Merge(const PhaseStats& o) {
    ok += o.ok;
    failed += o.failed;
    unsent += o.unsent;
    done_in_window += o.done_in_window;
    lat_ms.insert(lat_ms.end(), o.lat_ms.begin(), o.lat_ms.end());
    if (first_error.empty()) first_error = o.first_error;
  }
};

class Generator {
 public:
  Generator(Fleet* fleet, int nodes) : fleet_(fleet), nodes_(nodes) {}

  // Closed loop: `window` calls in flight across the threads for warmup + seconds.
  PhaseStats Closed(int threads, int window, int warmup_s, int seconds) {
    int64_t start = NowNs() + int64_t{warmup_s} * 1'000'000'000;
    int64_t end = start + int64_t{seconds} * 1'000'000'000;
    return RunThreads(threads, [&](int t, PhaseStats* st) {
      grpc::CompletionQueue cq;
      int mine = window / threads + (t < window % threads ? 1 : 0);
      int outstanding = 0;
      for (int k = 0; k < mine; ++k, ++outstanding) Issue(&cq, NowNs());
      void* tag;
      bool ok;
      while (outstanding > 0 && cq.Next(&tag, &ok)) {
        --outstanding;
        int64_t now = NowNs();
        Finish(static_cast<Call*>(tag), now, start, end, st);
        if (now < end) {
          Issue(&cq, now);
          ++outstanding;
        }
      }
      cq.Shutdown();
      while (cq.Next(&tag, &ok)) {
      }
    });
  }

  // Open loop: `rate` calls/s spread over the threads, sent on schedule
  // whatever the replies do (up to `cap` in flight per thread).
  PhaseStats Open(int threads, int rate, int warmup_s, int seconds) {
    int64_t begin = NowNs() + 100'000'000;
    int64_t start = begin + int64_t{warmup_s} * 1'000'000'000;
    int64_t end = start + int64_t{seconds} * 1'000'000'000;
    constexpr int kCap = 200000;
    return RunThreads(threads, [&](int t, PhaseStats* st) {
      grpc::CompletionQueue cq;
      double period = 1e9 * threads / rate;
      int64_t first = begin + static_cast<int64_t>(period * t / threads);  // interleave the threads
      uint64_t k = 0;
      int outstanding = 0;
      int64_t give_up = end + 30'000'000'000LL;
      while (true) {
        int64_t now = NowNs();
        int64_t next = first + static_cast<int64_t>(period * static_cast<double>(k));
        while (next <= now && next < end) {
          if (outstanding < kCap) {
            Issue(&cq, next);
            ++outstanding;
          } else if (next >= start) {
            ++st->unsent;
          }
          next = first + static_cast<int64_t>(period * static_cast<double>(++k));
        }
        if (next >= end && (outstanding == 0 || now > give_up)) break;
        int64_t wait_until = next < end ? next : now + 50'000'000;
        void* tag;
        bool ok;
        auto deadline =
            std::chrono::system_clock::now() + std::chrono::nanoseconds(std::max<int64_t>(0, wait_until - now));
        while (true) {
          auto r = cq.AsyncNext(&tag, &ok, deadline);
          if (r != grpc::CompletionQueue::GOT_EVENT) break;
          --outstanding;
          Finish(static_cast<Call*>(tag), NowNs(), start, end, st);
          deadline = std::chrono::system_clock::now();  // drain what is ready, then send again
        }
      }
      cq.Shutdown();
      void* tag;
      bool ok;
      while (cq.Next(&tag, &ok)) Finish(static_cast<Call*>(tag), NowNs(), start, end, st);
    });
  }

 private:
  template <typename Fn>
  PhaseStats RunThreads(int threads, Fn fn) {
    std::vector<PhaseStats> per(static_cast<size_t>(threads));
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) ts.emplace_back([&, t] { fn(t, &per[static_cast<size_t>(t)]); });
    for (auto& t : ts) t.join();
    PhaseStats all;
    for (auto& p : per) all.Merge(p);
    std::sort(all.lat_ms.begin(), all.lat_ms.end());
    return all;
  }

  void Issue(grpc::CompletionQueue* cq, int64_t t0) {
    int node = static_cast<int>(next_node_++ % static_cast<uint64_t>(nodes_));
    auto* c = new Call;
    c->t0_ns = t0;
    c->ctx.AddMetadata("authorization", fleet_->auth[static_cast<size_t>(node)]);
    c->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    c->rpc =
        fleet_->stubs[static_cast<size_t>(node) % fleet_->stubs.size()]->AsyncHeartbeat(&c->ctx, fleet_->request, cq);
    c->rpc->Finish(&c->resp, &c->status, c);
  }

  static void Finish(Call* c, int64_t now, int64_t start, int64_t end, PhaseStats* st) {
    if (c->t0_ns >= start && c->t0_ns < end) {
      if (c->status.ok()) {
        ++st->ok;
        st->lat_ms.push_back(static_cast<double>(now - c->t0_ns) / 1e6);
      } else {
        if (st->failed++ == 0) st->first_error = c->status.error_message();
      }
    }
    if (c->status.ok() && now >= start && now < end) ++st->done_in_window;
    delete c;
  }

  Fleet* fleet_;
  int nodes_;
  std::atomic<uint64_t> next_node_{0};
};

void PrintLatency(const char* what, PhaseStats& st) {
  std::printf("  %s round trip: p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  p99.9 %.2f ms  max %.2f ms\n", what,
              Pct(st.lat_ms, 50), Pct(st.lat_ms, 90), Pct(st.lat_ms, 99), Pct(st.lat_ms, 99.9), Pct(st.lat_ms, 100));
  if (st.failed)
    std::printf("  failed calls: %llu (first: %s)\n", static_cast<unsigned long long>(st.failed),
                st.first_error.c_str());
  if (st.unsent) std::printf("  not sent (in-flight cap): %llu\n", static_cast<unsigned long long>(st.unsent));
}

int RunThroughput(const Options& opt) {
  Grid grid("bench-hb");
  if (!grid.StartCoordinator({"--heartbeat-interval-ms", std::to_string(opt.interval_ms)}).ok()) {
    std::fprintf(stderr, "cannot start the coordinator\n");
    return 1;
  }
  pid_t coord = grid.coordinator->pid();
  Fleet fleet;
  int64_t t0 = NowNs();
  Status st = BuildFleet(grid, opt, &fleet);
  if (!st.ok()) {
    std::fprintf(stderr, "cannot register the simulated agents: %s\n", st.ToString().c_str());
    return 1;
  }
  double reg_s = static_cast<double>(NowNs() - t0) / 1e9;
  long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  std::printf(
      "heartbeat throughput: %d simulated agents (registered in %.1f s: %.0f/s), %d TLS channels, "
      "%d generator threads; coordinator heartbeat interval %d ms\n",
      opt.nodes, reg_s, opt.nodes / reg_s, opt.channels, opt.threads, opt.interval_ms);
  std::printf("  machine: %ld CPU cores, shared by the coordinator and this load generator (same host, loopback TLS)\n",
              cores);
  Generator gen(&fleet, opt.nodes);

  // (a) closed loop
  std::thread perf;
  if (!opt.perf_out.empty()) {
    perf = std::thread([&] {
      ::usleep(3'000'000);  // after the warm-up
      RunCommand({"perf", "record", "-F", "499", "-g", "-o", opt.perf_out, "-p", std::to_string(coord), "--", "sleep",
                  std::to_string(std::max(2, opt.seconds - 2))});
    });
  }
  double c0 = ProcessCpuSeconds(coord), s0 = SelfCpuSeconds();
  int64_t w0 = NowNs();
  std::string load0 = LoadAverage();
  PhaseStats closed = gen.Closed(opt.threads, opt.window, 2, opt.seconds);
  double wall = static_cast<double>(NowNs() - w0) / 1e9;
  double ccpu = ProcessCpuSeconds(coord) - c0, scpu = SelfCpuSeconds() - s0;
  if (perf.joinable()) perf.join();
  double rate = static_cast<double>(closed.done_in_window) / opt.seconds;
  std::printf("(a) closed loop, %d calls in flight, %d s measured after 2 s warm-up:\n", opt.window, opt.seconds);
  std::printf("  sustained: %.0f heartbeats/s (%llu ok)\n", rate,
              static_cast<unsigned long long>(closed.done_in_window));
  PrintLatency("", closed);
  double total_ok = static_cast<double>(closed.ok);
  std::printf(
      "  CPU over the phase: coordinator %.2f cores (%.0f us/heartbeat), generator %.2f cores (%.0f us/heartbeat); "
      "load average %s -> %s\n",
      ccpu / wall, total_ok > 0 ? ccpu / (rate * wall) * 1e6 : 0, scpu / wall,
      total_ok > 0 ? scpu / (rate * wall) * 1e6 : 0, load0.c_str(), LoadAverage().c_str());

  // (b) open loop, at each offered rate in turn
  for (int offered : opt.rates) {
    c0 = ProcessCpuSeconds(coord);
    s0 = SelfCpuSeconds();
    w0 = NowNs();
    load0 = LoadAverage();
    PhaseStats open = gen.Open(opt.threads, offered, 1, opt.seconds);
    wall = static_cast<double>(NowNs() - w0) / 1e9;
    ccpu = ProcessCpuSeconds(coord) - c0;
    scpu = SelfCpuSeconds() - s0;
    double achieved = static_cast<double>(open.done_in_window) / opt.seconds;
    std::printf(
        "(b) open loop, offered %d heartbeats/s for %d s (after 1 s warm-up); latency from the intended send time:\n",
        offered, opt.seconds);
    std::printf("  achieved: %.0f heartbeats/s completed in the window; %llu of %lld scheduled calls answered OK\n",
                achieved, static_cast<unsigned long long>(open.ok), static_cast<long long>(offered) * opt.seconds);
    PrintLatency("", open);
    std::printf(
        "  CPU over the phase: coordinator %.2f cores (%.0f us/heartbeat), generator %.2f cores; load average %s -> "
        "%s\n",
        ccpu / wall, open.done_in_window ? ccpu / static_cast<double>(open.done_in_window) * 1e6 : 0, scpu / wall,
        load0.c_str(), LoadAverage().c_str());
    if (offered >= 20000) {
      std::printf("  => %s the target (>= 20000/s with p99 < 50 ms)\n",
                  achieved >= 0.99 * offered && Pct(open.lat_ms, 99) < 50 && open.failed == 0 ? "meets" : "misses");
    }
    std::fflush(stdout);
  }
  std::fflush(stdout);
  return 0;
}

// --- detection -----------------------------------------------------------------

double NowMs() { return static_cast<double>(SystemClock::Get()->NowMs()); }

int RunDetection(const Options& opt) {
  Grid grid("bench-hb-detect");
  int timeout_ms = opt.detect_interval_ms * opt.detect_margin;
  if (!grid.StartCoordinator({"--heartbeat-interval-ms", std::to_string(opt.detect_interval_ms), "--heartbeat-margin",
                              std::to_string(opt.detect_margin)})
           .ok()) {
    std::fprintf(stderr, "cannot start the coordinator\n");
    return 1;
  }
  std::map<std::string, int> agent_of_node;
  for (int n = 1; n <= 2; ++n) {
    Status st = grid.StartAgent(n);
    if (!st.ok()) {
      std::fprintf(stderr, "cannot start agent %d: %s\n", n, st.ToString().c_str());
      return 1;
    }
    agent_of_node[grid.node_ids[static_cast<size_t>(n - 1)]] = n;
  }
  std::string manifest_path = grid.Manifest("sleepy", {"sleep", "600"}, "retries: 1\nidempotent: true\n");
  auto spec = manifest::LoadManifestFile(manifest_path);
  if (!spec.ok()) {
    std::fprintf(stderr, "manifest: %s\n", spec.status().ToString().c_str());
    return 1;
  }
  v1::SubmitJobRequest submit;
  *submit.mutable_spec() = *spec;

  std::vector<double> seen_ms, coord_ms;
  std::mt19937 rng(std::random_device{}());
  int not_node_lost = 0, orphans_removed = 0;
  for (int trial = 0; trial < opt.trials; ++trial) {
    v1::SubmitJobResponse resp;
    auto ctx = grid.client()->Context();
    grpc::Status s = grid.client()->stub()->SubmitJob(ctx.get(), submit, &resp);
    if (!s.ok()) {
      std::fprintf(stderr, "trial %d: submit: %s\n", trial, s.error_message().c_str());
      return 1;
    }
    std::string id = resp.job().id();
    auto running = grid.WaitJob(id, [](const v1::Job& j) {
      return j.tasks_size() > 0 && j.tasks(0).state() == v1::RUNNING && j.tasks(0).attempts_size() > 0 &&
             j.tasks(0).attempts(j.tasks(0).attempts_size() - 1).state() == v1::RUNNING;
    });
    if (!running.ok() || running->tasks(0).state() != v1::RUNNING) {
      std::fprintf(stderr, "trial %d: the job never ran: %s\n", trial,
                   running.ok() ? running->DebugString().c_str() : running.status().ToString().c_str());
      return 1;
    }
    // The container is up once the program prints "started".
    if (!grid.WaitForLog(id, "started")) {
      std::fprintf(stderr, "trial %d: the container never started\n", trial);
      return 1;
    }
    int k = running->tasks(0).attempts_size() - 1;
    std::string attempt_id = running->tasks(0).attempts(k).id();
    std::string node = running->tasks(0).attempts(k).node_id();
    if (!agent_of_node.count(node)) {
      std::fprintf(stderr, "trial %d: attempt on unknown node %s\n", trial, node.c_str());
      return 1;
    }
    int n = agent_of_node[node];
    // Kill at a random phase of the agent's heartbeat and of the coordinator's
    // check period (right after "started" would line up with the log's wake-up).
    ::usleep(static_cast<useconds_t>(std::uniform_int_distribution<int>(0, 1000 + opt.detect_interval_ms)(rng)) * 1000);
    double t_kill = NowMs();
    grid.StopAgent(n, SIGKILL);
    double t_seen = 0;
    auto lost = grid.WaitJob(
        id,
        [&](const v1::Job& j) {
          for (const auto& a : j.tasks(0).attempts()) {
            if (a.id() == attempt_id && jobs::IsTerminal(a.state())) {
              t_seen = NowMs();
              return true;
            }
          }
          return false;
        },
        60000);
    if (!lost.ok() || t_seen == 0) {
      std::fprintf(stderr, "trial %d: the attempt never failed: %s\n", trial,
                   lost.ok() ? lost->DebugString().c_str() : lost.status().ToString().c_str());
      return 1;
    }
    for (const auto& a : lost->tasks(0).attempts()) {
      if (a.id() != attempt_id) continue;
      if (a.failure_reason() != v1::NODE_LOST) ++not_node_lost;
      coord_ms.push_back(static_cast<double>(a.finished_at_ms()) - t_kill);
    }
    seen_ms.push_back(t_seen - t_kill);
    std::printf(
        "  trial %2d: agent%d killed; attempt failed %s after %.0f ms (coordinator's record: %.0f ms), task %s\n",
        trial + 1, n, v1::FailureReason_Name(lost->tasks(0).attempts(k).failure_reason()).c_str(), t_seen - t_kill,
        coord_ms.back(), jobs::StateName(lost->tasks(0).state()));
    std::fflush(stdout);

    // Clean up: cancel the job (its retry may run on the other agent), remove
    // the dead agent's orphan container, restart it on its data dir.
    v1::CancelJobRequest cancel;
    cancel.set_job_id(id);
    v1::Job cancelled;
    auto cctx = grid.client()->Context();
    (void)grid.client()->stub()->CancelJob(cctx.get(), cancel, &cancelled);
    (void)grid.WaitJob(
        id, [](const v1::Job& j) { return jobs::IsSettled(j); }, 60000);
    auto ps = RunCommand(AsAgentUser(grid, n, {"podman", "ps", "-aq"}));
    if (!ps.out.empty()) {
      RunCommand(AsAgentUser(grid, n, {"podman", "rm", "-f", "-a"}));
      orphans_removed += static_cast<int>(std::count(ps.out.begin(), ps.out.end(), '\n'));
    }
    Status st = grid.StartAgent(n);
    if (!st.ok()) {
      std::fprintf(stderr, "trial %d: cannot restart agent %d: %s\n", trial, n, st.ToString().c_str());
      return 1;
    }
  }
  std::sort(seen_ms.begin(), seen_ms.end());
  std::sort(coord_ms.begin(), coord_ms.end());
  std::printf(
      "detection: %d trials, heartbeat interval %d ms x margin %d = timeout %d ms "
      "(coordinator checks every %d ms at most)\n",
      opt.trials, opt.detect_interval_ms, opt.detect_margin, timeout_ms, 1000);
  std::printf(
      "  kill -9 -> attempt failed NODE_LOST, task re-queued (seen on WatchJob): median %.0f ms  max %.0f ms  min %.0f "
      "ms\n",
      Pct(seen_ms, 50), Pct(seen_ms, 100), Pct(seen_ms, 0));
  std::printf("  kill -9 -> coordinator's finished_at_ms of the attempt:               median %.0f ms  max %.0f ms\n",
              Pct(coord_ms, 50), Pct(coord_ms, 100));
  std::printf(
      "  target <= timeout + 1 s = %d ms: %s; attempts not failed as NODE_LOST: %d; orphan containers removed: %d\n",
      timeout_ms + 1000, Pct(seen_ms, 100) <= timeout_ms + 1000 ? "met" : "missed", not_node_lost, orphans_removed);
  return 0;
}

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto num = [&](int* v) {
      if (i + 1 >= argc) return false;
      *v = std::atoi(argv[++i]);
      return true;
    };
    bool ok = true;
    if (a == "--nodes")
      ok = num(&o->nodes);
    else if (a == "--channels")
      ok = num(&o->channels);
    else if (a == "--threads")
      ok = num(&o->threads);
    else if (a == "--window")
      ok = num(&o->window);
    else if (a == "--rate" && i + 1 < argc) {  // one rate or a comma-separated list
      o->rates.clear();
      std::stringstream list(argv[++i]);
      for (std::string r; std::getline(list, r, ',');) o->rates.push_back(std::atoi(r.c_str()));
      for (int r : o->rates) ok = ok && r > 0;
    } else if (a == "--seconds")
      ok = num(&o->seconds);
    else if (a == "--interval-ms")
      ok = num(&o->interval_ms);
    else if (a == "--trials")
      ok = num(&o->trials);
    else if (a == "--detect-interval-ms")
      ok = num(&o->detect_interval_ms);
    else if (a == "--detect-margin")
      ok = num(&o->detect_margin);
    else if (a == "--perf" && i + 1 < argc)
      o->perf_out = argv[++i];
    else if (a == "--no-throughput")
      o->throughput = false;
    else if (a == "--no-detection")
      o->detection = false;
    else
      ok = false;
    if (!ok) return false;
  }
  return o->nodes > 0 && o->channels > 0 && o->threads > 0 && o->window > 0 && !o->rates.empty() && o->seconds > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!ParseArgs(argc, argv, &opt)) {
    std::fprintf(
        stderr,
        "usage: bench_heartbeats [--nodes 2000] [--channels 48] [--threads 2] [--window 256] "
        "[--rate 20000,10000,5000] [--seconds 10] [--interval-ms 5000] [--trials 20] [--detect-interval-ms 500] "
        "[--detect-margin 3] [--perf FILE] [--no-throughput] [--no-detection]\n");
    return 2;
  }
  if (opt.throughput && RunThroughput(opt) != 0) return 1;
  if (opt.detection && RunDetection(opt) != 0) return 1;
  return 0;
}
