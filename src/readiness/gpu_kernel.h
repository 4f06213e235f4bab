#pragma once
/* The GPU readiness benchmark's kernel, shared by the CUDA benchmark program
 * (gpu_bench.cu, which runs it on the device) and the coordinator
 * (gpu_readiness.cc, which recomputes the checksum on its CPU).
 *
 * Each thread runs ig_cpu_kernel itself (kernel.h marks it __host__
 * __device__ under nvcc), so the GPU computes exactly what the coordinator
 * recomputes.
 *
 * Changing anything here changes every GPU checksum: nodes running an older
 * GPU benchmark image would then fail readiness. */
#include <stdint.h>

#include "readiness/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How many threads the benchmark runs, each on its own seed; the reported
 * checksum is the XOR of all their results. */
#define IG_GPU_THREADS 65536u

/* The per-thread round function: ig_cpu_kernel, on the device. */
static inline IG_HOST_DEVICE uint64_t ig_gpu_kernel(uint64_t seed, uint64_t rounds) {
  return ig_cpu_kernel(seed, rounds);
}

/* The seed thread `thread_index` starts from: `seed` plus an odd multiple of
 * its index. Not `seed ^ thread_index`: XOR with every index in 0..65535
 * gives the same SET of thread seeds for all seeds that differ only in their
 * low 16 bits, so the XOR of the results would ignore those bits (seeds 0 and
 * 7 would give one checksum) and a node could serve canned answers for a
 * coordinator's short random seeds. Distinct seeds give distinct arithmetic
 * progressions here, so every seed bit matters. */
static inline IG_HOST_DEVICE uint64_t ig_gpu_thread_seed(uint64_t seed, uint32_t thread_index) {
  return seed + (uint64_t)thread_index * UINT64_C(0xD6E8FEB86659FD93);
}

/* What thread `thread_index` (0 .. IG_GPU_THREADS-1) of the benchmark
 * computes. The benchmark's checksum is the XOR of all threads' results. */
static inline IG_HOST_DEVICE uint64_t ig_gpu_thread_result(uint64_t seed, uint32_t thread_index, uint64_t rounds) {
  return ig_gpu_kernel(ig_gpu_thread_seed(seed, thread_index), rounds);
}

#ifdef __cplusplus
} /* extern "C" */
#endif
