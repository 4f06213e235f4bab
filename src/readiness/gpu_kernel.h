#pragma once
/* The GPU readiness benchmark's kernel, shared by the CUDA benchmark program
 * (gpu_bench.cu, which runs it on the device) and the coordinator
 * (gpu_readiness.cc, which recomputes the checksum on its CPU).
 *
 * Why a second copy of the round function: kernel.h's ig_cpu_kernel is a
 * plain `static inline` C function, which nvcc compiles for the host only; a
 * __global__ function cannot call it. ig_gpu_kernel below is the same
 * computation marked __host__ __device__ under nvcc (and plain C/C++
 * elsewhere). The known-answer and equivalence tests in
 * tests/readiness/gpu_readiness_test.cc prove that it returns exactly what
 * ig_cpu_kernel returns; change neither without the other.
 *
 * Changing anything here changes every GPU checksum: nodes running an older
 * GPU benchmark image would then fail readiness. */
#include <stdint.h>

#if defined(__CUDACC__)
#define IG_HOST_DEVICE __host__ __device__
#else
#define IG_HOST_DEVICE
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* How many threads the benchmark runs, each on its own seed; the reported
 * checksum is the XOR of all their results. */
#define IG_GPU_THREADS 65536u

static inline IG_HOST_DEVICE uint64_t ig_gpu_rotate_left64(uint64_t value, unsigned shift) {
  return (value << shift) | (value >> (64u - shift)); /* shift is 1..63 */
}

/* Exactly ig_cpu_kernel (kernel.h): see there for why each round is as it
 * is. Pure; thread-safe. */
static inline IG_HOST_DEVICE uint64_t ig_gpu_kernel(uint64_t seed, uint64_t rounds) {
  uint64_t weyl = seed;
  uint64_t state = seed ^ UINT64_C(0x243F6A8885A308D3);
  uint64_t i;
  for (i = 0; i < rounds; ++i) {
    weyl += UINT64_C(0x9E3779B97F4A7C15);
    state ^= weyl;
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    state *= UINT64_C(0xBF58476D1CE4E5B9);
    state = ig_gpu_rotate_left64(state, 31);
  }
  return state;
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
static inline IG_HOST_DEVICE uint64_t ig_gpu_thread_result(uint64_t seed, uint32_t thread_index,
                                                           uint64_t rounds) {
  return ig_gpu_kernel(ig_gpu_thread_seed(seed, thread_index), rounds);
}

#ifdef __cplusplus
} /* extern "C" */
#endif
