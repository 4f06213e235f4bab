#pragma once
/* The readiness benchmark's CPU kernel: the ONE definition shared by the
 * static benchmark program (C, bench_main.c) and the coordinator (C++,
 * readiness.cc), so the checksum a node reports can be recomputed exactly.
 * Plain C that also compiles as C++: no C++ features, no floating point, no
 * undefined behaviour (unsigned arithmetic wraps by definition).
 *
 * Changing anything here changes every checksum: nodes running an older
 * benchmark image would then fail readiness. The known-answer test in
 * tests/readiness/readiness_test.cc pins the results. */
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Under nvcc the kernel also compiles for the device (gpu_kernel.h), so the
 * GPU benchmark runs exactly this code. */
#if defined(__CUDACC__)
#define IG_HOST_DEVICE __host__ __device__
#else
#define IG_HOST_DEVICE
#endif

static inline IG_HOST_DEVICE uint64_t ig_rotate_left64(uint64_t value, unsigned shift) {
  return (value << shift) | (value >> (64u - shift)); /* shift is 1..63 */
}

/* Mixes `seed` through `iterations` rounds and returns the final state.
 * Every round is a bijection of the state (xor with a Weyl counter, an
 * xorshift, a multiply by an odd constant, a rotation) and each depends on
 * the previous one, so the loop can neither be skipped nor parallelised, and
 * the result depends on every round. Pure; thread-safe. */
static inline IG_HOST_DEVICE uint64_t ig_cpu_kernel(uint64_t seed, uint64_t iterations) {
  uint64_t weyl = seed;
  uint64_t state = seed ^ UINT64_C(0x243F6A8885A308D3);
  uint64_t i;
  for (i = 0; i < iterations; ++i) {
    weyl += UINT64_C(0x9E3779B97F4A7C15);
    state ^= weyl;
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    state *= UINT64_C(0xBF58476D1CE4E5B9);
    state = ig_rotate_left64(state, 31);
  }
  return state;
}

#ifdef __cplusplus
} /* extern "C" */
#endif
