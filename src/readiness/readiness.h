#pragma once
// The coordinator's side of the readiness benchmark: before a node gets work
// it runs the benchmark image (bench_image.h) as an ordinary job; the job's
// result.txt is parsed and judged here. Pure functions over plain values.
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::readiness {

// What the benchmark program reports (see src/readiness/bench_main.c).
struct BenchResult {
  uint64_t checksum = 0;
  uint64_t iterations = 0;
  double seconds = 0;
  double score = 0;  // iterations per second
};

// The benchmark's arguments after its entrypoint: ITERATIONS SEED OUTDIR.
std::vector<std::string> BenchArgs(uint64_t iterations, uint64_t seed, const std::string& output_dir);

// The checksum an honest run of `iterations` rounds from `seed` reports. Runs
// the same kernel as the benchmark (readiness/kernel.h), so it costs the same
// CPU time as the benchmark does on this host. Thread-safe.
uint64_t ExpectedChecksum(uint64_t seed, uint64_t iterations);

// Parses result.txt: exactly the lines checksum=<1-16 hex digits>,
// iterations=<decimal>, seconds=<non-negative decimal>, score=<non-negative
// decimal>, in any order, each exactly once, every line ended by "\n".
// InvalidArgument naming the line (number and text) for an unknown,
// repeated or malformed line, or naming the key that is missing; also for
// text over 4 KiB. Thread-safe.
Result<BenchResult> ParseBenchResult(const std::string& text);

// Judges a parsed result against the job that was sent (`seed`,
// `iterations`). Passes only when the iteration count and the checksum match,
// seconds > 0, the reported score agrees with iterations / seconds, and the
// score is at least `min_plausible_score`. Otherwise `passed` is false and
// `reason` says why, e.g. "wrong checksum: got 0x1, expected 0x5b8a...".
// cpu_score is the reported score either way; measured_at_ms and
// agent_version are left for the caller. Recomputes the checksum, so it costs
// what ExpectedChecksum costs. Thread-safe.
v1::Measurement Judge(const BenchResult& result, uint64_t seed, uint64_t iterations, double min_plausible_score);

}  // namespace idlegrid::readiness
