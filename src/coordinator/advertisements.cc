// The coordinator's view of capacity: verified advertisements, readiness
// benchmarks (a node takes no ordinary work until it ran a known job through
// the real sandbox with the right answer), and what each device can still take.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>

#include "advert/advertisement.h"
#include "common/fs.h"
#include "common/random.h"
#include "common/units.h"
#include "coordinator/coordinator.h"
#include "coordinator/node_views.h"
#include "jobs/task_state.h"
#include "manifest/manifest.h"
#include "readiness/bench_image.h"
#include "readiness/gpu_readiness.h"
#include "readiness/readiness.h"

namespace idlegrid::coordinator {

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
    MutexLock lock(&mu_);
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
    MutexLock lock(&mu_);
    NodeLive& live = nodes_[node_id];
    live.public_key = public_key;
    // Two heartbeats may race past the store; the memory copy only moves forward too.
    if (ad.sequence() > live.last_sequence) {
      live.last_sequence = ad.sequence();
      live.ad = ad;
      for (const auto& d : ad.inventory().gpus().devices()) {
        if (d.throttle_reasons() & sched::kThermalOrPowerThrottle) {
          ++live.throttle_reports;  // feeds reliability: a throttled GPU runs slower than measured
          break;
        }
      }
    }
  }
  spdlog::debug("advertisement {} of node {} accepted", ad.sequence(), node_id);
  changes_.Notify();
  return Status::Ok();
}

Status Coordinator::PrepareBenchmark(const std::string& bench_binary, const std::string& work_dir) {
  IG_RETURN_IF_ERROR(MakeDirs(work_dir, 0700));
  std::string archive = work_dir + "/readiness-bench.tar";
  auto built = readiness::BuildBenchImage(bench_binary, archive);
  auto image = built.ok() ? images_.ImportArchive(archive) : Result<std::string>(built.status());
  std::remove(archive.c_str());
  if (image.ok()) images_.SignOwn(*image);
  MutexLock lock(&mu_);
  if (!image.ok()) {
    bench_error_ = "no readiness benchmark on the coordinator: " + image.status().message();
    spdlog::error("{}", bench_error_);
    return image.status();
  }
  bench_image_ = *image;
  bench_error_.clear();
  spdlog::info("readiness benchmark image {}", bench_image_);
  return Status::Ok();
}

Status Coordinator::PrepareGpuBenchmark(const std::string& gpu_bench_binary, const std::string& work_dir) {
  IG_RETURN_IF_ERROR(MakeDirs(work_dir, 0700));
  std::string archive = work_dir + "/readiness-gpu-bench.tar";
  auto built = readiness::BuildGpuBenchImage(gpu_bench_binary, archive);
  auto image = built.ok() ? images_.ImportArchive(archive) : Result<std::string>(built.status());
  std::remove(archive.c_str());
  if (image.ok()) images_.SignOwn(*image);
  MutexLock lock(&mu_);
  if (!image.ok()) {
    gpu_bench_error_ = "no GPU readiness benchmark on the coordinator: " + image.status().message();
    spdlog::warn("{} (real GPUs are not offered; their nodes still run CPU work)", gpu_bench_error_);
    return image.status();
  }
  gpu_bench_image_ = *image;
  gpu_bench_error_.clear();
  spdlog::info("GPU readiness benchmark image {}", gpu_bench_image_);
  return Status::Ok();
}

std::string Coordinator::UnschedulableReasonLocked(const NodeLive& node) const {
  if (node.draining) return "draining";
  if (node.pause.paused()) return "paused by its owner: " + node.pause.reason();
  if (node.ad.sequence() == 0) return "no advertisement yet";
  if (!node.ad.policy().accept_jobs()) return "paused by its owner";
  const v1::Measurement& m = node.measurement;
  bool current = m.agent_version() == StackOf(node.ad);
  if (m.measured_at_ms() == 0 || !current) {
    if (!bench_error_.empty()) return bench_error_;
    if (std::string untrusted = images_.ReadinessKeyUntrusted(node.ad); !untrusted.empty()) {
      return "readiness benchmark pending: " + untrusted;
    }
    return m.measured_at_ms() == 0 ? "readiness benchmark pending" : "re-measuring after an agent or driver change";
  }
  if (!m.passed()) return "readiness benchmark failed: " + m.reason();
  // A GPU not yet measured (or failed) holds back only itself: see
  // GpuUnavailableReasonLocked.
  return "";
}

std::string Coordinator::GpuUnavailableReasonLocked(const NodeLive& node, const v1::GpuDevice& d) const {
  if (!d.owner_hold().empty()) return "held back by its owner: " + d.owner_hold();
  if (d.simulated()) return "";  // never measured; admitted by --allow-simulated-gpus alone
  const v1::Measurement& m = node.measurement;
  const bool current = m.measured_at_ms() > 0 && m.agent_version() == StackOf(node.ad);
  if (!current || !m.passed()) return "readiness benchmark pending: the node's CPU benchmark comes first";
  for (const auto& g : m.gpus()) {
    if (g.uuid() != d.uuid()) continue;
    if (g.passed()) return "";
    return "failed its readiness benchmark: " + g.reason();
  }
  if (gpu_bench_image_.empty()) return gpu_bench_error_;
  return "readiness benchmark pending";
}

capacity::NodeCapacity Coordinator::HeldCapacity(const NodeLive& node, const std::vector<store::ActiveAttempt>& mine) {
  capacity::NodeCapacity held = capacity::NodeCapacity::Offered(node.info, node.ad);
  for (const auto& a : mine) held.Hold({a.cpu, a.memory, a.gpu_memory_bytes, a.gpu_milli, a.device_uuids});
  return held;
}

std::vector<v1::GpuDevice> Coordinator::AccountedGpusLocked(const NodeLive& node,
                                                            const capacity::NodeCapacity& held) const {
  std::vector<v1::GpuDevice> devices(node.ad.inventory().gpus().devices().begin(),
                                     node.ad.inventory().gpus().devices().end());
  const uint64_t reserve = node.ad.policy().reserved_gpu_memory_bytes();
  // Only the coordinator's own benchmark makes a device measured; a simulated one never is.
  bool current = node.measurement.agent_version() == StackOf(node.ad);
  for (size_t i = 0; i < devices.size(); ++i) {
    v1::GpuDevice& d = devices[i];
    held.Describe(i, reserve, &d);  // the ledger lists the advertised devices first, in this order
    bool measured = false;
    for (const auto& g : node.measurement.gpus()) {
      if (g.uuid() == d.uuid() && g.passed() && current && !d.simulated()) measured = true;
    }
    d.set_measured(measured);
    d.set_unavailable_reason(GpuUnavailableReasonLocked(node, d));
  }
  return devices;
}

v1::JobSpec Coordinator::ReadinessSpec(const std::string& node_id, const std::string& image,
                                       const std::string& entrypoint, const std::vector<std::string>& args) const {
  v1::JobSpec spec;
  spec.set_api_version("idlegrid/v1");
  spec.set_name("readiness");
  spec.set_image(image);
  spec.add_command(entrypoint);
  for (const auto& a : args) spec.add_args(a);
  spec.mutable_resources()->set_cpu(1);
  spec.mutable_resources()->set_memory_bytes(256ull << 20);
  spec.mutable_resources()->set_disk_bytes(1ull << 20);
  spec.mutable_resources()->set_pids(64);
  spec.set_output_path("/out");
  spec.set_run_timeout_seconds(120);
  spec.set_queue_timeout_seconds(600);
  spec.set_array_count(1);
  spec.set_runtime("runc");
  spec.set_pinned_node(node_id);
  spec.set_readiness(true);
  spec.set_idempotent(true);  // a benchmark has no effects: a lost one just fails
  return spec;
}

void Coordinator::CreateReadinessJob(const std::string& node_id, const std::string& device_uuid,
                                     const v1::JobSpec& spec) {
  std::string job_id = NewId("j");
  Status st = store_->CreateJob(job_id, spec, manifest::SpecDigest(spec), clock_->NowMs());
  MutexLock lock(&mu_);
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) return;
  std::string& slot = device_uuid.empty() ? it->second.readiness_job : it->second.gpu_readiness_jobs[device_uuid];
  slot = st.ok() ? job_id : "";
  if (st.ok()) {
    spdlog::info("node {}: readiness benchmark job {}{}", node_id, job_id,
                 device_uuid.empty() ? "" : " for GPU " + device_uuid);
  }
}

void Coordinator::EnsureReadiness() {
  struct Needed {
    std::string node_id;
    std::string device_uuid;  // "" for the CPU benchmark
  };
  std::vector<Needed> needed;
  std::string cpu_image, gpu_image;
  int64_t now = clock_->NowMs();
  {
    MutexLock lock(&mu_);
    cpu_image = bench_image_;
    gpu_image = gpu_bench_image_;
    if (cpu_image.empty()) return;
    for (auto& [id, n] : nodes_) {
      if (!n.online || !sessions_.Connected(id) || n.draining || n.ad.sequence() == 0 || !n.readiness_job.empty())
        continue;
      bool current = n.measurement.measured_at_ms() > 0 && n.measurement.agent_version() == StackOf(n.ad);
      if (!current || !n.measurement.passed()) {
        if (current && now - n.readiness_failed_ms < options_.bench_retry_ms) continue;
        needed.push_back({id, ""});
        n.readiness_job = "pending";
        continue;
      }
      // CPU measured: now each real GPU, one pinned job per device.
      if (gpu_image.empty()) continue;
      for (const auto& d : n.ad.inventory().gpus().devices()) {
        // A device its owner holds back is measured once it is lent again.
        if (d.simulated() || !d.owner_hold().empty() || n.gpu_readiness_jobs.count(d.uuid())) continue;
        bool done = false;
        for (const auto& g : n.measurement.gpus()) {
          if (g.uuid() == d.uuid() && (g.passed() || now - g.measured_at_ms() < options_.bench_retry_ms)) done = true;
        }
        if (done) continue;
        needed.push_back({id, d.uuid()});
        n.gpu_readiness_jobs[d.uuid()] = "pending";
      }
    }
  }
  for (const auto& need : needed) {
    uint64_t seed = std::stoull(RandomHex(7), nullptr, 16);  // fresh per run: no canned answers
    if (need.device_uuid.empty()) {
      CreateReadinessJob(need.node_id, "",
                         ReadinessSpec(need.node_id, cpu_image, readiness::kBenchPathInImage,
                                       readiness::BenchArgs(options_.bench_iterations, seed, "/out")));
      continue;
    }
    v1::JobSpec spec = ReadinessSpec(need.node_id, gpu_image, readiness::kGpuBenchPathInImage,
                                     readiness::GpuBenchArgs(options_.gpu_bench_rounds, seed, "/out"));
    spec.mutable_resources()->set_gpus(1);
    // The driver's JIT and the pinned copy buffers need more than the CPU
    // benchmark; device memory is not host memory and is not counted.
    spec.mutable_resources()->set_memory_bytes(readiness::kGpuBenchHostMemoryBytes);
    spec.set_run_timeout_seconds(readiness::kGpuBenchRunTimeoutSeconds);
    spec.set_pinned_device(need.device_uuid);
    (*spec.mutable_env())["LD_LIBRARY_PATH"] = readiness::kGpuBenchLibraryPath;
    (*spec.mutable_env())["CUDA_CACHE_DISABLE"] = "1";  // the JIT's cache wants a writable HOME
    CreateReadinessJob(need.node_id, need.device_uuid, spec);
  }
}

void Coordinator::JudgeReadiness(const std::string& job_id) {
  if (auto job = store_->GetJob(job_id); job.ok()) JudgeReadiness(*job);
}

void Coordinator::JudgeReadiness(const v1::Job& read) {
  const v1::Job* job = &read;
  if (!job->spec().readiness() || !jobs::IsSettled(*job)) return;
  if (!job->spec().pinned_device().empty()) return JudgeGpuReadiness(*job);
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
  MutexLock lock(&mu_);
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) return;
  m.set_agent_version(StackOf(it->second.ad));
  it->second.measurement = m;
  it->second.readiness_job.clear();
  if (!m.passed()) it->second.readiness_failed_ms = m.measured_at_ms();
  // Kept in memory either way; a lost row only means the node is measured
  // again after a coordinator restart.
  if (Status st = store_->RecordMeasurement(node_id, m); !st.ok()) {
    spdlog::warn("node {}: measurement not stored: {}", node_id, st.message());
  }
  if (m.passed()) {
    spdlog::info("node {} measured: cpu score {:.3g} rounds/s; schedulable", node_id, m.cpu_score());
  } else {
    spdlog::warn("node {} failed its readiness benchmark: {}", node_id, m.reason());
  }
  changes_.Notify();
}

namespace {

// The benchmark job's result.txt, read from the artifact store (small files only).
Result<std::string> ResultFile(const v1::Job& job, artifacts::ArtifactStore* artifacts) {
  const v1::Task& task = job.tasks(0);
  if (task.state() != v1::SUCCEEDED) {
    std::string why = "benchmark job " + std::string(jobs::StateName(task.state())) +
                      (task.message().empty() ? "" : ": " + task.message());
    // The benchmark writes the driver's own error (the failing step and its
    // CUDA_ERROR_* name) to error.txt before it exits 3.
    if (task.attempts_size() > 0) {
      for (const auto& o : task.attempts(task.attempts_size() - 1).outputs()) {
        if (o.path() != "error.txt" || o.size() > 4096) continue;
        auto text = ReadFile(artifacts->PathOf(o.digest()));
        if (text.ok()) why += ": " + readiness::BenchErrorLine(*text);
      }
    }
    return Status::FailedPrecondition(why);
  }
  const v1::Attempt& a = task.attempts(task.attempts_size() - 1);
  for (const auto& o : a.outputs()) {
    if (o.path() == "result.txt" && o.size() <= 4096) return ReadFile(artifacts->PathOf(o.digest()));
  }
  return Status::NotFound("no result.txt in the benchmark's outputs");
}

}  // namespace

void Coordinator::JudgeGpuReadiness(const v1::Job& job) {
  const v1::JobSpec& spec = job.spec();
  const std::string& node_id = spec.pinned_node();
  const std::string& uuid = spec.pinned_device();
  v1::GpuDevice claimed;
  {
    MutexLock lock(&mu_);
    auto it = nodes_.find(node_id);
    if (it == nodes_.end()) return;
    for (const auto& d : it->second.ad.inventory().gpus().devices()) {
      if (d.uuid() == uuid) claimed = d;
    }
  }
  v1::GpuMeasurement gm;
  gm.set_uuid(uuid);
  auto text = ResultFile(job, artifacts_.get());
  auto parsed = text.ok() ? readiness::ParseGpuBenchResult(*text) : Result<readiness::GpuBenchResult>(text.status());
  if (!parsed.ok()) {
    gm.set_reason(parsed.status().message());
  } else {
    auto verdict = readiness::JudgeGpu(*parsed, std::stoull(spec.args(1)), std::stoull(spec.args(0)), claimed);
    gm.set_passed(verdict.passed);
    gm.set_reason(verdict.reason);
    gm.set_bandwidth_gbps(verdict.bandwidth_gbps);
    gm.set_kernel_seconds(verdict.kernel_seconds);
    gm.set_fp32_gflops(verdict.fp32_gflops);
    gm.set_h2d_gbps(verdict.h2d_gbps);
    gm.set_d2h_gbps(verdict.d2h_gbps);
    gm.set_allocatable_bytes(verdict.allocatable_bytes);
  }
  gm.set_measured_at_ms(clock_->NowMs());
  MutexLock lock(&mu_);
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) return;
  NodeLive& live = it->second;
  live.gpu_readiness_jobs.erase(uuid);
  auto* gpus = live.measurement.mutable_gpus();
  for (int i = 0; i < gpus->size(); ++i) {
    if (gpus->Get(i).uuid() == uuid) {
      gpus->DeleteSubrange(i, 1);
      break;
    }
  }
  *gpus->Add() = gm;
  if (Status st = store_->RecordMeasurement(node_id, live.measurement); !st.ok()) {
    spdlog::warn("node {}: GPU measurement not stored: {}", node_id, st.message());
  }
  if (gm.passed()) {
    spdlog::info(
        "node {} GPU {} measured: {:.0f} GFLOP/s FP32, {:.0f} GB/s device, {:.1f}/{:.1f} GB/s to/from host, "
        "{} allocatable; schedulable",
        node_id, uuid, gm.fp32_gflops(), gm.bandwidth_gbps(), gm.h2d_gbps(), gm.d2h_gbps(),
        FormatGiB(gm.allocatable_bytes()));
  } else {
    spdlog::warn("node {} GPU {} failed its readiness benchmark: {}", node_id, uuid, gm.reason());
  }
  changes_.Notify();
}

}  // namespace idlegrid::coordinator
