// Freezing a container's processes with signals (runtime/process_freeze.h):
// the tree under a root, stopped and continued as a whole.
#include "runtime/process_freeze.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace idlegrid::runtime {
namespace {

TEST(ProcessFreezeTest, DescendantsAreTheWholeTreeRootFirst) {
  // 1 -> 10 -> {11, 12 -> 13}; 20 is another tree.
  std::map<int, int> parents = {{10, 1}, {11, 10}, {12, 10}, {13, 12}, {20, 1}};
  EXPECT_EQ(DescendantsOf(10, parents), (std::vector<int>{10, 11, 12, 13}));
  EXPECT_EQ(DescendantsOf(13, parents), (std::vector<int>{13}));
}

TEST(ProcessFreezeTest, InitPidFromRuncState) {
  auto pid = InitPidOfRuncState(
      "{\n  \"ociVersion\": \"1.0.2\",\n  \"id\": \"x\",\n  \"pid\": 4242,\n  \"status\": \"running\"}");
  ASSERT_TRUE(pid.ok());
  EXPECT_EQ(*pid, 4242);
  EXPECT_FALSE(InitPidOfRuncState("{\"pid\": 0, \"status\": \"stopped\"}").ok());
  EXPECT_FALSE(InitPidOfRuncState("{}").ok());
}

char State(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

TEST(ProcessFreezeTest, StopsAndContinuesAProcessAndItsChild) {
  pid_t root = ::fork();
  ASSERT_GE(root, 0);
  if (root == 0) {
    // A child that forks a grandchild; both spin until killed.
    ::setpgid(0, 0);
    if (::fork() == 0)
      for (;;) {
      }
    for (;;) {
    }
  }
  std::vector<int> tree;
  for (int i = 0; i < 200 && tree.size() < 2; ++i) {
    tree = DescendantsOf(root, ReadParentMap());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(tree.size(), 2u);
  ASSERT_TRUE(StopTree(root).ok());
  for (int pid : tree) {
    bool stopped = false;
    for (int i = 0; i < 200 && !stopped; ++i) {
      stopped = State(pid) == 'T';
      if (!stopped) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_TRUE(stopped) << pid << " is " << State(pid);
  }
  ASSERT_TRUE(ContinueTree(root).ok());
  for (int pid : tree) {
    bool running = false;
    for (int i = 0; i < 200 && !running; ++i) {
      running = State(pid) != 'T';
      if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_TRUE(running) << pid;
  }
  ::kill(-root, SIGKILL);
  ::waitpid(root, nullptr, 0);
  EXPECT_EQ(StopTree(999999999).code(), Code::kNotFound);
}

}  // namespace
}  // namespace idlegrid::runtime
