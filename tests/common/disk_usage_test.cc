// MeasureTree (common/disk_usage.h) on real files: what a job could build to
// look smaller than it is (sparse files, preallocation, hard links, links
// out of the tree) is charged for what it costs.
#include "common/disk_usage.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/test_support.h"

namespace idlegrid {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
// Directories and inodes cost a few blocks of their own; a test with one
// deliberate MiB allows this much beside it.
constexpr uint64_t kSlack = 64 * 1024;

void WriteBytes(const std::string& path, uint64_t n) { std::ofstream(path, std::ios::binary) << std::string(n, 'x'); }

class MeasureTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    root_ = tmp_.path() + "/root";
    ASSERT_TRUE(std::filesystem::create_directory(root_));
  }
  uint64_t Measure() {
    Result<uint64_t> bytes = MeasureTree(root_);
    EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
    return bytes.ok() ? *bytes : 0;
  }
  testing::TempDir tmp_{"disk-usage"};
  std::string root_;
};

TEST_F(MeasureTreeTest, FilesInNestedDirectoriesCountTheirBytes) {
  const uint64_t empty = Measure();
  EXPECT_GT(empty, 0u) << "the root directory's own blocks";
  EXPECT_LT(empty, kSlack);
  std::filesystem::create_directories(root_ + "/a/b/c");
  WriteBytes(root_ + "/top.bin", kMiB);
  WriteBytes(root_ + "/a/b/c/deep.bin", 2 * kMiB);
  const uint64_t used = Measure();
  EXPECT_GE(used, 3 * kMiB);
  EXPECT_LT(used, 3 * kMiB + kSlack);
}

TEST_F(MeasureTreeTest, ASparseFileCountsItsLengthNotItsFewBlocks) {
  // 1 GiB long, nothing written: an upload of it would send 1 GiB.
  const int fd = ::open((root_ + "/sparse").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 1ll << 30), 0);
  ::close(fd);
  struct stat st;
  ASSERT_EQ(::stat((root_ + "/sparse").c_str(), &st), 0);
  ASSERT_LT(static_cast<uint64_t>(st.st_blocks) * 512, kMiB) << "the filesystem did not keep the file sparse";
  EXPECT_GE(Measure(), 1ull << 30);
}

TEST_F(MeasureTreeTest, SpacePreallocatedPastTheEndCountsItsBlocks) {
  // Length 0, 8 MiB of disk held: the disk is what fills up.
  const int fd = ::open((root_ + "/prealloc").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  const int rc = ::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 8 * kMiB);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && (err == EOPNOTSUPP || err == ENOSYS)) GTEST_SKIP() << "no fallocate on this filesystem";
  ASSERT_EQ(rc, 0) << std::strerror(err);
  EXPECT_GE(Measure(), 8 * kMiB);
}

TEST_F(MeasureTreeTest, HardLinksCountOncePerName) {
  // Each name is uploaded as an output of its own.
  WriteBytes(root_ + "/one", kMiB);
  ASSERT_EQ(::link((root_ + "/one").c_str(), (root_ + "/two").c_str()), 0);
  std::filesystem::create_directory(root_ + "/sub");
  ASSERT_EQ(::link((root_ + "/one").c_str(), (root_ + "/sub/three").c_str()), 0);
  const uint64_t used = Measure();
  EXPECT_GE(used, 3 * kMiB);
  EXPECT_LT(used, 3 * kMiB + kSlack);
}

TEST_F(MeasureTreeTest, SymbolicLinksAreNeverFollowed) {
  const std::string outside = tmp_.path() + "/outside";
  std::filesystem::create_directory(outside);
  WriteBytes(outside + "/big.bin", 4 * kMiB);
  std::filesystem::create_symlink(outside + "/big.bin", root_ + "/to-file");
  std::filesystem::create_directory_symlink(outside, root_ + "/to-dir");
  std::filesystem::create_symlink("/", root_ + "/to-root");
  EXPECT_LT(Measure(), kSlack) << "a link is charged as itself only";

  // Nor is a root that is itself a link.
  const std::string linked_root = tmp_.path() + "/linked-root";
  std::filesystem::create_directory_symlink(outside, linked_root);
  Result<uint64_t> through_link = MeasureTree(linked_root);
  EXPECT_FALSE(through_link.ok());
}

TEST_F(MeasureTreeTest, AMissingRootIsNotFound) {
  Result<uint64_t> missing = MeasureTree(tmp_.path() + "/nothing-here");
  EXPECT_EQ(missing.status().code(), Code::kNotFound) << missing.status().ToString();
}

TEST_F(MeasureTreeTest, NestingPastTheDepthLimitIsAnErrorNotASilentUndercount) {
  std::string dir = root_;
  for (int i = 0; i <= kMaxTreeDepth; ++i) dir += "/d";
  std::filesystem::create_directories(dir);
  WriteBytes(dir + "/hidden.bin", kMiB);
  Result<uint64_t> bytes = MeasureTree(root_);
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.status().message().find("nested more than"), std::string::npos) << bytes.status().ToString();
}

TEST_F(MeasureTreeTest, ADirectoryItsOwnerLockedIsOpenedAndCounted) {
  // A rootless job's root is the agent's user: it may chmod 0 a directory
  // to hide what is in it.
  std::filesystem::create_directory(root_ + "/locked");
  WriteBytes(root_ + "/locked/hidden.bin", kMiB);
  ASSERT_EQ(::chmod((root_ + "/locked").c_str(), 0), 0);
  EXPECT_GE(Measure(), kMiB);
  struct stat st;
  ASSERT_EQ(::stat((root_ + "/locked").c_str(), &st), 0);
  if (::geteuid() != 0) EXPECT_EQ(st.st_mode & 0777, 0700u) << "given owner access, nothing more";
  ASSERT_EQ(::chmod((root_ + "/locked").c_str(), 0700), 0);
}

}  // namespace
}  // namespace idlegrid
