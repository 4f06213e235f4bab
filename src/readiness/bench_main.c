/* The readiness benchmark: a static program the coordinator wraps in an OCI
 * image (readiness/bench_image.h) and runs on a node, through the same path
 * as a real job, before the node gets work.
 *
 * Usage: bench ITERATIONS SEED OUTDIR   (ITERATIONS and SEED in decimal)
 *
 * Runs ig_cpu_kernel(SEED, ITERATIONS), timing it with CLOCK_MONOTONIC, and
 * writes OUTDIR/result.txt (also printed to stdout):
 *   checksum=<16 lowercase hex digits>
 *   iterations=<decimal>
 *   seconds=<decimal, 9 fraction digits>
 *   score=<iterations per second, 3 fraction digits>
 * which readiness::ParseBenchResult reads. Exit status: 0 on success, 2 on a
 * usage error, 1 if the result cannot be written. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "readiness/kernel.h"

/* Strict decimal: digits only (no sign, space or prefix), no overflow. */
static int ParseDecimal(const char* text, uint64_t* out) {
  if (text[0] < '0' || text[0] > '9') return 0;
  char* end = NULL;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0') return 0;
  *out = (uint64_t)value;
  return 1;
}

static double SecondsBetween(const struct timespec* start, const struct timespec* end) {
  int64_t nanos = (int64_t)(end->tv_sec - start->tv_sec) * 1000000000 +
                  (int64_t)(end->tv_nsec - start->tv_nsec);
  return (double)nanos / 1e9;
}

static int WriteResult(const char* out_dir, const char* text) {
  char path[4096];
  int n = snprintf(path, sizeof(path), "%s/result.txt", out_dir);
  if (n < 0 || (size_t)n >= sizeof(path)) {
    fprintf(stderr, "bench: output directory path is too long\n");
    return 0;
  }
  FILE* file = fopen(path, "w");
  if (file == NULL) {
    fprintf(stderr, "bench: cannot create %s: %s\n", path, strerror(errno));
    return 0;
  }
  size_t size = strlen(text);
  int ok = fwrite(text, 1, size, file) == size;
  ok = (fclose(file) == 0) && ok;
  if (!ok) fprintf(stderr, "bench: cannot write %s: %s\n", path, strerror(errno));
  return ok;
}

int main(int argc, char** argv) {
  uint64_t iterations = 0;
  uint64_t seed = 0;
  if (argc != 4 || !ParseDecimal(argv[1], &iterations) || !ParseDecimal(argv[2], &seed)) {
    fprintf(stderr, "usage: %s ITERATIONS SEED OUTDIR  (ITERATIONS and SEED in decimal)\n",
            argc > 0 ? argv[0] : "bench");
    return 2;
  }
  struct timespec start;
  struct timespec end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  /* The kernel touches no memory, so without these barriers the compiler may
   * move it out from between the clock reads. */
  __asm__ volatile("" : "+r"(seed), "+r"(iterations) : : "memory");
  uint64_t checksum = ig_cpu_kernel(seed, iterations);
  __asm__ volatile("" : "+r"(checksum) : : "memory");
  clock_gettime(CLOCK_MONOTONIC, &end);
  double seconds = SecondsBetween(&start, &end);
  /* A zero duration cannot give a finite score; the coordinator rejects it. */
  double score = seconds > 0 ? (double)iterations / seconds : 0.0;

  char text[256];
  snprintf(text, sizeof(text),
           "checksum=%016" PRIx64 "\niterations=%" PRIu64 "\nseconds=%.9f\nscore=%.3f\n", checksum,
           iterations, seconds, score);
  fputs(text, stdout);
  fflush(stdout);
  return WriteResult(argv[3], text) ? 0 : 1;
}
