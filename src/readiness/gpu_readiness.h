#pragma once
// The coordinator's side of the GPU readiness benchmark: before a node's GPU
// gets work, the node runs the GPU benchmark (src/readiness/gpu_bench.c, PTX JIT-compiled by the driver) as
// an ordinary job; its result.txt is parsed and judged here against the
// device the node advertised. Pure functions over plain values; no CUDA.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::readiness {

// The benchmark always runs this many device threads (IG_GPU_THREADS).
inline constexpr uint64_t kGpuBenchThreads = 65536;

// Rounds per thread the coordinator asks for. Recomputing the checksum costs
// kGpuBenchThreads * rounds kernel rounds on the coordinator's CPU, about
// 0.5 s for 2000 (65536 * 2000 = 1.3e8 rounds at the ~2.5e8 rounds/s one
// core manages); the device finishes in well under a millisecond. The
// kernel time is stored as measured, not judged, so more rounds buy nothing.
inline constexpr uint64_t kDefaultGpuBenchRounds = 2000;

// What the GPU benchmark's job may use on the host: the driver's JIT and
// 64 MiB of pinned copy buffers (device memory is not host memory). And how
// long it may run: the JIT, the FP32 ramp and the allocation probe of a
// large device take seconds, not minutes.
inline constexpr uint64_t kGpuBenchHostMemoryBytes = uint64_t{1} << 30;
inline constexpr uint32_t kGpuBenchRunTimeoutSeconds = 300;

// The first line of the benchmark's error.txt (the failing step and the
// driver's CUDA_ERROR_* name), cut at 300 characters, non-printable bytes as
// '?': for the GPU's reason in `nodes`. Pure.
std::string BenchErrorLine(std::string_view error_txt);

// What the GPU benchmark program reports (see src/readiness/gpu_bench.c).
struct GpuBenchResult {
  uint64_t checksum = 0;
  uint64_t rounds = 0;
  uint64_t threads = 0;
  double kernel_seconds = 0;
  double fp32_gflops = 0;          // fused multiply-adds, 2 FLOP each
  double bandwidth_gbps = 0;       // device-to-device copy, read + write traffic
  double h2d_gbps = 0;             // pinned host-to-device copy
  double d2h_gbps = 0;             // pinned device-to-host copy
  std::string device_name;         // as the driver names it, e.g. "NVIDIA H200"
  uint64_t memory_bytes = 0;       // cuDeviceTotalMem
  uint64_t allocatable_bytes = 0;  // what the benchmark could allocate, in 64 MiB blocks
  std::string compute_capability;  // "9.0"
};

// The GPU benchmark's arguments after its entrypoint:
// ROUNDS SEED OUTDIR DEVICE_INDEX.
std::vector<std::string> GpuBenchArgs(uint64_t rounds, uint64_t seed, const std::string& output_dir,
                                      uint32_t device_index = 0);

// The checksum an honest run reports: the XOR over all kGpuBenchThreads
// threads t of ig_gpu_thread_result(seed, t, rounds) (readiness/gpu_kernel.h,
// the code the device runs: kernel.h's kernel from a per-thread seed). Costs
// kGpuBenchThreads * `rounds` rounds of CPU time on the calling thread (see
// kDefaultGpuBenchRounds). Thread-safe.
uint64_t ExpectedGpuChecksum(uint64_t seed, uint64_t rounds);

// Parses result.txt: exactly the lines checksum=<1-16 hex digits>,
// rounds=<decimal>, threads=<decimal>, kernel_seconds, fp32_gflops,
// bandwidth_gbps, h2d_gbps, d2h_gbps (each a non-negative decimal),
// device_name=<1-255 printable ASCII characters>, memory_bytes and
// allocatable_bytes (decimal), compute_capability=<1-3 digits>.<1-3 digits>,
// in any order, each exactly once, every line ended by "\n".
// InvalidArgument naming the line (number and text) for an unknown, repeated
// or malformed line, or naming the key that is missing; also for text over
// 4 KiB. Thread-safe.
Result<GpuBenchResult> ParseGpuBenchResult(const std::string& text);

// What a model must at least measure. Minimums are deliberately loose so that
// an honest device passes even when throttled, shared or ECC-reduced; they
// catch a device that is not what it claims (a laptop part claiming to be an
// H100), not a slow one.
struct GpuClass {
  // Matched case-insensitively against the advertised name, as a substring
  // that starts and ends on a word boundary: "H100" matches
  // "NVIDIA H100 80GB HBM3" and "NVIDIA H100 PCIe", but "H200" does not
  // match "NVIDIA GH200 480GB" nor "T4" "NVIDIA T400 4GB".
  const char* name_pattern;
  // The spec sheet's memory bandwidth of the slowest variant the pattern
  // matches (e.g. the 8 GB RTX 3060), for reference and tests.
  double spec_bandwidth_gbps;
  // Roughly 40-50% of the spec sheet. gpu_bench reports copy traffic (every
  // byte copied is read once and written once, so 2 * bytes / seconds), which
  // honest devices bring to 75-90% of the spec figure; half of that leaves
  // room for power capping, clock throttling, ECC and other tenants.
  double min_bandwidth_gbps;
  // About 85% of the nominal capacity: ECC on GDDR parts takes 1/16, and
  // drivers reserve a little more.
  uint64_t min_memory_bytes;
};

// The plausibility table, most specific patterns first (e.g. "RTX 4090
// Laptop" before "RTX 4090"): the first match decides.
std::span<const GpuClass> GpuClasses();

// The first class whose pattern matches `model`, or nullptr if none does.
const GpuClass* FindGpuClass(std::string_view model);

// The outcome of JudgeGpu. v1::Measurement has no GPU figures yet; the
// caller stores these alongside it (or copies them into it once it has).
struct GpuJudgement {
  bool passed = false;
  // Why it failed, e.g. "implausible for RTX 4090: 310 GB/s device bandwidth,
  // expected at least 400"; empty when it passed, except for a model with no
  // plausibility figures ("no plausibility figures for ...").
  std::string reason;
  // As reported, whether or not it passed:
  double bandwidth_gbps = 0;
  double kernel_seconds = 0;
  double fp32_gflops = 0;
  double h2d_gbps = 0;
  double d2h_gbps = 0;
  uint64_t allocatable_bytes = 0;
};

// Judges a parsed result against the job that was sent (`seed`, `rounds`)
// and the device the node advertised (`claimed`). Fails, with the first
// reason found, when: rounds or threads differ from the job's; the checksum
// is wrong; kernel_seconds, bandwidth_gbps, fp32_gflops, h2d_gbps or
// d2h_gbps is not above 0; the device name
// differs from the claimed one (compared case-insensitively on alphanumeric
// words, ignoring a "NVIDIA" word); memory_bytes differs from the claimed
// memory_total_bytes by more than 5%; the compute capability differs from a
// claimed one (an empty claim is not compared); allocatable_bytes is under
// half of what the node offers (memory_total_bytes less
// reserved_memory_bytes); or the claimed model's
// GpuClass says the bandwidth or memory is implausibly low. A model with no
// GpuClass passes on the other checks alone, with a reason saying so.
// Recomputes the checksum, so it costs what ExpectedGpuChecksum costs.
// Thread-safe.
GpuJudgement JudgeGpu(const GpuBenchResult& result, uint64_t seed, uint64_t rounds, const v1::GpuDevice& claimed);

}  // namespace idlegrid::readiness
