/* The workload of the end-to-end tests, built static into a FROM scratch
 * image. Modes (argv[1]):
 *   write TEXT   write TEXT and the task index to /out/hello.txt and /out/sub/index.txt
 *   sleep SECS   print "started" then sleep
 *   exit CODE    print to both streams, then exit with CODE
 *   ticks N      print N lines, 100 ms apart
 *   copy PATH    copy the (read-only) input PATH to /out/copy.txt; exit 3 if PATH was writable */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "write";
  const char* idx = getenv("IDLEGRID_TASK_INDEX");
  if (!idx) idx = "?";
  if (strcmp(mode, "write") == 0) {
    FILE* f = fopen("/out/hello.txt", "w");
    if (!f) { perror("open /out/hello.txt"); return 10; }
    fprintf(f, "%s from task %s\n", argc > 2 ? argv[2] : "hello", idx);
    fclose(f);
    mkdir("/out/sub", 0755);
    f = fopen("/out/sub/index.txt", "w");
    if (!f) { perror("open /out/sub/index.txt"); return 11; }
    fprintf(f, "%s\n", idx);
    fclose(f);
    printf("task %s wrote its outputs\n", idx);
    return 0;
  }
  if (strcmp(mode, "sleep") == 0) {
    printf("started\n");
    fflush(stdout);
    nap_ms((argc > 2 ? atol(argv[2]) : 300) * 1000L);
    return 0;
  }
  if (strcmp(mode, "exit") == 0) {
    printf("to stdout\n");
    fprintf(stderr, "to stderr\n");
    return argc > 2 ? atoi(argv[2]) : 1;
  }
  if (strcmp(mode, "ticks") == 0) {
    long n = argc > 2 ? atol(argv[2]) : 10;
    for (long i = 0; i < n; ++i) {
      printf("tick %ld\n", i);
      fflush(stdout);
      nap_ms(100);
    }
    return 0;
  }
  if (strcmp(mode, "copy") == 0 && argc > 2) {
    FILE* in = fopen(argv[2], "r");
    if (!in) { perror("open input"); return 12; }
    FILE* out = fopen("/out/copy.txt", "w");
    if (!out) { perror("open /out/copy.txt"); return 13; }
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
    if (fopen(argv[2], "a") != NULL) { fprintf(stderr, "input was writable\n"); return 3; }
    printf("copied %s\n", argv[2]);
    return 0;
  }
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
