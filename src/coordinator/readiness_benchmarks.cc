#include "coordinator/readiness_benchmarks.h"

#include <spdlog/spdlog.h>

#include <cstdio>

#include "common/fs.h"
#include "common/random.h"
#include "common/units.h"
#include "coordinator/node_views.h"
#include "jobs/task_state.h"
#include "manifest/manifest.h"
#include "readiness/bench_image.h"
#include "readiness/gpu_readiness.h"
#include "readiness/readiness.h"

namespace idlegrid::coordinator {
namespace {

// The benchmark job's result.txt, read from the artifact store (small files
// only); why there is none, with the driver's own error for a GPU benchmark
// that failed.
Result<std::string> ResultFile(const v1::Job& job, artifacts::ArtifactStore* artifacts) {
  const v1::Task& task = job.tasks(0);
  if (task.state() != v1::SUCCEEDED) {
    std::string why = "benchmark job " + std::string(jobs::StateName(task.state())) +
                      (task.message().empty() ? "" : ": " + task.message());
    // The GPU benchmark writes the driver's own error (the failing step and
    // its CUDA_ERROR_* name) to error.txt before it exits 3.
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

v1::GpuMeasurement GpuMeasurementOf(Result<readiness::GpuBenchResult> parsed, const v1::JobSpec& spec,
                                    const v1::GpuDevice& claimed) {
  v1::GpuMeasurement gm;
  gm.set_uuid(spec.pinned_device());
  if (!parsed.ok()) {
    gm.set_reason(parsed.status().message());
    return gm;
  }
  auto verdict = readiness::JudgeGpu(*parsed, std::stoull(spec.args(1)), std::stoull(spec.args(0)), claimed);
  gm.set_passed(verdict.passed);
  gm.set_reason(verdict.reason);
  gm.set_bandwidth_gbps(verdict.bandwidth_gbps);
  gm.set_kernel_seconds(verdict.kernel_seconds);
  gm.set_fp32_gflops(verdict.fp32_gflops);
  gm.set_h2d_gbps(verdict.h2d_gbps);
  gm.set_d2h_gbps(verdict.d2h_gbps);
  gm.set_allocatable_bytes(verdict.allocatable_bytes);
  return gm;
}

}  // namespace

Result<std::string> ReadinessBenchmarks::Import(const std::function<Status(const std::string&)>& build,
                                                const std::string& archive) {
  Status built = build(archive);
  auto image = built.ok() ? images_->ImportArchive(archive) : Result<std::string>(built);
  std::remove(archive.c_str());
  if (image.ok()) images_->SignOwn(*image);
  return image;
}

Status ReadinessBenchmarks::PrepareCpu(const std::string& bench_binary, const std::string& work_dir) {
  IG_RETURN_IF_ERROR(MakeDirs(work_dir, 0700));
  auto image = Import([&](const std::string& a) { return readiness::BuildBenchImage(bench_binary, a).status(); },
                      work_dir + "/readiness-bench.tar");
  MutexLock lock(&mu_);
  if (!image.ok()) {
    cpu_error_ = "no readiness benchmark on the coordinator: " + image.status().message();
    spdlog::error("{}", cpu_error_);
    return image.status();
  }
  cpu_image_ = *image;
  cpu_error_.clear();
  spdlog::info("readiness benchmark image {}", cpu_image_);
  return Status::Ok();
}

Status ReadinessBenchmarks::PrepareGpu(const std::string& gpu_bench_binary, const std::string& work_dir) {
  IG_RETURN_IF_ERROR(MakeDirs(work_dir, 0700));
  auto image = Import([&](const std::string& a) { return readiness::BuildGpuBenchImage(gpu_bench_binary, a).status(); },
                      work_dir + "/readiness-gpu-bench.tar");
  MutexLock lock(&mu_);
  if (!image.ok()) {
    gpu_error_ = "no GPU readiness benchmark on the coordinator: " + image.status().message();
    spdlog::warn("{} (real GPUs are not offered; their nodes still run CPU work)", gpu_error_);
    return image.status();
  }
  gpu_image_ = *image;
  gpu_error_.clear();
  spdlog::info("GPU readiness benchmark image {}", gpu_image_);
  return Status::Ok();
}

std::string ReadinessBenchmarks::CpuBenchError() const {
  MutexLock lock(&mu_);
  return cpu_error_;
}

std::string ReadinessBenchmarks::GpuBenchError() const {
  MutexLock lock(&mu_);
  return gpu_image_.empty() ? gpu_error_ : "";
}

v1::JobSpec ReadinessBenchmarks::Spec(const std::string& node_id, const std::string& image,
                                      const std::string& entrypoint, const std::vector<std::string>& args) {
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

v1::JobSpec ReadinessBenchmarks::GpuSpec(const std::string& node_id, const std::string& image,
                                         const std::string& uuid) const {
  const uint64_t seed = std::stoull(RandomHex(7), nullptr, 16);  // fresh per run: no canned answers
  v1::JobSpec spec = Spec(node_id, image, readiness::kGpuBenchPathInImage,
                          readiness::GpuBenchArgs(options_.gpu_bench_rounds, seed, "/out"));
  spec.mutable_resources()->set_gpus(1);
  // The driver's JIT and the pinned copy buffers need more than the CPU
  // benchmark; device memory is not host memory and is not counted.
  spec.mutable_resources()->set_memory_bytes(readiness::kGpuBenchHostMemoryBytes);
  spec.set_run_timeout_seconds(readiness::kGpuBenchRunTimeoutSeconds);
  spec.set_pinned_device(uuid);
  (*spec.mutable_env())["LD_LIBRARY_PATH"] = readiness::kGpuBenchLibraryPath;
  (*spec.mutable_env())["CUDA_CACHE_DISABLE"] = "1";  // the JIT's cache wants a writable HOME
  return spec;
}

std::vector<ReadinessBenchmarks::Needed> ReadinessBenchmarks::Plan(const std::vector<Candidate>& nodes,
                                                                   bool gpu_image) {
  const int64_t now = clock_->NowMs();
  std::vector<Needed> needed;
  MutexLock lock(&mu_);
  for (const Candidate& n : nodes) {
    InFlight& flight = in_flight_[n.node_id];
    if (!flight.cpu_job.empty()) continue;
    const v1::Measurement& m = n.measurement;
    const bool current = m.measured_at_ms() > 0 && m.agent_version() == StackOf(n.ad);
    if (!current || !m.passed()) {
      if (current && now - flight.cpu_failed_ms < options_.bench_retry_ms) continue;
      needed.push_back({n.node_id, ""});
      flight.cpu_job = "pending";
      continue;
    }
    // CPU measured: now each real GPU, one pinned job per device.
    if (!gpu_image) continue;
    for (const auto& d : n.ad.inventory().gpus().devices()) {
      // A device its owner holds back is measured once it is lent again.
      if (d.simulated() || !d.owner_hold().empty() || flight.gpu_jobs.count(d.uuid())) continue;
      bool done = false;
      for (const auto& g : m.gpus()) {
        if (g.uuid() == d.uuid() && (g.passed() || now - g.measured_at_ms() < options_.bench_retry_ms)) done = true;
      }
      if (done) continue;
      needed.push_back({n.node_id, d.uuid()});
      flight.gpu_jobs[d.uuid()] = "pending";
    }
  }
  return needed;
}

void ReadinessBenchmarks::Ensure() {
  std::string cpu_image, gpu_image;
  {
    MutexLock lock(&mu_);
    cpu_image = cpu_image_;
    gpu_image = gpu_image_;
  }
  if (cpu_image.empty()) return;
  for (const Needed& need : Plan(hooks_.candidates(), !gpu_image.empty())) {
    if (!need.device_uuid.empty()) {
      Create(need, GpuSpec(need.node_id, gpu_image, need.device_uuid));
      continue;
    }
    const uint64_t seed = std::stoull(RandomHex(7), nullptr, 16);  // fresh per run: no canned answers
    Create(need, Spec(need.node_id, cpu_image, readiness::kBenchPathInImage,
                      readiness::BenchArgs(options_.bench_iterations, seed, "/out")));
  }
}

void ReadinessBenchmarks::Create(const Needed& need, const v1::JobSpec& spec) {
  const std::string job_id = NewId("j");
  const Status st = store_->CreateJob(job_id, spec, manifest::SpecDigest(spec), clock_->NowMs());
  {
    MutexLock lock(&mu_);
    InFlight& flight = in_flight_[need.node_id];
    std::string& slot = need.device_uuid.empty() ? flight.cpu_job : flight.gpu_jobs[need.device_uuid];
    slot = st.ok() ? job_id : "";
  }
  if (st.ok()) {
    spdlog::info("node {}: readiness benchmark job {}{}", need.node_id, job_id,
                 need.device_uuid.empty() ? "" : " for GPU " + need.device_uuid);
  } else {
    spdlog::warn("node {}: readiness benchmark job not created: {}", need.node_id, st.message());
  }
}

void ReadinessBenchmarks::ForgetNode(const std::string& node_id) {
  MutexLock lock(&mu_);
  auto it = in_flight_.find(node_id);
  if (it == in_flight_.end()) return;
  it->second.cpu_job.clear();
  it->second.gpu_jobs.clear();
}

void ReadinessBenchmarks::Judge(const std::string& job_id) {
  if (auto job = store_->GetJob(job_id); job.ok()) Judge(*job);
}

void ReadinessBenchmarks::Judge(const v1::Job& job) {
  if (!job.spec().readiness() || !jobs::IsSettled(job)) return;
  if (!job.spec().pinned_device().empty()) return JudgeGpu(job);
  JudgeCpu(job);
}

void ReadinessBenchmarks::JudgeCpu(const v1::Job& job) {
  const v1::JobSpec& spec = job.spec();
  const std::string& node_id = spec.pinned_node();
  v1::Measurement m;
  auto text = ResultFile(job, artifacts_);
  auto parsed = text.ok() ? readiness::ParseBenchResult(*text) : Result<readiness::BenchResult>(text.status());
  if (job.tasks(0).state() != v1::SUCCEEDED) {
    m.set_reason(text.status().message());  // "benchmark job FAILED: ..."
  } else if (!parsed.ok()) {
    m.set_reason("benchmark output rejected: " + parsed.status().message());
  } else {
    m = readiness::Judge(*parsed, std::stoull(spec.args(1)), std::stoull(spec.args(0)), options_.min_cpu_score);
  }
  m.set_measured_at_ms(clock_->NowMs());
  const bool known = hooks_.update_measurement(node_id, [&](v1::Measurement& current, const v1::Advertisement& ad) {
    m.set_agent_version(StackOf(ad));
    current = m;
  });
  if (!known) return;
  {
    MutexLock lock(&mu_);
    InFlight& flight = in_flight_[node_id];
    flight.cpu_job.clear();
    if (!m.passed()) flight.cpu_failed_ms = m.measured_at_ms();
  }
  if (m.passed()) {
    spdlog::info("node {} measured: cpu score {:.3g} rounds/s; schedulable", node_id, m.cpu_score());
  } else {
    spdlog::warn("node {} failed its readiness benchmark: {}", node_id, m.reason());
  }
  hooks_.changed();
}

void ReadinessBenchmarks::JudgeGpu(const v1::Job& job) {
  const v1::JobSpec& spec = job.spec();
  const std::string& node_id = spec.pinned_node();
  const std::string& uuid = spec.pinned_device();
  const std::optional<v1::Advertisement> ad = hooks_.advertisement(node_id);
  if (!ad) return;
  v1::GpuDevice claimed;
  for (const auto& d : ad->inventory().gpus().devices()) {
    if (d.uuid() == uuid) claimed = d;
  }
  auto text = ResultFile(job, artifacts_);
  auto parsed = text.ok() ? readiness::ParseGpuBenchResult(*text) : Result<readiness::GpuBenchResult>(text.status());
  v1::GpuMeasurement gm = GpuMeasurementOf(std::move(parsed), spec, claimed);
  gm.set_measured_at_ms(clock_->NowMs());
  const bool known = hooks_.update_measurement(node_id, [&](v1::Measurement& current, const v1::Advertisement&) {
    auto* gpus = current.mutable_gpus();
    for (int i = 0; i < gpus->size(); ++i) {
      if (gpus->Get(i).uuid() == uuid) {
        gpus->DeleteSubrange(i, 1);
        break;
      }
    }
    *gpus->Add() = gm;
  });
  if (!known) return;
  {
    MutexLock lock(&mu_);
    in_flight_[node_id].gpu_jobs.erase(uuid);
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
  hooks_.changed();
}

}  // namespace idlegrid::coordinator
