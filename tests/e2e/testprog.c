/* The workload of the end-to-end tests, built static into a FROM scratch
 * image. Modes (argv[1]):
 *   write TEXT   write TEXT and the task index to /out/hello.txt and /out/sub/index.txt
 *   sleep SECS   print "started" then sleep
 *   exit CODE    print to both streams, then exit with CODE
 *   ticks N      print N lines, 100 ms apart
 *   spin SECS    burn one CPU for SECS seconds (load for the stress tests)
 *   fill N MIB   write N files of MIB MiB each as /out/fill-<i>, announcing each one;
 *                prints "filled" when all are written
 *   home SHM_MIB write $HOME/home.txt and $XDG_CACHE_HOME/pip/cache.txt (as ML tools
 *                do), then SHM_MIB MiB to /dev/shm/fill, and report each to /out/home.txt
 *   cachefill N KIB  write N files of KIB KiB each in $XDG_CACHE_HOME/many/, announcing
 *                every 100th; prints "cache filled" when all are written
 *   copy PATH [DIR]  copy the (read-only) input PATH to /out/copy.txt; exit 3 if PATH was writable,
 *                4 if a file or directory could be made in DIR (a directory input)
 *   cat TEXT PATH...  write TEXT, a newline, then each input PATH's bytes to /out/cat.txt
 *                (a workflow step joining its upstream steps' outputs)
 *   count N MS   a checkpointing computation: N steps of MS ms each, state saved
 *                after every step in $IDLEGRID_CHECKPOINT_DIR/state (atomically,
 *                by rename) and resumed from there; writes /out/result.txt
 *   bigstate MIB N MS  a checkpoint of one large file: $IDLEGRID_CHECKPOINT_DIR/weights
 *                (MIB MiB of a fixed pattern after a 16-byte step counter) rewritten by
 *                rename after each of N steps of MS ms, only its counter changing; on
 *                resume the whole pattern is checked (exit 19 when it is not intact);
 *                writes "resumed at S, pattern ok" or "fresh, pattern ok" to /out/result.txt
 *   burn N MS [TAG]  N steps of MS ms of CPU time each (time frozen does not
 *                count), printing "burn step I"; writes /out/result.txt. TAG only
 *                marks the process for tests that look for it in /proc */
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
    if (argc > 3) nap_ms(atol(argv[3]));  // write TEXT MS: a task that takes a while
    FILE* f = fopen("/out/hello.txt", "w");
    if (!f) { perror("open /out/hello.txt"); return 10; }
    /* A full disk shows at the flush: a program that does not check it
       silently leaves an empty output. */
    fprintf(f, "%s from task %s\n", argc > 2 ? argv[2] : "hello", idx);
    if (fclose(f) != 0) { perror("write /out/hello.txt"); return 12; }
    mkdir("/out/sub", 0755);
    f = fopen("/out/sub/index.txt", "w");
    if (!f) { perror("open /out/sub/index.txt"); return 11; }
    fprintf(f, "%s\n", idx);
    if (fclose(f) != 0) { perror("write /out/sub/index.txt"); return 13; }
    if (argc > 4) { /* write TEXT MS PAD_MIB: and PAD_MIB MiB more, in /out/pad.bin */
      static char pad[1 << 20];
      f = fopen("/out/pad.bin", "w");
      if (!f) { perror("open /out/pad.bin"); return 14; }
      for (long m = 0; m < atol(argv[4]); ++m) {
        if (fwrite(pad, 1, sizeof pad, f) != sizeof pad) { perror("write /out/pad.bin"); return 15; }
      }
      if (fclose(f) != 0) { perror("write /out/pad.bin"); return 15; }
    }
    printf("task %s wrote its outputs\n", idx);
    return 0;
  }
  if (strcmp(mode, "flood") == 0) {
    /* N MiB of 1 KiB lines on stdout, then one last line. */
    long mib = argc > 2 ? atol(argv[2]) : 1;
    char line[1024];
    memset(line, 'x', sizeof line - 1);
    line[sizeof line - 1] = '\n';
    for (long i = 0; i < mib * 1024; ++i) fwrite(line, 1, sizeof line, stdout);
    printf("flood done\n");
    return 0;
  }
  if (strcmp(mode, "fill") == 0) {
    long files = argc > 2 ? atol(argv[2]) : 1;
    long mib = argc > 3 ? atol(argv[3]) : 1;
    static char chunk[1 << 20];
    memset(chunk, 'f', sizeof chunk);
    for (long i = 0; i < files; ++i) {
      char path[64];
      snprintf(path, sizeof path, "/out/fill-%ld", i);
      printf("writing %s\n", path);
      fflush(stdout);
      FILE* f = fopen(path, "w");
      if (!f) { perror("open fill file"); return 19; }
      for (long m = 0; m < mib; ++m) {
        if (fwrite(chunk, 1, sizeof chunk, f) != sizeof chunk) { perror("write fill file"); return 20; }
      }
      if (fclose(f) != 0) { perror("close fill file"); return 21; }
    }
    printf("filled\n");
    return 0;
  }
  if (strcmp(mode, "home") == 0) {
    const char* home = getenv("HOME");
    const char* cache = getenv("XDG_CACHE_HOME");
    long shm_mib = argc > 2 ? atol(argv[2]) : 1;
    if (!home || !cache) { fprintf(stderr, "HOME or XDG_CACHE_HOME unset\n"); return 30; }
    char path[512];
    snprintf(path, sizeof path, "%s/home.txt", home);
    FILE* f = fopen(path, "w");
    if (!f || fputs("home\n", f) < 0 || fclose(f) != 0) { perror(path); return 31; }
    snprintf(path, sizeof path, "%s/pip", cache);
    if (mkdir(path, 0755) != 0) { perror(path); return 32; }
    snprintf(path, sizeof path, "%s/pip/cache.txt", cache);
    f = fopen(path, "w");
    if (!f || fputs("cache\n", f) < 0 || fclose(f) != 0) { perror(path); return 33; }
    static char chunk[1 << 20];
    memset(chunk, 's', sizeof chunk);
    f = fopen("/dev/shm/fill", "w");
    if (!f) { perror("/dev/shm/fill"); return 34; }
    for (long m = 0; m < shm_mib; ++m) {
      if (fwrite(chunk, 1, sizeof chunk, f) != sizeof chunk) { perror("write /dev/shm/fill"); return 35; }
    }
    if (fclose(f) != 0) { perror("close /dev/shm/fill"); return 36; }
    f = fopen("/out/home.txt", "w");
    if (!f) { perror("/out/home.txt"); return 37; }
    fprintf(f, "HOME=%s\nXDG_CACHE_HOME=%s\nshm=%ld MiB\n", home, cache, shm_mib);
    fclose(f);
    printf("home ok\n");
    return 0;
  }
  if (strcmp(mode, "cachefill") == 0) {
    const char* cache = getenv("XDG_CACHE_HOME");
    long files = argc > 2 ? atol(argv[2]) : 1;
    long kib = argc > 3 ? atol(argv[3]) : 1;
    if (!cache) { fprintf(stderr, "XDG_CACHE_HOME unset\n"); return 30; }
    char path[512];
    snprintf(path, sizeof path, "%s/many", cache);
    if (mkdir(path, 0755) != 0) { perror(path); return 32; }
    static char chunk[1 << 10];
    memset(chunk, 'c', sizeof chunk);
    for (long i = 0; i < files; ++i) {
      if (i % 100 == 0) { printf("cache file %ld\n", i); fflush(stdout); }
      snprintf(path, sizeof path, "%s/many/f-%ld", cache, i);
      FILE* f = fopen(path, "w");
      if (!f) { perror(path); return 33; }
      for (long k = 0; k < kib; ++k) {
        if (fwrite(chunk, 1, sizeof chunk, f) != sizeof chunk) { perror("write cache file"); return 34; }
      }
      if (fclose(f) != 0) { perror("close cache file"); return 35; }
    }
    printf("cache filled\n");
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
  if (strcmp(mode, "spin") == 0) {
    time_t end = time(NULL) + (argc > 2 ? atol(argv[2]) : 10);
    volatile unsigned long x = 0;
    while (time(NULL) < end) {
      for (int i = 0; i < 1000000; ++i) x += (unsigned long)i;
    }
    printf("spun\n");
    return 0;
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
  if (strcmp(mode, "count") == 0) {
    long n = argc > 2 ? atol(argv[2]) : 10;
    long ms = argc > 3 ? atol(argv[3]) : 100;
    const char* dir = getenv("IDLEGRID_CHECKPOINT_DIR");
    if (!dir) { fprintf(stderr, "no IDLEGRID_CHECKPOINT_DIR\n"); return 14; }
    char path[512], tmp[512];
    snprintf(path, sizeof path, "%s/state", dir);
    snprintf(tmp, sizeof tmp, "%s/.state.tmp", dir);
    long step = 0;
    unsigned long long acc = 1;
    FILE* f = fopen(path, "r");
    if (f) {
      if (fscanf(f, "%ld %llu", &step, &acc) != 2) { fprintf(stderr, "corrupt checkpoint\n"); return 15; }
      fclose(f);
      printf("resumed at step %ld\n", step);
    } else {
      printf("fresh start\n");
    }
    fflush(stdout);
    for (; step < n; ++step) {
      nap_ms(ms);
      acc = acc * 6364136223846793005ULL + (unsigned long long)step;
      printf("step %ld\n", step);
      fflush(stdout);
      f = fopen(tmp, "w");
      if (!f) { perror("open checkpoint"); return 16; }
      fprintf(f, "%ld %llu\n", step + 1, acc);
      fclose(f);
      if (rename(tmp, path) != 0) { perror("rename checkpoint"); return 17; }
    }
    f = fopen("/out/result.txt", "w");
    if (!f) { perror("open /out/result.txt"); return 18; }
    fprintf(f, "acc=%llu\n", acc);
    fclose(f);
    return 0;
  }
  if (strcmp(mode, "bigstate") == 0 && argc > 4) {
    const long mib = atol(argv[2]), n = atol(argv[3]), ms = atol(argv[4]);
    const char* dir = getenv("IDLEGRID_CHECKPOINT_DIR");
    if (!dir || mib <= 0) { fprintf(stderr, "no IDLEGRID_CHECKPOINT_DIR or size\n"); return 14; }
    const size_t size = (size_t)mib << 20;
    unsigned char* buf = malloc(size);
    if (!buf) { fprintf(stderr, "malloc failed\n"); return 20; }
    /* No two 16 MiB chunks alike (a short-period pattern would let chunks dedupe). */
    for (size_t i = 16; i < size; ++i) buf[i] = (unsigned char)(((unsigned)i * 2654435761u) >> 24);
    char path[512], tmp[512];
    snprintf(path, sizeof path, "%s/weights", dir);
    snprintf(tmp, sizeof tmp, "%s/.weights.tmp", dir);
    long step = 0, resumed = -1;
    FILE* f = fopen(path, "rb");
    if (f) {
      unsigned char* old = malloc(size);
      if (!old || fread(old, 1, size, f) != size || fgetc(f) != EOF) { fprintf(stderr, "short checkpoint\n"); return 19; }
      fclose(f);
      if (memcmp(old + 16, buf + 16, size - 16) != 0) { fprintf(stderr, "checkpoint pattern damaged\n"); return 19; }
      step = resumed = atol((const char*)old);
      free(old);
      printf("resumed at step %ld\n", step);
    }
    for (; step < n; ++step) {
      nap_ms(ms);
      memset(buf, 0, 16);
      snprintf((char*)buf, 16, "%d", (int)(step + 1));
      f = fopen(tmp, "wb");
      if (!f || fwrite(buf, 1, size, f) != size || fclose(f) != 0) { perror("write checkpoint"); return 16; }
      if (rename(tmp, path) != 0) { perror("rename checkpoint"); return 17; }
      printf("step %ld\n", step);
      fflush(stdout);
    }
    f = fopen("/out/result.txt", "w");
    if (!f) { perror("open /out/result.txt"); return 18; }
    if (resumed >= 0) fprintf(f, "resumed at %ld, pattern ok\n", resumed);
    else fprintf(f, "fresh, pattern ok\n");
    fclose(f);
    return 0;
  }
  if (strcmp(mode, "burn") == 0) {
    long n = argc > 2 ? atol(argv[2]) : 10;
    long ms = argc > 3 ? atol(argv[3]) : 100;
    volatile unsigned long long acc = 1;
    for (long step = 0; step < n; ++step) {
      const clock_t until = clock() + (clock_t)(ms * (CLOCKS_PER_SEC / 1000));
      while (clock() < until) {
        for (int i = 0; i < 100000; ++i) acc = acc * 6364136223846793005ULL + 1442695040888963407ULL;
      }
      printf("burn step %ld\n", step);
      fflush(stdout);
    }
    FILE* f = fopen("/out/result.txt", "w");
    if (!f) { perror("open /out/result.txt"); return 18; }
    fprintf(f, "burned %ld steps\n", n);
    fclose(f);
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
    if (argc > 3) {  /* copy PATH DIR: DIR (a directory input) must refuse a new file and a new directory */
      char probe[4096];
      snprintf(probe, sizeof probe, "%s/written-by-job", argv[3]);
      if (fopen(probe, "w") != NULL) { fprintf(stderr, "input directory was writable\n"); return 4; }
      snprintf(probe, sizeof probe, "%s/dir-by-job", argv[3]);
      if (mkdir(probe, 0755) == 0) { fprintf(stderr, "input directory was writable\n"); return 4; }
      printf("%s is read-only\n", argv[3]);
    }
    printf("copied %s\n", argv[2]);
    return 0;
  }
  if (strcmp(mode, "cat") == 0 && argc > 2) {
    FILE* out = fopen("/out/cat.txt", "w");
    if (!out) { perror("open /out/cat.txt"); return 22; }
    fprintf(out, "%s\n", argv[2]);
    for (int i = 3; i < argc; ++i) {
      FILE* in = fopen(argv[i], "r");
      if (!in) { perror(argv[i]); return 23; }
      char buf[4096];
      size_t n;
      while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
      fclose(in);
    }
    fclose(out);
    printf("joined %d input(s)\n", argc - 3);
    return 0;
  }
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
