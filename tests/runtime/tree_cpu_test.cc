// CPU time of a process tree from /proc (runtime/tree_cpu.h): the parser on
// plain lines, the sampler on a real tree of this host's processes (a child
// that waits for a spinning grandchild; nothing privileged).
#include "runtime/tree_cpu.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

namespace idlegrid::runtime {
namespace {

TEST(ParseProcStat, ReadsTheFieldsAfterTheLastParenthesis) {
  // comm with spaces and parentheses; utime 11, stime 22, cutime 33,
  // cstime 44, starttime 777.
  const std::string line =
      "4242 (a) (b c) S 17 4242 4242 0 -1 4194560 100 0 0 0 11 22 33 44 20 0 1 0 777 1000 50 18446744073709551615";
  auto p = ParseProcStat(line);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->ppid, 17);
  EXPECT_EQ(p->own_ticks, 33u);
  EXPECT_EQ(p->children_ticks, 77u);
  EXPECT_EQ(p->start_ticks, 777u);
}

TEST(ParseProcStat, RefusesMalformedLines) {
  EXPECT_FALSE(ParseProcStat(""));
  EXPECT_FALSE(ParseProcStat("4242 no parenthesis S 1 2 3"));
  EXPECT_FALSE(ParseProcStat("4242 (short) S 1 2 3 4"));
  EXPECT_FALSE(ParseProcStat("4242 (x) S 1 0 0 0 -1 0 0 0 0 0 eleven 22 33 44 20 0 1 0 777"));
}

void Spin(std::chrono::milliseconds cpu) {
  timespec start{}, now{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
  do {
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1'000'000 < cpu.count());
}

TEST(TreeCpuSampler, CountsADescendantThatExitedAndWasWaitedFor) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The grandchild burns 400 ms of CPU and exits; the child waits for it
    // (its time moves into the child's cutime), says so, and idles.
    const pid_t grandchild = ::fork();
    if (grandchild == 0) {
      Spin(std::chrono::milliseconds(400));
      ::_exit(0);
    }
    ::waitpid(grandchild, nullptr, 0);
    (void)!::write(ready[1], "x", 1);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  TreeCpuSampler sampler(child);
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ASSERT_TRUE(sampler.Sample());
  EXPECT_TRUE(sampler.measured());
  EXPECT_GE(sampler.usec(), 350'000u) << "the grandchild's 400 ms, through the child's cutime";
  EXPECT_LT(sampler.usec(), 5'000'000u);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  const uint64_t seen = sampler.usec();
  EXPECT_FALSE(sampler.Sample()) << "the root is gone";
  EXPECT_EQ(sampler.usec(), seen) << "the figure stays what was seen";
}

// A child that burns `cpu` and then idles until killed; returns once it
// has burnt it (-1 if it could not start).
pid_t SpunChild(std::chrono::milliseconds cpu) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t child = ::fork();
  if (child == 0) {
    Spin(cpu);
    (void)!::write(ready[1], "x", 1);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char c;
  const bool spun = child > 0 && ::read(ready[0], &c, 1) == 1;
  ::close(ready[0]);
  return spun ? child : -1;
}

void Reap(pid_t child, const std::string& pidfile) {
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::unlink(pidfile.c_str());
}

TEST(TreeCpuWatch, SamplesTheProcessItsPidFileNamesAndOnceMoreWhenStopped) {
  const std::string pidfile = ::testing::TempDir() + "/tree-cpu-" + std::to_string(::getpid()) + ".pid";
  TreeCpuWatch watch(pidfile, std::chrono::milliseconds(50));
  const pid_t child = SpunChild(std::chrono::milliseconds(600));
  ASSERT_GT(child, 0);
  std::ofstream(pidfile) << child << "\n";
  watch.Stop();  // its last sample reads the pid file whether or not the thread had
  Reap(child, pidfile);
  EXPECT_TRUE(watch.measured());
  EXPECT_GE(watch.usec(), 550'000u);
  EXPECT_LT(watch.usec(), 5'000'000u);
}

TEST(TreeCpuWatch, APidFileWrittenBeforeTheWatchStartsIsRead) {
  // podman may write it before the driver's watch has looked once.
  const std::string pidfile = ::testing::TempDir() + "/tree-cpu-early-" + std::to_string(::getpid()) + ".pid";
  const pid_t child = SpunChild(std::chrono::milliseconds(300));
  ASSERT_GT(child, 0);
  std::ofstream(pidfile) << child << "\n";
  TreeCpuWatch watch(pidfile, std::chrono::milliseconds(50));
  watch.Stop();
  Reap(child, pidfile);
  EXPECT_TRUE(watch.measured());
  EXPECT_GE(watch.usec(), 250'000u);
}

TEST(TreeCpuWatch, NothingMeasuredWithoutAPidFile) {
  TreeCpuWatch watch(::testing::TempDir() + "/tree-cpu-none-" + std::to_string(::getpid()) + ".pid");
  watch.Stop();
  EXPECT_FALSE(watch.measured());
  EXPECT_EQ(watch.usec(), 0u);
}

}  // namespace
}  // namespace idlegrid::runtime
