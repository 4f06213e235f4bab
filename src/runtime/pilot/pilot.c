/* The pilot: PID 1 of one sandbox that runs many tasks of one array job,
 * one after another (src/runtime/pilot_pool.h explains why and what the
 * agent does around it). Built static and bind-mounted read-only into the
 * container at /.idlegrid/pilot, so it runs with exactly the sandbox a task
 * would get (same namespaces, seccomp filter, rlimits, no capabilities); the
 * tasks it starts inherit all of it.
 *
 *   pilot DIR... [--give-back OUT...]
 *                  DIRs: writable directories (tmpfs) whose contents a task
 *                  may leave behind; before each task every entry that was
 *                  not there when the pilot started is removed. OUTs: the
 *                  job's writable mounts, whose contents the agent moves out
 *                  after each task: once the task's processes are dead,
 *                  everything in them is made readable (files) and fully
 *                  accessible (directories) to all, so that the agent, which
 *                  is not the job user, can move and remove it. Only the
 *                  agent's private attempt directories hold them on the host.
 *   fd 3           requests from the agent; end of file means "exit now".
 *   fd 4           replies.
 *   fds 5, 6       the tasks' stdout and stderr: pipes the agent reads
 *                  directly. (The pilot's own 1 and 2 are copied by `runc
 *                  run` asynchronously, so a task's last output could arrive
 *                  after its reply; these cannot: every writer is dead before
 *                  the reply is written.)
 *
 * Frames (both ways): a 4-byte little-endian length, then that many bytes of
 * NUL-terminated strings.
 *   request  "run" CWD ARGC ARGV... ENVC ENV...
 *   reply    "exit" CODE CPU    the task ended (128+N: killed by signal N);
 *                               CPU: user + system microseconds of all its
 *                               processes (RUSAGE_CHILDREN before and after:
 *                               as init the pilot reaps them all, orphans too)
 *            "execfail" TEXT    the program could not be started
 *            "unclean" TEXT     the sandbox could not be cleared: the task
 *                               did not run; the agent discards this pilot
 *
 * After a task's main process ends, every other process in the container
 * (daemons it left, even ones that called setsid) is SIGKILLed and reaped
 * before the reply, so nothing of one task runs on into the next. That uses
 * kill(-1), which is why the pilot refuses to run unless it is PID 1 of its
 * own PID namespace: there kill(-1) reaches only the namespace's processes.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

enum { kRequestFd = 3, kReplyFd = 4, kTaskStdout = 5, kTaskStderr = 6, kMaxFrame = 1 << 20, kMaxDirs = 16, kMaxEntries = 256, kMaxDepth = 128 };

struct Dir {
  const char* path;
  mode_t mode; /* restored before clearing: a task may have chmod-ed it */
  int kept_count;
  char* kept[kMaxEntries];
};

static struct Dir dirs[kMaxDirs];
static int dir_count;
static const char* give_back[kMaxDirs];
static int give_back_count;
static char unclean[512];

static int ReadFull(int fd, void* buf, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = read(fd, (char*)buf + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return done == 0 && r == 0 ? 0 : -1;
    done += (size_t)r;
  }
  return 1;
}

static void WriteFull(int fd, const char* buf, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, buf, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) _exit(5); /* the agent is gone */
    buf += w;
    n -= (size_t)w;
  }
}

/* A reply of `kind`, `value` and, unless NULL, `extra` (short). */
static void Reply3(const char* kind, const char* value, const char* extra) {
  char frame[4 + 1100];
  size_t a = strlen(kind) + 1, b = strnlen(value, 1000) + 1, c = extra ? strnlen(extra, 32) + 1 : 0;
  uint32_t len = (uint32_t)(a + b + c);
  for (int i = 0; i < 4; i++) frame[i] = (char)((len >> (8 * i)) & 0xff);
  memcpy(frame + 4, kind, a);
  memcpy(frame + 4 + a, value, b - 1);
  frame[4 + a + b - 1] = 0;
  if (extra) {
    memcpy(frame + 4 + a + b, extra, c - 1);
    frame[4 + a + b + c - 1] = 0;
  }
  WriteFull(kReplyFd, frame, 4 + len);
}

static void Reply(const char* kind, const char* value) { Reply3(kind, value, NULL); }

static uint64_t CpuUsec(const struct rusage* r) {
  return (uint64_t)r->ru_utime.tv_sec * 1000000u + (uint64_t)r->ru_utime.tv_usec +
         (uint64_t)r->ru_stime.tv_sec * 1000000u + (uint64_t)r->ru_stime.tv_usec;
}

static int Kept(const struct Dir* d, const char* name) {
  for (int i = 0; i < d->kept_count; i++) {
    if (strcmp(d->kept[i], name) == 0) return 1;
  }
  return 0;
}

/* Removes `name` (relative to `parent`) and everything under it, without
 * following symlinks or crossing into other mounts' contents. */
static int RemoveEntry(int parent, const char* name, int depth) {
  struct stat st;
  if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT ? 0 : -1;
  if (!S_ISDIR(st.st_mode)) return unlinkat(parent, name, 0) == 0 || errno == ENOENT ? 0 : -1;
  if (depth > kMaxDepth) {
    errno = ELOOP;
    return -1;
  }
  /* The task owned it and may have made it unreadable or unwritable. */
  fchmodat(parent, name, 0700, 0);
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  DIR* d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return -1;
  }
  int rc = 0;
  for (struct dirent* e; rc == 0 && (e = readdir(d)) != NULL;) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    rc = RemoveEntry(fd, e->d_name, depth + 1);
  }
  closedir(d);
  if (rc != 0) return rc;
  return unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

/* Opens up what a task left under the directory `fd` to the agent (see the
 * header): directories rwx for all, regular files readable by all. Links are
 * never followed; what the job user does not own is left as it is. */
static void OpenUp(int fd, int depth) {
  DIR* d = fdopendir(fd);
  if (d == NULL) {
    close(fd);
    return;
  }
  for (struct dirent* e; depth <= kMaxDepth && (e = readdir(d)) != NULL;) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      fchmodat(dirfd(d), e->d_name, (st.st_mode & 07777) | 0777, 0);
      int child = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (child >= 0) OpenUp(child, depth + 1);
    } else if (S_ISREG(st.st_mode)) {
      fchmodat(dirfd(d), e->d_name, (st.st_mode & 07777) | 0444, 0);
    }
  }
  closedir(d);
}

static void GiveBack(void) {
  for (int i = 0; i < give_back_count; i++) {
    int fd = open(give_back[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) OpenUp(fd, 0);
  }
}

static int ClearDir(struct Dir* d) {
  chmod(d->path, d->mode);
  DIR* dir = opendir(d->path);
  if (dir == NULL) return -1;
  int rc = 0;
  /* Removing while reading may skip entries; repeat until a pass removes none. */
  for (int removed = 1, passes = 0; removed && rc == 0 && passes < 64; passes++) {
    removed = 0;
    rewinddir(dir);
    for (struct dirent* e; rc == 0 && (e = readdir(dir)) != NULL;) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 || Kept(d, e->d_name)) continue;
      rc = RemoveEntry(dirfd(dir), e->d_name, 0);
      if (rc != 0) snprintf(unclean, sizeof unclean, "cannot remove %s/%s: %s", d->path, e->d_name, strerror(errno));
      removed = 1;
    }
  }
  closedir(dir);
  return rc;
}

/* SysV IPC objects outlive their processes: remove every one in this
 * container's IPC namespace. */
static void ClearIpc(void) {
  static const char* tables[] = {"/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem"};
  for (int t = 0; t < 3; t++) {
    FILE* f = fopen(tables[t], "re");
    if (f == NULL) continue;
    char line[512];
    if (fgets(line, sizeof line, f) == NULL) { /* header */
      fclose(f);
      continue;
    }
    while (fgets(line, sizeof line, f) != NULL) {
      long key, id;
      if (sscanf(line, "%ld %ld", &key, &id) != 2) continue;
      if (t == 0) shmctl((int)id, IPC_RMID, NULL);
      if (t == 1) msgctl((int)id, IPC_RMID, NULL);
      if (t == 2) semctl((int)id, 0, IPC_RMID);
    }
    fclose(f);
  }
}

static void Remember(const char* path) {
  if (dir_count == kMaxDirs) return;
  struct Dir* d = &dirs[dir_count];
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return;
  d->path = path;
  d->mode = st.st_mode & 07777;
  DIR* dir = opendir(path);
  if (dir == NULL) return;
  for (struct dirent* e; (e = readdir(dir)) != NULL && d->kept_count < kMaxEntries;) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) d->kept[d->kept_count++] = strdup(e->d_name);
  }
  closedir(dir);
  dir_count++;
}

/* Kills every process of the container but this one and reaps them all. */
static void KillTheRest(void) {
  kill(-1, SIGKILL);
  for (;;) {
    pid_t p = waitpid(-1, NULL, 0);
    if (p > 0 || (p < 0 && errno == EINTR)) continue;
    break; /* ECHILD: none left */
  }
}

/* Splits a request payload into its strings; NULL-terminated lists. */
static int Parse(char* payload, uint32_t len, char** cwd, char*** argv, char*** envp) {
  if (len == 0 || payload[len - 1] != 0) return -1;
  static char* fields[kMaxFrame / 64];
  size_t n = 0;
  for (char* p = payload; p < payload + len && n < sizeof fields / sizeof fields[0]; p += strlen(p) + 1) fields[n++] = p;
  if (n < 4 || strcmp(fields[0], "run") != 0) return -1;
  *cwd = fields[1];
  char* end;
  unsigned long argc = strtoul(fields[2], &end, 10);
  if (*end != 0 || argc == 0 || 3 + argc >= n) return -1;
  unsigned long envc = strtoul(fields[3 + argc], &end, 10);
  if (*end != 0 || 4 + argc + envc != n) return -1;
  *argv = calloc(argc + 1, sizeof(char*));
  *envp = calloc(envc + 2, sizeof(char*));
  if (*argv == NULL || *envp == NULL) return -1;
  for (unsigned long i = 0; i < argc; i++) (*argv)[i] = fields[3 + i];
  int has_home = 0;
  for (unsigned long i = 0; i < envc; i++) {
    (*envp)[i] = fields[4 + argc + i];
    has_home |= strncmp((*envp)[i], "HOME=", 5) == 0;
  }
  /* runc gives a process without HOME the user's home (or "/"); it gave us
   * ours, and tasks run as our user. */
  static char home[4096 + 5];
  if (!has_home && getenv("HOME") != NULL) {
    snprintf(home, sizeof home, "HOME=%s", getenv("HOME"));
    (*envp)[envc] = home;
  }
  return 0;
}

static void RunTask(const char* cwd, char** argv, char** envp) {
  /* What the tasks before this one used: the reply counts this task's only. */
  struct rusage before;
  memset(&before, 0, sizeof before);
  getrusage(RUSAGE_CHILDREN, &before);
  int errpipe[2];
  if (pipe2(errpipe, O_CLOEXEC) != 0) {
    Reply("execfail", "pipe failed");
    return;
  }
  pid_t child = fork();
  if (child < 0) {
    char text[128];
    snprintf(text, sizeof text, "fork: %s", strerror(errno));
    close(errpipe[0]);
    close(errpipe[1]);
    Reply("execfail", text);
    return;
  }
  if (child == 0) {
    if (dup2(kTaskStdout, 1) < 0 || dup2(kTaskStderr, 2) < 0) _exit(127);
    close(kRequestFd);
    close(kReplyFd);
    close(kTaskStdout);
    close(kTaskStderr);
    close(errpipe[0]);
    setsid();
    int err = 0;
    if (chdir(cwd) != 0) {
      err = errno;
    } else {
      environ = envp; /* execvp searches the task's PATH */
      execvp(argv[0], argv);
      err = errno;
    }
    if (write(errpipe[1], &err, sizeof err) < 0) _exit(127);
    _exit(127);
  }
  close(errpipe[1]);
  int exec_errno = 0;
  int got = ReadFull(errpipe[0], &exec_errno, sizeof exec_errno);
  close(errpipe[0]);
  int status = 0;
  for (;;) {
    pid_t p = waitpid(-1, &status, 0);
    if (p == child) break;
    if (p < 0 && errno != EINTR) break;
  }
  KillTheRest();
  GiveBack();
  if (got == 1) {
    char text[512];
    snprintf(text, sizeof text, "exec %s (in %s): %s", argv[0], cwd, strerror(exec_errno));
    Reply("execfail", text);
    return;
  }
  struct rusage after;
  memset(&after, 0, sizeof after);
  getrusage(RUSAGE_CHILDREN, &after);
  char code[16], cpu[32];
  snprintf(code, sizeof code, "%d", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  const uint64_t used = CpuUsec(&after) >= CpuUsec(&before) ? CpuUsec(&after) - CpuUsec(&before) : 0;
  snprintf(cpu, sizeof cpu, "%llu", (unsigned long long)used);
  Reply3("exit", code, cpu);
}

int main(int argc, char** argv) {
  if (getpid() != 1) {
    fprintf(stderr, "pilot: refusing to run: not the init (PID 1) of a container's PID namespace\n");
    return 2;
  }
  /* Tasks run as our uid: being undumpable keeps them out of our /proc
   * entries (fds 3 and 4) and from ptrace. */
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  int outs = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--give-back") == 0) {
      outs = 1;
    } else if (outs) {
      if (give_back_count < kMaxDirs) give_back[give_back_count++] = argv[i];
    } else {
      Remember(argv[i]);
    }
  }
  static char payload[kMaxFrame];
  for (;;) {
    unsigned char head[4];
    int r = ReadFull(kRequestFd, head, sizeof head);
    if (r == 0) return 0; /* the agent retired this pilot */
    if (r < 0) return 3;
    uint32_t len = (uint32_t)head[0] | (uint32_t)head[1] << 8 | (uint32_t)head[2] << 16 | (uint32_t)head[3] << 24;
    if (len > kMaxFrame || ReadFull(kRequestFd, payload, len) != 1) return 3;
    char *cwd, **task_argv, **task_env;
    if (Parse(payload, len, &cwd, &task_argv, &task_env) != 0) {
      Reply("unclean", "malformed request");
      return 3;
    }
    ClearIpc();
    int clean = 0;
    for (int i = 0; i < dir_count && clean == 0; i++) clean = ClearDir(&dirs[i]);
    if (clean != 0) {
      Reply("unclean", unclean[0] ? unclean : "cannot clear the sandbox");
      return 4;
    }
    RunTask(cwd, task_argv, task_env);
    free(task_argv);
    free(task_env);
  }
}
