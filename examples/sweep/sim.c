/* A small Monte Carlo simulation for the demo sweep: estimates pi with a
 * seeded xorshift generator. Each array task takes its seed from
 * IDLEGRID_TASK_INDEX, so every task's result is reproducible. Built static,
 * so it runs in a FROM scratch image. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t next(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

int main(int argc, char** argv) {
  const char* idx = getenv("IDLEGRID_TASK_INDEX");
  long task = idx ? atol(idx) : 0;
  long samples = argc > 1 ? atol(argv[1]) : 2000000;
  const char* out_dir = argc > 2 ? argv[2] : "/out";
  uint64_t state = 0x9E3779B97F4A7C15ull ^ (uint64_t)(task + 1) * 0xBF58476D1CE4E5B9ull;
  long inside = 0;
  for (long i = 0; i < samples; ++i) {
    double x = (double)(next(&state) >> 11) / 9007199254740992.0;
    double y = (double)(next(&state) >> 11) / 9007199254740992.0;
    if (x * x + y * y <= 1.0) inside++;
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
