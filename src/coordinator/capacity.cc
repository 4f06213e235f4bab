// The coordinator's view of capacity: verified advertisements, readiness
// benchmarks (a node takes no ordinary work until it ran a known job through
// the real sandbox with the right answer), and what each device can still take.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>

#include "advert/advertisement.h"
#include "advert/allocatable.h"
#include "common/digest.h"
#include "common/fs.h"
#include "common/random.h"
#include "coordinator/coordinator.h"
#include "jobs/task_state.h"
#include "readiness/bench_image.h"
#include "readiness/readiness.h"

namespace idlegrid::coordinator {

std::string Coordinator::StackOf(const v1::Advertisement& ad) {
  // What a measurement is valid for: a new agent or driver is measured again.
  std::string stack = ad.agent_version();
  for (const auto& d : ad.inventory().gpus().devices()) {
    if (!d.simulated()) stack += "|" + d.uuid() + "@" + d.driver_version();
  }
  return stack;
}

Status Coordinator::CheckSimulated(const v1::Advertisement& ad) const {
  if (options_.allow_simulated_gpus) return Status::Ok();
  for (const auto& d : ad.inventory().gpus().devices()) {
    if (d.simulated()) {
      return Status::PermissionDenied("advertisement lists simulated GPU '" + d.name() +
                                      "'; this coordinator accepts simulated devices only when started with "
                                      "--allow-simulated-gpus");
    }
  }
  return Status::Ok();
}

Status Coordinator::AcceptAdvertisement(const std::string& node_id, const v1::SignedAdvertisement& signed_ad) {
  std::string public_key;
  uint64_t last_sequence = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = nodes_.find(node_id);
    if (it != nodes_.end() && !it->second.public_key.empty()) {
      public_key = it->second.public_key;
      last_sequence = it->second.last_sequence;
    }
  }
  if (public_key.empty()) {
    IG_ASSIGN_OR_RETURN(auto rec, store_->GetNode(node_id));
    if (!rec) return Status::NotFound("node " + node_id + " is not registered");
    public_key = rec->public_key;
    last_sequence = rec->last_sequence;
  }
  advert::AdvertError error = advert::AdvertError::kNone;
  auto verified = advert::VerifyAdvertisement(signed_ad, public_key, last_sequence, &error);
  Status st = verified.ok() ? Status::Ok() : verified.status();
  if (st.ok() && verified->ad.node_id() != node_id) {
    st = Status::PermissionDenied("advertisement is for node " + verified->ad.node_id() + ", sent with the token of " +
                                  node_id);
  }
  if (st.ok()) st = CheckSimulated(verified->ad);
  if (!st.ok()) {
    spdlog::warn("advertisement from node {} rejected: {}", node_id, st.message());
    return st;
  }
  const v1::Advertisement& ad = verified->ad;
  IG_RETURN_IF_ERROR(store_->RecordAdvertisement(node_id, ad.sequence(), ad));
  {
    std::lock_guard<std::mutex> lock(mu_);
    NodeLive& live = nodes_[node_id];
    live.public_key = public_key;
    // Two heartbeats may race past the store; the memory copy only moves forward too.
    if (ad.sequence() > live.last_sequence) {
      live.last_sequence = ad.sequence();
      live.ad = ad;
    }
  }
  spdlog::debug("advertisement {} of node {} accepted", ad.sequence(), node_id);
  Notify();
  return Status::Ok();
}

Status Coordinator::PrepareBenchmark(const std::string& bench_binary, const std::string& work_dir) {
  auto fail = [&](const Status& st) {
    std::lock_guard<std::mutex> lock(mu_);
    bench_error_ = "no readiness benchmark on the coordinator: " + st.message();
    spdlog::error("{}", bench_error_);
    return st;
  };
  if (Status st = MakeDirs(work_dir, 0700); !st.ok()) return fail(st);
  std::string archive = work_dir + "/readiness-bench.tar";
  auto built = readiness::BuildBenchImage(bench_binary, archive);
  if (!built.ok()) return fail(built.status());
  auto writer = artifacts_->NewWriter("", 0);
  if (!writer.ok()) return fail(writer.status());
  {
    std::ifstream in(archive, std::ios::binary);
    std::vector<char> buf(1 << 20);
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      if (Status st = (*writer)->Append(buf.data(), static_cast<size_t>(in.gcount())); !st.ok()) return fail(st);
    }
  }
  auto digest = (*writer)->Commit();
  std::remove(archive.c_str());
  if (!digest.ok()) return fail(digest.status());
  if (Status st = RecordArtifact(*digest, (*writer)->size(), "image"); !st.ok()) return fail(st);
  auto image = RegisterImage(*digest);
  if (!image.ok()) return fail(image.status());
  std::lock_guard<std::mutex> lock(mu_);
  bench_image_ = image->image();
  bench_error_.clear();
  spdlog::info("readiness benchmark image {}", bench_image_);
  return Status::Ok();
}

std::string Coordinator::UnschedulableReasonLocked(const NodeLive& node) const {
  if (node.ad.sequence() == 0) return "no advertisement yet";
  if (!node.ad.policy().accept_jobs()) return "paused by its owner";
  const v1::Measurement& m = node.measurement;
  bool current = m.agent_version() == StackOf(node.ad);
  if (m.measured_at_ms() == 0 || !current) {
    if (!bench_error_.empty()) return bench_error_;
    return m.measured_at_ms() == 0 ? "readiness benchmark pending" : "re-measuring after an agent or driver change";
  }
  if (!m.passed()) return "readiness benchmark failed: " + m.reason();
  return "";
}

std::vector<v1::GpuDevice> Coordinator::AccountedGpusLocked(const std::string& node_id, const NodeLive& node,
                                                            const std::vector<store::ActiveAttempt>& active) const {
  std::vector<v1::GpuDevice> devices(node.ad.inventory().gpus().devices().begin(),
                                     node.ad.inventory().gpus().devices().end());
  std::vector<advert::DeviceHold> holds;
  for (const auto& a : active) {
    if (a.node_id != node_id) continue;
    for (const auto& uuid : a.device_uuids) {
      // Holds are recorded per attempt; the per-GPU amount is the job's
      // gpuMemory, or the whole device when it named none.
      uint64_t amount = a.gpu_memory_bytes;
      if (amount == 0) {
        for (const auto& d : devices) {
          if (d.uuid() == uuid) amount = d.memory_total_bytes();
        }
      }
      holds.push_back({uuid, amount});
    }
  }
  auto accounted = advert::ComputeAllocatable(devices, node.ad.policy(), holds);
  for (auto& d : accounted) d.set_measured(false);  // no GPU benchmark yet: never trusted as measured
  return accounted;
}

void Coordinator::EnsureReadiness() {
  struct Needed {
    std::string node_id;
    std::string stack;
  };
  std::vector<Needed> needed;
  std::string image;
  int64_t now = clock_->NowMs();
  {
    std::lock_guard<std::mutex> lock(mu_);
    image = bench_image_;
    if (image.empty()) return;
    for (auto& [id, n] : nodes_) {
      if (!n.online || !n.session || n.ad.sequence() == 0 || !n.readiness_job.empty()) continue;
      bool current = n.measurement.measured_at_ms() > 0 && n.measurement.agent_version() == StackOf(n.ad);
      if (current && n.measurement.passed()) continue;
      if (current && now - n.readiness_failed_ms < options_.bench_retry_ms) continue;
      needed.push_back({id, StackOf(n.ad)});
      n.readiness_job = "pending";
    }
  }
  for (const auto& need : needed) {
    uint64_t seed = std::stoull(RandomHex(7), nullptr, 16);  // fresh per run: no canned answers
    v1::JobSpec spec;
    spec.set_api_version("idlegrid/v1");
    spec.set_name("readiness");
    spec.set_image(image);
    spec.add_command(readiness::kBenchPathInImage);
    for (const auto& a : readiness::BenchArgs(options_.bench_iterations, seed, "/out")) spec.add_args(a);
    spec.mutable_resources()->set_cpu(1);
    spec.mutable_resources()->set_memory_bytes(256ull << 20);
    spec.mutable_resources()->set_disk_bytes(1ull << 20);
    spec.mutable_resources()->set_pids(16);
    spec.set_output_path("/out");
    spec.set_run_timeout_seconds(120);
    spec.set_queue_timeout_seconds(600);
    spec.set_array_count(1);
    spec.set_runtime("runc");
    spec.set_pinned_node(need.node_id);
    spec.set_readiness(true);
    std::string job_id = NewId("j");
    Status st = store_->CreateJob(job_id, spec, Sha256Digest(spec.SerializeAsString()), now);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = nodes_.find(need.node_id);
    if (it == nodes_.end()) continue;
    it->second.readiness_job = st.ok() ? job_id : "";
    if (st.ok()) spdlog::info("node {}: readiness benchmark job {}", need.node_id, job_id);
  }
}

void Coordinator::JudgeReadiness(const std::string& job_id) {
  auto job = store_->GetJob(job_id);
  if (!job.ok() || !job->spec().readiness() || !jobs::IsSettled(*job)) return;
  const v1::JobSpec& spec = job->spec();
  const std::string& node_id = spec.pinned_node();
  v1::Measurement m;
  const v1::Task& task = job->tasks(0);
  if (task.state() != v1::SUCCEEDED) {
    m.set_reason("benchmark job " + std::string(jobs::StateName(task.state())) +
                 (task.message().empty() ? "" : ": " + task.message()));
  } else {
    const v1::Attempt& a = task.attempts(task.attempts_size() - 1);
    std::string digest;
    for (const auto& o : a.outputs()) {
      if (o.path() == "result.txt" && o.size() <= 4096) digest = o.digest();
    }
    auto text = digest.empty() ? Result<std::string>(Status::NotFound("no result.txt in the benchmark's outputs"))
                               : ReadFile(artifacts_->PathOf(digest));
    auto parsed = text.ok() ? readiness::ParseBenchResult(*text) : Result<readiness::BenchResult>(text.status());
    if (!parsed.ok()) {
      m.set_reason("benchmark output rejected: " + parsed.status().message());
    } else {
      uint64_t iterations = std::stoull(spec.args(0));
      uint64_t seed = std::stoull(spec.args(1));
      m = readiness::Judge(*parsed, seed, iterations, options_.min_cpu_score);
    }
  }
  m.set_measured_at_ms(clock_->NowMs());
  std::lock_guard<std::mutex> lock(mu_);
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) return;
  m.set_agent_version(StackOf(it->second.ad));
  it->second.measurement = m;
  it->second.readiness_job.clear();
  if (!m.passed()) it->second.readiness_failed_ms = m.measured_at_ms();
  (void)store_->RecordMeasurement(node_id, m);
  if (m.passed()) {
    spdlog::info("node {} measured: cpu score {:.3g} rounds/s; schedulable", node_id, m.cpu_score());
  } else {
    spdlog::warn("node {} failed its readiness benchmark: {}", node_id, m.reason());
  }
  ++version_;
  dirty_ = true;
  cv_.notify_all();
}

}  // namespace idlegrid::coordinator
