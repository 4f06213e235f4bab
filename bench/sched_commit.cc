// Scheduling committed to a real store: the fleet and queue of
// bench/sched_core.cc (10,000 simulated nodes with mixed GPU classes, 100,000
// queued single-GPU tasks), planned by the pure pipeline scheduler, then
// committed through Store::CommitAssignments in batches (one transaction per
// scheduling cycle, capacity re-checked per node inside it) on SQLite (a
// temporary file) and on PostgreSQL (a throwaway local cluster started with
// scripts/pg-test-cluster.sh, or IDLEGRID_BENCH_PG_URL). Prints placements
// per second for the core alone and committed on each store, and counts
// double allocations from the database at the end (must be 0).
//
//   bench_sched_commit [nodes] [tasks] [batch] [seed] [sqlite|postgres|both]
#include <libpq-fe.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "bench_fleet.h"
#include "sched/pipeline.h"
#include "store/store.h"

namespace {

using idlegrid::sched::NodeView;
using idlegrid::sched::Placement;
using idlegrid::sched::TaskView;
namespace v1 = idlegrid::v1;
namespace store = idlegrid::store;
using idlegrid::bench::kGiB;
constexpr uint32_t kCores = idlegrid::bench::kFleetCores;
constexpr uint64_t kMemory = idlegrid::bench::kFleetMemory;
constexpr uint32_t kTasksPerJob = 100;

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
// This process's CPU seconds (user + system), all threads.
double CpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

using idlegrid::bench::Fleet;

// As sched_core's queue, except that a job's 100 tasks share one shape (the
// store keeps resources per job).
std::vector<TaskView> Queue(size_t count, std::mt19937_64& rng) {
  std::vector<TaskView> tasks;
  std::uniform_real_distribution<double> u(0, 1);
  double kind = 0;
  for (size_t i = 0; i < count; ++i) {
    if (i % kTasksPerJob == 0) kind = u(rng);
    TaskView t;
    t.job_id = "job-" + std::to_string(i / kTasksPerJob);
    t.index = static_cast<uint32_t>(i % kTasksPerJob);
    t.runtime = "runc";
    t.image = "sha256:trainer";
    t.resources.set_gpus(1);
    t.resources.set_cpu(4);
    t.resources.set_memory_bytes(32 * kGiB);
    if (kind < 0.5) {
      t.resources.set_gpu_memory_bytes(8 * kGiB);
    } else if (kind < 0.8) {
      t.resources.set_gpu_memory_bytes(20 * kGiB);
    } else {
      t.resources.set_gpu_memory_bytes(40 * kGiB);
      t.min_compute_capability = "8.0";
    }
    tasks.push_back(std::move(t));
  }
  return tasks;
}

store::NodeRecord RecordOf(const NodeView& n, size_t i) {
  store::NodeRecord r;
  r.id = n.id;
  r.name = n.id;
  r.info.set_hostname(n.id);
  r.info.set_cpu_cores(kCores);
  r.info.set_memory_bytes(kMemory);
  r.info.add_runtimes("runc");
  r.info.set_region(n.region);
  r.info.set_gpus(static_cast<uint32_t>(n.gpus.size()));
  r.registered_ms = 1;
  r.last_sequence = 1;
  r.advertisement.set_node_id(n.id);
  r.advertisement.set_sequence(1);
  r.advertisement.set_region(n.region);
  r.advertisement.mutable_policy()->set_accept_jobs(true);
  r.advertisement.mutable_policy()->set_allow_gpu_sharing(true);
  for (const auto& [cls, ask] : n.asks) {
    v1::PriceAsk* a = r.advertisement.add_asks();
    a->set_device_class(cls);
    a->set_per_hour(ask);
  }
  for (const auto& g : n.gpus) *r.advertisement.mutable_inventory()->mutable_gpus()->add_devices() = g;
  (void)i;
  return r;
}

v1::JobSpec SpecOf(const TaskView& t) {
  v1::JobSpec s;
  s.set_api_version("idlegrid/v1");
  s.set_name(t.job_id);
  s.set_image(t.image);
  *s.mutable_resources() = t.resources;
  s.mutable_constraints()->set_min_compute_capability(t.min_compute_capability);
  s.set_runtime(t.runtime);
  s.set_output_path("/out");
  s.set_array_count(kTasksPerJob);
  return s;
}

// Double allocations from the database, through a connection of its own: a
// device held by two active attempts, a task with two attempts, a node over
// its cores or memory.
const char* kDoubleAllocationQuery =
    "SELECT (SELECT COUNT(*) FROM (SELECT devices FROM attempts WHERE state IN (2, 3) AND devices <> '' "
    "GROUP BY devices HAVING COUNT(*) > 1) d) + "
    "(SELECT COUNT(*) FROM (SELECT job_id, idx FROM attempts GROUP BY job_id, idx HAVING COUNT(*) > 1) t) + "
    "(SELECT COUNT(*) FROM (SELECT node_id FROM attempts WHERE state IN (2, 3) GROUP BY node_id "
    "HAVING SUM(cpu) > 128 OR SUM(memory) > 1099511627776) n)";
const char* kActiveQuery = "SELECT COUNT(*) FROM attempts WHERE state IN (2, 3)";

int64_t SqliteCount(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  sqlite3_stmt* stmt = nullptr;
  int64_t n = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK &&
      sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
    n = sqlite3_column_int64(stmt, 0);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return n;
}

int64_t PgCount(const std::string& url, const char* sql) {
  PGconn* c = PQconnectdb(url.c_str());
  int64_t n = -1;
  if (PQstatus(c) == CONNECTION_OK) {
    PGresult* r = PQexec(c, sql);
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
      n = std::strtoll(PQgetvalue(r, 0, 0), nullptr, 10);
    else
      std::fprintf(stderr, "%s\n", PQresultErrorMessage(r));
    PQclear(r);
  }
  PQfinish(c);
  return n;
}

struct Outcome {
  size_t committed = 0;
  size_t batches = 0;
  double seconds = 0;      // commits only, wall
  double cpu_seconds = 0;  // commits only, this process's CPU (for SQLite: all of the work)
  int64_t double_allocations = -1;
  int64_t active = -1;
  double setup_seconds = 0;
};

bool Commit(store::Store& s, const std::vector<NodeView>& fleet, const std::vector<TaskView>& queue,
            const std::vector<Placement>& placements, size_t batch_size, Outcome* out) {
  auto setup = Clock::now();
  for (size_t i = 0; i < fleet.size(); ++i) {
    auto st = s.UpsertNode(RecordOf(fleet[i], i), "tok-" + fleet[i].id);
    if (!st.ok()) {
      std::fprintf(stderr, "register: %s\n", st.ToString().c_str());
      return false;
    }
  }
  for (size_t i = 0; i < queue.size(); i += kTasksPerJob) {
    auto st = s.CreateJob(queue[i].job_id, SpecOf(queue[i]), "sha256:" + queue[i].job_id, 1);
    if (!st.ok()) {
      std::fprintf(stderr, "create job: %s\n", st.ToString().c_str());
      return false;
    }
  }
  out->setup_seconds = Since(setup);
  size_t next_id = 0;
  auto start = Clock::now();
  const double cpu_start = CpuSeconds();
  for (size_t i = 0; i < placements.size(); i += batch_size) {
    std::vector<store::NewAttempt> batch;
    batch.reserve(batch_size);
    for (size_t k = i; k < std::min(placements.size(), i + batch_size); ++k) {
      const Placement& p = placements[k];
      store::NewAttempt a{"a" + std::to_string(next_id++), p.job_id, p.index, p.node_id, 2, p.device_uuids};
      a.placement.set_policy(p.policy);
      a.placement.set_pricing_rule(p.pricing_rule);
      a.placement.set_ask_per_gpu_hour(p.ask_per_gpu_hour);
      a.placement.set_bid_per_gpu_hour(p.bid_per_gpu_hour);
      a.placement.set_price_per_hour(p.price_per_hour);
      a.placement.set_estimated_cost(p.estimated_cost);
      a.placement.set_gpu_milli(p.gpu_milli);
      batch.push_back(std::move(a));
    }
    auto done = s.CommitAssignments(batch);
    if (!done.ok()) {
      std::fprintf(stderr, "commit: %s\n", done.status().ToString().c_str());
      return false;
    }
    out->committed += done->size();
    ++out->batches;
  }
  out->seconds = Since(start);
  out->cpu_seconds = CpuSeconds() - cpu_start;
  return true;
}

std::string Shell(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  if (::pclose(p) != 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

void Print(const char* name, const Outcome& o, size_t planned, double plan_seconds) {
  std::printf("%-10s %9zu %9zu %8zu %9.3f %14.0f %14.0f %14.0f %10lld\n", name, planned, o.committed, o.batches,
              o.seconds, o.committed / o.seconds, o.committed / o.cpu_seconds, o.committed / (o.seconds + plan_seconds),
              static_cast<long long>(o.double_allocations));
}

}  // namespace

int main(int argc, char** argv) {
  const size_t node_count = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 10000;
  const size_t task_count = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 100000;
  const size_t batch_size = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 5000;
  const uint64_t seed = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 42;
  const std::string which = argc > 5 ? argv[5] : "both";
  std::mt19937_64 rng(seed);
  const std::vector<NodeView> fleet = Fleet(node_count, rng);
  const std::vector<TaskView> queue = Queue(task_count, rng);
  size_t devices = 0;
  for (const auto& n : fleet) devices += n.gpus.size();
  std::printf("fleet: %zu nodes, %zu GPUs; queue: %zu single-GPU tasks in %zu jobs; %zu placements per commit\n",
              fleet.size(), devices, queue.size(), queue.size() / kTasksPerJob, batch_size);

  idlegrid::sched::PipelineOptions options;
  options.seed = seed;
  auto scheduler = idlegrid::sched::NewPipelineScheduler(options);
  std::vector<NodeView> copy = fleet;
  auto start = Clock::now();
  idlegrid::sched::Plan plan = scheduler->Schedule(std::move(copy), queue);
  const double plan_seconds = Since(start);
  std::printf("core (balanced): %zu placed in %.3f s = %.0f placements/s\n", plan.placements.size(), plan_seconds,
              plan.placements.size() / plan_seconds);
  std::printf(
      "(per CPU-s: committed placements per CPU second of this process; on PostgreSQL the server's work "
      "is not in it)\n\n");
  std::printf("%-10s %9s %9s %8s %9s %14s %14s %14s %10s\n", "store", "planned", "committed", "commits", "seconds",
              "committed/s", "per CPU-s", "plan+commit/s", "double");
  int rc = 0;

  if (which == "both" || which == "sqlite") {
    std::string dir = std::filesystem::temp_directory_path() / ("bench-commit-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::string path = dir + "/idlegrid.db";
    Outcome o;
    {
      auto s = store::OpenSqliteStore(path);
      if (!s.ok() || !Commit(**s, fleet, queue, plan.placements, batch_size, &o)) rc = 1;
    }
    o.double_allocations = SqliteCount(path, kDoubleAllocationQuery);
    o.active = SqliteCount(path, kActiveQuery);
    Print("sqlite", o, plan.placements.size(), plan_seconds);
    if (o.double_allocations != 0 || o.active != static_cast<int64_t>(o.committed)) rc = 1;
    std::filesystem::remove_all(dir);
  }

  if (which == "both" || which == "postgres") {
    std::string url;
    std::string cluster;
    if (const char* env = std::getenv("IDLEGRID_BENCH_PG_URL"); env != nullptr && *env) {
      url = env;
    } else {
      char tmpl[] = "/tmp/igbench.XXXXXX";
      if (::mkdtemp(tmpl) != nullptr) {
        cluster = tmpl;
        url = Shell(std::string("'") + IDLEGRID_SOURCE_DIR + "/scripts/pg-test-cluster.sh' start '" + cluster + "'");
      }
    }
    if (url.rfind("postgres", 0) != 0) {
      std::fprintf(stderr,
                   "no PostgreSQL server (scripts/pg-test-cluster.sh start failed; set IDLEGRID_BENCH_PG_URL)\n");
      rc = 1;
    } else {
      // A schema of its own, so a shared server is left as it was.
      const std::string schema = "bench_commit_" + std::to_string(::getpid());
      (void)PgCount(url, ("CREATE SCHEMA " + schema + "; SELECT 0").c_str());
      const std::string in_schema =
          url + (url.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" + schema;
      Outcome o;
      {
        auto s = store::OpenPostgresStore(in_schema);
        if (!s.ok()) std::fprintf(stderr, "%s\n", s.status().ToString().c_str());
        if (!s.ok() || !Commit(**s, fleet, queue, plan.placements, batch_size, &o)) rc = 1;
      }
      o.double_allocations = PgCount(in_schema, kDoubleAllocationQuery);
      o.active = PgCount(in_schema, kActiveQuery);
      Print("postgres", o, plan.placements.size(), plan_seconds);
      if (o.double_allocations != 0 || o.active != static_cast<int64_t>(o.committed)) rc = 1;
      (void)PgCount(url, ("DROP SCHEMA " + schema + " CASCADE; SELECT 0").c_str());
    }
    if (!cluster.empty()) {
      (void)Shell(std::string("'") + IDLEGRID_SOURCE_DIR + "/scripts/pg-test-cluster.sh' stop '" + cluster +
                  "' >/dev/null 2>&1");
    }
  }
  std::printf(
      "\ndouble allocations are counted from the database after the last commit (devices held twice, "
      "tasks granted twice, nodes over their cores or memory)\n");
  return rc;
}
