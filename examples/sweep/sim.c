/* A small Monte Carlo simulation for the demo: estimates pi with a seeded
 * xorshift generator. Each array task takes its seed from IDLEGRID_TASK_INDEX,
 * so every task's result is reproducible. Built static, so it runs in a FROM
 * scratch image.
 *
 *   sim SAMPLES OUT_DIR [PAUSE_MS]
 *
 * With $IDLEGRID_CHECKPOINT_DIR set (a job with a `checkpoint` block), it saves
 * its state (samples done, hits, generator state) there after every million
 * samples, atomically (write, then rename), and resumes from it: a run killed
 * midway and resumed elsewhere ends with exactly the uninterrupted result.
 * PAUSE_MS (default 0) sleeps after each million, to make a run long enough
 * to interrupt in the demo. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t next(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void save(const char* dir, long done, long inside, uint64_t state) {
  char tmp[512], path[512];
  snprintf(tmp, sizeof tmp, "%s/.state.tmp", dir);
  snprintf(path, sizeof path, "%s/state", dir);
  FILE* f = fopen(tmp, "w");
  if (!f) return;
  fprintf(f, "%ld %ld %llu\n", done, inside, (unsigned long long)state);
  if (fclose(f) == 0) rename(tmp, path);
}

int main(int argc, char** argv) {
  const char* idx = getenv("IDLEGRID_TASK_INDEX");
  const char* ckpt = getenv("IDLEGRID_CHECKPOINT_DIR");
  long task = idx ? atol(idx) : 0;
  long samples = argc > 1 ? atol(argv[1]) : 2000000;
  const char* out_dir = argc > 2 ? argv[2] : "/out";
  long pause_ms = argc > 3 ? atol(argv[3]) : 0;
  uint64_t state = 0x9E3779B97F4A7C15ull ^ (uint64_t)(task + 1) * 0xBF58476D1CE4E5B9ull;
  long inside = 0, done = 0;
  if (ckpt) {
    char path[512];
    snprintf(path, sizeof path, "%s/state", ckpt);
    FILE* f = fopen(path, "r");
    unsigned long long s = 0;
    if (f && fscanf(f, "%ld %ld %llu", &done, &inside, &s) == 3) {
      state = (uint64_t)s;
      printf("task %ld: resumed from checkpoint at %ld of %ld samples\n", task, done, samples);
    } else {
      done = inside = 0;
    }
    if (f) fclose(f);
  }
  while (done < samples) {
    long chunk = samples - done < 1000000 ? samples - done : 1000000;
    for (long i = 0; i < chunk; ++i) {
      double x = (double)(next(&state) >> 11) / 9007199254740992.0;
      double y = (double)(next(&state) >> 11) / 9007199254740992.0;
      if (x * x + y * y <= 1.0) inside++;
    }
    done += chunk;
    if (ckpt) save(ckpt, done, inside, state);
    if (pause_ms > 0) {
      struct timespec ts = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
      nanosleep(&ts, NULL);
    }
  }
  double pi = 4.0 * (double)inside / (double)samples;
  printf("task %ld: %ld samples, pi ~= %.6f\n", task, samples, pi);
  fprintf(stderr, "task %ld done\n", task);
  char path[512];
  snprintf(path, sizeof path, "%s/result.txt", out_dir);
  FILE* f = fopen(path, "w");
  if (!f) {
    perror("open result");
    return 1;
  }
  fprintf(f, "task=%ld samples=%ld inside=%ld pi=%.6f\n", task, samples, inside, pi);
  return fclose(f) == 0 ? 0 : 1;
}
