/* Describes the sandbox it runs in, one "key=value" line per fact, sorted by
 * the order below, so that runtime_test can run it under two runtimes and
 * compare the outputs line by line. Built static: it runs in a FROM scratch
 * image. Every probe only looks or tries something harmless. Other modes:
 *   exit CODE | sleep SECS | echo ARGS... (exit 3) | membomb (1 GiB, 1 MiB at a time)
 *   leave NAME: leaves things behind for the next task of a shared sandbox
 *     (runtime/pilot_pool.h): /out/NAME, /tmp/left, /dev/shm/left, a SysV
 *     shared memory segment and a daemon (setsid, sleeping), and makes /out
 *     inaccessible (mode 0); exits 0
 *   write NAME SECS: writes /out/NAME, prints "written", then sleeps SECS
 *   look: reports what a previous task left: tmp_left, shm_left, ipc_left,
 *     other_processes (besides itself and PID 1), out_files (-1: /out is
 *     unreadable), pid1 (its comm) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

/* The errno of a failed call as its name, or "ok". */
static const char* Outcome(int rc) {
  if (rc >= 0) return "ok";
  switch (errno) {
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case EROFS: return "EROFS";
    case ENOSYS: return "ENOSYS";
    case EINVAL: return "EINVAL";
    case ENETUNREACH: return "ENETUNREACH";
    case ENOENT: return "ENOENT";
    case EAGAIN: return "EAGAIN";
    default: return strerror(errno);
  }
}

static void StatusLines(void) {
  static const char* keys[] = {"CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:",
                               "NoNewPrivs:", "Seccomp:", "Seccomp_filters:"};
  FILE* f = fopen("/proc/self/status", "r");
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
      size_t n = strlen(keys[i]);
      if (strncmp(line, keys[i], n) != 0) continue;
      char* v = line + n;
      while (*v == ' ' || *v == '\t') v++;
      v[strcspn(v, "\n")] = 0;
      printf("status.%.*s=%s\n", (int)(n - 1), keys[i], v);
    }
  }
  if (f) fclose(f);
}

static void Limits(void) {
  static const struct { const char* name; int resource; } limits[] = {
      {"NOFILE", RLIMIT_NOFILE}, {"NPROC", RLIMIT_NPROC}, {"DATA", RLIMIT_DATA}, {"FSIZE", RLIMIT_FSIZE},
      {"AS", RLIMIT_AS},         {"CORE", RLIMIT_CORE},   {"MEMLOCK", RLIMIT_MEMLOCK}, {"STACK", RLIMIT_STACK}};
  for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
    struct rlimit r;
    getrlimit(limits[i].resource, &r);
    printf("rlimit.%s=%lld:%lld\n", limits[i].name, (long long)r.rlim_cur, (long long)r.rlim_max);
  }
}

static void Filesystem(void) {
  struct statvfs st;
  printf("root.readonly=%s\n", statvfs("/", &st) == 0 && (st.f_flag & ST_RDONLY) ? "yes" : "no");
  printf("root.create=%s\n", Outcome(open("/probe-created", O_CREAT | O_WRONLY, 0644)));
  printf("tmp.create=%s\n", Outcome(open("/tmp/probe", O_CREAT | O_WRONLY, 0644)));
  if (statvfs("/tmp", &st) == 0) printf("tmp.bytes=%llu\n", (unsigned long long)st.f_blocks * st.f_frsize);
  printf("tmp.nosuid=%s\n", statvfs("/tmp", &st) == 0 && (st.f_flag & ST_NOSUID) ? "yes" : "no");
  printf("run.create=%s\n", Outcome(open("/run/probe", O_CREAT | O_WRONLY, 0644)));
  printf("var_tmp.create=%s\n", Outcome(open("/var/tmp/probe", O_CREAT | O_WRONLY, 0644)));
  if (statvfs("/var/tmp", &st) == 0) printf("var_tmp.bytes=%llu\n", (unsigned long long)st.f_blocks * st.f_frsize);
  printf("dev_shm.create=%s\n", Outcome(open("/dev/shm/probe", O_CREAT | O_WRONLY, 0644)));
  if (statvfs("/dev/shm", &st) == 0) printf("dev_shm.bytes=%llu\n", (unsigned long long)st.f_blocks * st.f_frsize);
  printf("out.create=%s\n", Outcome(open("/out/probe", O_CREAT | O_WRONLY, 0644)));
  printf("in.create=%s\n", Outcome(open("/in/probe", O_CREAT | O_WRONLY, 0644)));
  printf("proc_sys.write=%s\n", Outcome(open("/proc/sys/kernel/hostname", O_WRONLY)));
  printf("proc_sysrq.write=%s\n", Outcome(open("/proc/sysrq-trigger", O_WRONLY)));
  char buf[16];
  int fd = open("/proc/kcore", O_RDONLY);
  printf("proc_kcore.read=%s\n", fd < 0 ? Outcome(fd) : read(fd, buf, sizeof buf) == 0 ? "empty" : "data");
  fd = open("/proc/keys", O_RDONLY);
  printf("proc_keys.read=%s\n", fd < 0 ? Outcome(fd) : read(fd, buf, sizeof buf) == 0 ? "empty" : "data");
  DIR* d = opendir("/sys/firmware");
  int entries = 0;
  while (d && readdir(d)) entries++;
  printf("sys_firmware.entries=%d\n", d ? entries - 2 : -1);
  if (d) closedir(d);
  printf("sys.create=%s\n", Outcome(open("/sys/probe", O_CREAT | O_WRONLY, 0644)));
  printf("mount.tmpfs=%s\n", Outcome(mount("none", "/tmp", "tmpfs", 0, NULL)));
}

static void Devices(void) {
  DIR* d = opendir("/dev");
  char names[1024] = "";
  struct dirent* e;
  /* readdir order differs between filesystems: collect, then sort. */
  char* list[64];
  int n = 0;
  while (d && (e = readdir(d)) && n < 64) {
    if (e->d_name[0] != '.') list[n++] = strdup(e->d_name);
  }
  if (d) closedir(d);
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (strcmp(list[i], list[j]) > 0) { char* t = list[i]; list[i] = list[j]; list[j] = t; }
  for (int i = 0; i < n; i++) {
    strncat(names, list[i], sizeof names - strlen(names) - 2);
    strcat(names, ",");
  }
  printf("dev.entries=%s\n", names);
}

static void Network(void) {
  FILE* f = fopen("/proc/net/dev", "r");
  char line[512], names[256] = "";
  while (f && fgets(line, sizeof line, f)) {
    char* colon = strchr(line, ':');
    if (!colon) continue;
    *colon = 0;
    char* name = line;
    while (*name == ' ') name++;
    strncat(names, name, sizeof names - strlen(names) - 2);
    strcat(names, ",");
  }
  if (f) fclose(f);
  printf("net.interfaces=%s\n", names);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  printf("net.socket=%s\n", Outcome(s));
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons(80);
  inet_pton(AF_INET, "1.1.1.1", &a.sin_addr);
  printf("net.connect_external=%s\n", Outcome(connect(s, (struct sockaddr*)&a, sizeof a)));
  int u = socket(AF_INET, SOCK_DGRAM, 0);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  printf("net.bind_loopback=%s\n", Outcome(bind(u, (struct sockaddr*)&a, sizeof a)));
  printf("net.raw_socket=%s\n", Outcome(socket(AF_INET, SOCK_RAW, IPPROTO_ICMP)));
}

static void Syscalls(void) {
  /* Refused by the seccomp profile (or by missing capabilities). */
  printf("sys.kexec_load=%s\n", Outcome((int)syscall(SYS_kexec_load, 0, 0, 0, 0)));
  printf("sys.bpf=%s\n", Outcome((int)syscall(SYS_bpf, 0, 0, 0)));
  printf("sys.unknown=%s\n", Outcome((int)syscall(1000)));
  printf("sys.personality_bad=%s\n", Outcome((int)syscall(SYS_personality, 0x0400000)));
  printf("sys.chroot=%s\n", Outcome(chroot("/tmp")));
  printf("sys.setuid_1=%s\n", Outcome(setuid(1)));
  printf("sys.sethostname=%s\n", Outcome(sethostname("x", 1)));
  printf("sys.ptrace_self=%s\n", Outcome((int)syscall(SYS_ptrace, 16 /*ATTACH*/, 1, 0, 0)));
}

/* How many children can exist at once (at most 256): shows pids caps. */
static void Forks(void) {
  int n = 0;
  pid_t kids[256];
  int gate[2];
  if (pipe(gate) != 0) return;
  for (; n < 256; n++) {
    pid_t p = fork();
    if (p < 0) break;
    if (p == 0) {
      char c;
      close(gate[1]);
      read(gate[0], &c, 1); /* until the parent closes the gate */
      _exit(0);
    }
    kids[n] = p;
  }
  close(gate[1]);
  for (int i = 0; i < n; i++) waitpid(kids[i], NULL, 0);
  printf("forks=%d\n", n);
}

static void Identity(void) {
  printf("id.uid=%d\nid.gid=%d\nid.euid=%d\n", getuid(), getgid(), geteuid());
  gid_t groups[64];
  int n = getgroups(64, groups);
  printf("id.groups=");
  for (int i = 0; i < n; i++) printf("%d,", (int)groups[i]);
  printf("\n");
  char cwd[256];
  printf("cwd=%s\n", getcwd(cwd, sizeof cwd) ? cwd : "?");
  printf("umask=%04o\n", umask(022));
  printf("pid=%d\n", getpid());
  for (char** e = environ; *e; e++) printf("env.%s\n", *e);
}

static int Leave(const char* name) {
  char path[256];
  snprintf(path, sizeof path, "/out/%s", name);
  FILE* f = fopen(path, "w");
  if (f) { fputs(name, f); fclose(f); }
  close(open("/tmp/left", O_CREAT | O_WRONLY, 0600));
  close(open("/dev/shm/left", O_CREAT | O_WRONLY, 0600));
  shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
  if (fork() == 0) {
    setsid();
    if (fork() == 0) { sleep(1000); _exit(0); }
    _exit(0);
  }
  wait(NULL);
  chmod("/out", 0);
  printf("left %s\n", name);
  return f ? 0 : 1;
}

static int Look(void) {
  printf("tmp_left=%s\n", access("/tmp/left", F_OK) == 0 ? "yes" : "no");
  printf("shm_left=%s\n", access("/dev/shm/left", F_OK) == 0 ? "yes" : "no");
  int ipc = -1, others = 0, outs = 0;
  char line[512];
  FILE* f = fopen("/proc/sysvipc/shm", "r");
  while (f && fgets(line, sizeof line, f)) ipc++;
  if (f) fclose(f);
  printf("ipc_left=%d\n", ipc);
  DIR* d = opendir("/proc");
  for (struct dirent* e; d && (e = readdir(d));) {
    int pid = atoi(e->d_name);
    if (pid > 1 && pid != getpid()) others++;
  }
  if (d) closedir(d);
  printf("other_processes=%d\n", others);
  d = opendir("/out");
  if (!d) outs = -1;
  for (struct dirent* e; d && (e = readdir(d));) outs += e->d_name[0] != '.';
  if (d) closedir(d);
  printf("out_files=%d\n", outs);
  char comm[64] = "";
  f = fopen("/proc/1/comm", "r");
  if (f && fgets(comm, sizeof comm, f)) comm[strcspn(comm, "\n")] = 0;
  if (f) fclose(f);
  printf("pid1=%s\n", comm);
  return 0;
}

int main(int argc, char** argv) {
  if (argc > 2 && strcmp(argv[1], "leave") == 0) return Leave(argv[2]);
  if (argc > 1 && strcmp(argv[1], "look") == 0) return Look();
  if (argc > 1 && strcmp(argv[1], "exit") == 0) return argc > 2 ? atoi(argv[2]) : 0;
  if (argc > 1 && strcmp(argv[1], "sleep") == 0) {
    printf("sleeping\n");
    fflush(stdout);
    sleep(argc > 2 ? atoi(argv[2]) : 60);
    return 0;
  }
  if (argc > 3 && strcmp(argv[1], "write") == 0) {
    char path[256];
    snprintf(path, sizeof path, "/out/%s", argv[2]);
    FILE* f = fopen(path, "w");
    if (!f || fputs(argv[2], f) < 0 || fclose(f) != 0) return 1;
    printf("written\n");
    fflush(stdout);
    sleep(atoi(argv[3]));
    return 0;
  }
  if (argc > 2 && strcmp(argv[1], "spin") == 0) {
    /* Burns argv[2] ms of CPU in a child it waits for (metering tests). */
    pid_t child = fork();
    if (child == 0) {
      struct timespec t;
      const long want_ns = atol(argv[2]) * 1000000L;
      volatile unsigned long sink = 0;
      do {
        for (int i = 0; i < 100000; i++) sink += (unsigned long)i;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
      } while (t.tv_sec * 1000000000L + t.tv_nsec < want_ns);
      _exit(0);
    }
    waitpid(child, NULL, 0);
    printf("spun\n");
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "membomb") == 0) {
    for (int i = 0; i < 1024; i++) {
      char* p = malloc(1 << 20);
      if (!p) { printf("malloc failed after %d MiB\n", i); return 1; }
      memset(p, 1, 1 << 20);
    }
    printf("allocated 1 GiB\n");
    return 0;
  }
  if (argc > 1 && strcmp(argv[1], "echo") == 0) {
    for (int i = 2; i < argc; i++) printf("[%s]", argv[i]);
    printf("\n");
    fprintf(stderr, "to-stderr\n");
    return 3;
  }
  Identity();
  StatusLines();
  Limits();
  Filesystem();
  Devices();
  Network();
  Syscalls();
  Forks();
  return 0;
}
