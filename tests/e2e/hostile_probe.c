/* A hostile job, for the containment battery (tests/e2e/hostile_test.cc).
 * Built static into a FROM scratch image and run as ordinary jobs through a
 * real agent. Runs ONLY inside a job's container: as root on a host, some of
 * these would succeed.
 *
 * Modes (argv[1]):
 *   battery      tries every escape below and prints one line per probe,
 *                "probe.NAME=contained (how)" or "probe.NAME=ESCAPED (what)",
 *                then "host_uid=N" (the host uid this process runs as, read
 *                from /proc/self/uid_map) and "probes=N"
 *   forkbomb     forks until it cannot; prints "forks=N" (exit 0)
 *   membomb      allocates and touches 1 MiB at a time up to 4 GiB; prints
 *                "malloc failed after N MiB" (exit 1) or "allocated" (exit 0)
 *   diskflood    writes /out/flood-<i> files of 64 MiB until a write fails
 *   logflood MIB prints MIB MiB of lines to stdout
 *   daemon       leaves a setsid daemon sleeping an hour, exits 0 at once
 *   noterm       ignores SIGTERM and sleeps an hour
 *   specials     leaves in /out: a symlink to /etc/passwd and one to /proc/1,
 *                a hard link, a fifo, a unix socket, a 0000 file, a 0700
 *                directory with a file, a regular file "ok.txt"
 *   manyfiles N  creates N empty files under /out/many */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int probes;

/* rc < 0 (or the given failure) is containment; success is an escape. */
static void Expect_fail(const char* name, long rc) {
  probes++;
  if (rc < 0) {
    printf("probe.%s=contained (%s)\n", name, strerror(errno));
  } else {
    printf("probe.%s=ESCAPED (returned %ld)\n", name, rc);
  }
}

static void Verdict(const char* name, int contained, const char* detail) {
  probes++;
  printf("probe.%s=%s (%s)\n", name, contained ? "contained" : "ESCAPED", detail);
}

/* A child made with clone(flags): it exits at once; the parent reaps it. */
static long CloneWith(unsigned long flags) {
  long pid = syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) _exit(0);
  if (pid > 0) waitpid((pid_t)pid, NULL, 0);
  return pid;
}

/* The status field (CapEff:, NoNewPrivs:, ...) of /proc/self/status. */
static void StatusField(const char* key, char* out, size_t n) {
  char line[256];
  out[0] = 0;
  FILE* f = fopen("/proc/self/status", "r");
  while (f && fgets(line, sizeof line, f)) {
    if (strncmp(line, key, strlen(key)) == 0) {
      char* v = line + strlen(key);
      while (*v == ' ' || *v == '\t') v++;
      v[strcspn(v, "\n")] = 0;
      snprintf(out, n, "%s", v);
    }
  }
  if (f) fclose(f);
}

static long HostUid(void) {
  FILE* f = fopen("/proc/self/uid_map", "r");
  long inside, outside, count, uid = getuid();
  long host = -1;
  while (f && fscanf(f, "%ld %ld %ld", &inside, &outside, &count) == 3) {
    if (uid >= inside && uid < inside + count) host = outside + (uid - inside);
  }
  if (f) fclose(f);
  return host;
}

static void Namespaces(void) {
  Expect_fail("unshare_user", unshare(CLONE_NEWUSER));
  Expect_fail("unshare_mount", unshare(CLONE_NEWNS));
  Expect_fail("unshare_net", unshare(CLONE_NEWNET));
  Expect_fail("clone_newuser", CloneWith(CLONE_NEWUSER));
  Expect_fail("clone_newns", CloneWith(CLONE_NEWNS));
  int fd = open("/proc/self/ns/net", O_RDONLY);
  Expect_fail("setns", fd < 0 ? -1 : setns(fd, 0));
  if (fd >= 0) close(fd);
}

static void Keyrings(void) {
  Expect_fail("keyctl_join", syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, 0));
  Expect_fail("add_key", syscall(SYS_add_key, "user", "probe", "secret", 6, KEY_SPEC_PROCESS_KEYRING));
  Expect_fail("request_key", syscall(SYS_request_key, "user", "probe", NULL, KEY_SPEC_PROCESS_KEYRING));
}

static void KernelInterfaces(void) {
  Expect_fail("bpf", syscall(SYS_bpf, 0, NULL, 0));
  Expect_fail("perf_event_open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
  Expect_fail("userfaultfd", syscall(SYS_userfaultfd, 0));
  Expect_fail("io_uring_setup", syscall(SYS_io_uring_setup, 1, NULL));
  Expect_fail("kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0));
  Expect_fail("init_module", syscall(SYS_init_module, NULL, 0, ""));
  Expect_fail("delete_module", syscall(SYS_delete_module, "loop", 0));
  Expect_fail("open_by_handle_at", syscall(SYS_open_by_handle_at, AT_FDCWD, NULL, 0));
  Expect_fail("reboot", syscall(SYS_reboot, 0xfee1dead, 672274793, RB_POWER_OFF, NULL));
  Expect_fail("swapon", syscall(SYS_swapon, "/tmp/swap", 0));
  Expect_fail("syslog_read", syscall(SYS_syslog, 3, NULL, 0));
  Expect_fail("personality_exec", syscall(SYS_personality, 0x0400000));
}

static void Processes(void) {
  Expect_fail("ptrace_init", syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, 1, 0, 0));
  pid_t parent = getppid();
  Expect_fail("ptrace_parent", syscall(SYS_ptrace, 16, parent, 0, 0));
  char buf[16];
  struct iovec local = {buf, sizeof buf}, remote = {(void*)0x400000, sizeof buf};
  Expect_fail("process_vm_readv", syscall(SYS_process_vm_readv, 1, &local, 1, &remote, 1, 0));
}

static void Mounts(void) {
  Expect_fail("mount_tmpfs", mount("none", "/tmp", "tmpfs", 0, NULL));
  Expect_fail("mount_proc", mount("proc", "/tmp", "proc", 0, NULL));
  Expect_fail("umount_out", umount2("/out", MNT_DETACH));
  Expect_fail("remount_root_rw", mount(NULL, "/", NULL, MS_REMOUNT, NULL));
  Expect_fail("pivot_root", syscall(SYS_pivot_root, "/tmp", "/tmp"));
  Expect_fail("chroot", chroot("/tmp"));
}

static void Privileges(void) {
  char v[64];
  StatusField("CapEff:", v, sizeof v);
  Verdict("caps_effective", strcmp(v, "0000000000000000") == 0, v);
  StatusField("CapPrm:", v, sizeof v);
  Verdict("caps_permitted", strcmp(v, "0000000000000000") == 0, v);
  StatusField("CapBnd:", v, sizeof v);
  Verdict("caps_bounding", strcmp(v, "0000000000000000") == 0, v);
  StatusField("NoNewPrivs:", v, sizeof v);
  Verdict("no_new_privs", strcmp(v, "1") == 0, v);
  StatusField("Seccomp:", v, sizeof v);
  Verdict("seccomp_filter", strcmp(v, "2") == 0, v);
  Expect_fail("setuid_root", getuid() == 0 ? -1 : setuid(0));
  Expect_fail("sethostname", sethostname("evil", 4));
  struct timeval tv = {0, 0};
  Expect_fail("settimeofday", settimeofday(&tv, NULL));
  struct timespec ts = {0, 0};
  Expect_fail("clock_settime", clock_settime(CLOCK_REALTIME, &ts));
}

static void Filesystems(void) {
  Expect_fail("write_root", open("/probe", O_CREAT | O_WRONLY, 0644));
  Expect_fail("write_proc_sys", open("/proc/sys/kernel/hostname", O_WRONLY));
  Expect_fail("write_sysrq", open("/proc/sysrq-trigger", O_WRONLY));
  Expect_fail("write_sys", open("/sys/kernel/uevent_helper", O_WRONLY));
  Expect_fail("write_cgroup", open("/sys/fs/cgroup/cgroup.procs", O_WRONLY));
  Expect_fail("mknod_mem", mknod("/tmp/mem", S_IFCHR | 0600, makedev(1, 1)));
  Expect_fail("mknod_disk", mknod("/tmp/sda", S_IFBLK | 0600, makedev(8, 0)));
  char buf[16];
  int fd = open("/proc/kcore", O_RDONLY);
  long got = fd < 0 ? -1 : read(fd, buf, sizeof buf);
  Verdict("read_kcore", got <= 0, got < 0 ? "unreadable" : "empty");
  if (fd >= 0) close(fd);
  int host_devices = 0;
  static const char* devices[] = {"/dev/mem", "/dev/kmem", "/dev/sda", "/dev/nvme0n1", "/dev/kmsg", "/dev/port"};
  for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++) {
    struct stat st;
    if (stat(devices[i], &st) == 0) host_devices++;
  }
  Verdict("host_devices", host_devices == 0, host_devices == 0 ? "none visible" : "some visible");
}

static void Network(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons(80);
  inet_pton(AF_INET, "1.1.1.1", &a.sin_addr);
  Expect_fail("connect_external", s < 0 ? -1 : connect(s, (struct sockaddr*)&a, sizeof a));
  if (s >= 0) close(s);
  Expect_fail("raw_socket", socket(AF_INET, SOCK_RAW, IPPROTO_ICMP));
  Expect_fail("packet_socket", socket(AF_PACKET, SOCK_RAW, 0));
  int interfaces = 0;
  char line[256];
  FILE* f = fopen("/proc/net/dev", "r");
  while (f && fgets(line, sizeof line, f)) {
    char* colon = strchr(line, ':');
    if (!colon) continue;
    *colon = 0;
    char* name = line;
    while (*name == ' ') name++;
    if (strcmp(name, "lo") != 0) interfaces++;
  }
  if (f) fclose(f);
  Verdict("network_interfaces", interfaces == 0, interfaces == 0 ? "loopback only" : "more than loopback");
}

static int Battery(void) {
  Namespaces();
  Keyrings();
  KernelInterfaces();
  Processes();
  Mounts();
  Privileges();
  Filesystems();
  Network();
  printf("uid=%d\nhost_uid=%ld\nprobes=%d\n", (int)getuid(), HostUid(), probes);
  return 0;
}

static int ForkBomb(void) {
  int n = 0;
  for (; n < 100000; n++) {
    pid_t p = fork();
    if (p < 0) break;
    if (p == 0) {
      pause();
      _exit(0);
    }
  }
  printf("forks=%d\n", n);
  fflush(stdout);
  kill(0, SIGKILL); /* takes the children (and itself) down */
  return 0;
}

static int MemBomb(void) {
  for (int i = 0; i < 4096; i++) {
    char* p = malloc(1 << 20);
    if (!p) {
      printf("malloc failed after %d MiB\n", i);
      return 1;
    }
    memset(p, 1, 1 << 20);
  }
  printf("allocated\n");
  return 0;
}

static int DiskFlood(void) {
  static char block[1 << 20];
  memset(block, 'x', sizeof block);
  signal(SIGXFSZ, SIG_IGN); /* see EFBIG instead of dying */
  for (int i = 0; i < 100000; i++) {
    char path[64];
    snprintf(path, sizeof path, "/out/flood-%d", i);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0) {
      printf("open failed at file %d: %s\n", i, strerror(errno));
      return 1;
    }
    for (int mib = 0; mib < 64; mib++) {
      if (write(fd, block, sizeof block) != (ssize_t)sizeof block) {
        printf("write failed in file %d: %s\n", i, strerror(errno));
        close(fd);
        return 1;
      }
    }
    close(fd);
  }
  return 0;
}

static int LogFlood(int mib) {
  char line[1024];
  memset(line, 'y', sizeof line - 1);
  line[sizeof line - 1] = '\n';
  for (int i = 0; i < mib * 1024; i++) fwrite(line, 1, sizeof line, stdout);
  return 0;
}

static int Daemon(void) {
  if (fork() == 0) {
    setsid();
    if (fork() == 0) {
      for (int fd = 0; fd < 3; fd++) close(fd);
      sleep(3600);
      _exit(0);
    }
    _exit(0);
  }
  wait(NULL);
  printf("daemon left\n");
  return 0;
}

static int NoTerm(void) {
  signal(SIGTERM, SIG_IGN);
  printf("ignoring SIGTERM\n");
  fflush(stdout);
  sleep(3600);
  return 0;
}

static int Specials(void) {
  FILE* f = fopen("/out/ok.txt", "w");
  if (!f) return 1;
  fputs("ok\n", f);
  fclose(f);
  int bad = 0;
  bad |= symlink("/etc/passwd", "/out/passwd-link");
  bad |= symlink("/proc/1/root", "/out/root-link");
  bad |= link("/out/ok.txt", "/out/hard-link");
  bad |= mkfifo("/out/fifo", 0644);
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un a = {0};
  a.sun_family = AF_UNIX;
  strcpy(a.sun_path, "/out/socket");
  bad |= s < 0 || bind(s, (struct sockaddr*)&a, sizeof a) != 0;
  int fd = open("/out/hidden.txt", O_CREAT | O_WRONLY, 0000);
  bad |= fd < 0;
  if (fd >= 0) close(fd);
  bad |= mkdir("/out/private", 0700);
  f = fopen("/out/private/inside.txt", "w");
  bad |= f == NULL;
  if (f) fclose(f);
  bad |= chmod("/out/private", 0);
  printf("specials %s\n", bad ? "partly made" : "made");
  return 0;
}

static int ManyFiles(int n) {
  if (mkdir("/out/many", 0755) != 0) return 1;
  for (int i = 0; i < n; i++) {
    char path[64];
    snprintf(path, sizeof path, "/out/many/f%d", i);
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    if (fd < 0) {
      printf("created %d files, then: %s\n", i, strerror(errno));
      return 1;
    }
    close(fd);
  }
  printf("created %d files\n", n);
  return 0;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "battery";
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (strcmp(mode, "battery") == 0) return Battery();
  if (strcmp(mode, "forkbomb") == 0) return ForkBomb();
  if (strcmp(mode, "membomb") == 0) return MemBomb();
  if (strcmp(mode, "diskflood") == 0) return DiskFlood();
  if (strcmp(mode, "logflood") == 0) return LogFlood(argc > 2 ? atoi(argv[2]) : 16);
  if (strcmp(mode, "daemon") == 0) return Daemon();
  if (strcmp(mode, "noterm") == 0) return NoTerm();
  if (strcmp(mode, "specials") == 0) return Specials();
  if (strcmp(mode, "manyfiles") == 0) return ManyFiles(argc > 2 ? atoi(argv[2]) : 1000);
  fprintf(stderr, "unknown mode %s\n", mode);
  return 2;
}
