// Directory inputs' archives (image/dir_archive.h): the packer is
// deterministic and refuses what is not a file or directory; the unpacker
// takes hostile archives, written here header by header.
#include "image/dir_archive.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/digest.h"
#include "common/fs.h"

namespace idlegrid::image {
namespace {

struct Entry {
  std::string name;
  char type = '0';
  std::string content = "";
  std::string link = "";
  uint32_t mode = 0644;
};

std::string Header(const Entry& e) {
  std::string h(512, '\0');
  std::memcpy(h.data(), e.name.data(), std::min<size_t>(e.name.size(), 100));
  std::snprintf(&h[100], 8, "%07o", e.mode);
  std::snprintf(&h[108], 8, "%07o", 0);
  std::snprintf(&h[116], 8, "%07o", 0);
  std::snprintf(&h[124], 12, "%011llo", static_cast<unsigned long long>(e.content.size()));
  std::snprintf(&h[136], 12, "%011o", 0);
  h[156] = e.type;
  std::memcpy(&h[157], e.link.data(), std::min<size_t>(e.link.size(), 100));
  std::memcpy(&h[257],
              "ustar\0"
              "00",
              8);
  std::memset(&h[148], ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(&h[148], 8, "%06o", sum);
  return h;
}

std::string Tar(const std::vector<Entry>& entries) {
  std::string out;
  for (const Entry& e : entries) {
    out += Header(e);
    out += e.content + std::string((512 - e.content.size() % 512) % 512, '\0');
  }
  return out + std::string(1024, '\0');
}

class DirArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ig-dir-archive-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    for (auto& e : std::filesystem::recursive_directory_iterator(root_, ec)) {
      std::filesystem::permissions(e.path(), std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    }
    std::filesystem::remove_all(root_, ec);
  }
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = root_ + "/" + name;
    EXPECT_TRUE(WriteFileAtomic(path, bytes).ok());
    return path;
  }
  std::string root_;
};

TEST_F(DirArchiveTest, PacksDeterministicallyAndUnpacksReadOnly) {
  const std::string src = root_ + "/src";
  ASSERT_TRUE(MakeDirs(src + "/sub/deeper").ok());
  ASSERT_TRUE(WriteFileAtomic(src + "/b.txt", "bee").ok());
  ASSERT_TRUE(WriteFileAtomic(src + "/a.txt", "ay").ok());
  ASSERT_TRUE(WriteFileAtomic(src + "/sub/deeper/run.sh", "#!/bin/sh\n", 0755).ok());
  ASSERT_TRUE(WriteFileAtomic(src + "/sub/empty", "").ok());
  ASSERT_TRUE(WriteDirectoryTar(src, root_ + "/one.tar").ok());
  // Another mtime and another order of creation: the same bytes.
  ::utimensat(AT_FDCWD, (src + "/a.txt").c_str(), nullptr, 0);
  ASSERT_TRUE(WriteDirectoryTar(src + "/", root_ + "/two.tar").ok());
  auto one = Sha256File(root_ + "/one.tar");
  auto two = Sha256File(root_ + "/two.tar");
  ASSERT_TRUE(one.ok() && two.ok());
  EXPECT_EQ(*one, *two);

  const std::string dest = root_ + "/unpacked";
  Status st = UnpackDirectoryTar(root_ + "/one.tar", dest);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(*ReadFile(dest + "/a.txt"), "ay");
  EXPECT_EQ(*ReadFile(dest + "/b.txt"), "bee");
  EXPECT_EQ(*ReadFile(dest + "/sub/deeper/run.sh"), "#!/bin/sh\n");
  EXPECT_EQ(*ReadFile(dest + "/sub/empty"), "");
  struct stat s {};
  ASSERT_EQ(::stat((dest + "/a.txt").c_str(), &s), 0);
  EXPECT_EQ(s.st_mode & 07777, 0444u);
  ASSERT_EQ(::stat((dest + "/sub/deeper/run.sh").c_str(), &s), 0);
  EXPECT_EQ(s.st_mode & 07777, 0555u) << "an execute bit survives";
  ASSERT_EQ(::stat((dest + "/sub").c_str(), &s), 0);
  EXPECT_EQ(s.st_mode & 07777, 0555u);
  ASSERT_EQ(::stat(dest.c_str(), &s), 0);
  EXPECT_EQ(s.st_mode & 07777, 0555u);

  EXPECT_EQ(UnpackDirectoryTar(root_ + "/one.tar", dest).code(), Code::kAlreadyExists);
  for (const auto& e : std::filesystem::directory_iterator(root_)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "left behind: " << e.path();
  }
}

TEST_F(DirArchiveTest, ThePackerRefusesSymlinksAndSpecialFilesNamingThem) {
  const std::string src = root_ + "/src";
  ASSERT_TRUE(MakeDirs(src).ok());
  ASSERT_TRUE(WriteFileAtomic(src + "/ok.txt", "ok").ok());
  ASSERT_EQ(::symlink("/etc/passwd", (src + "/link").c_str()), 0);
  Status st = WriteDirectoryTar(src, root_ + "/out.tar");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find(src + "/link is a symlink"), std::string::npos) << st.message();
  EXPECT_FALSE(PathExists(root_ + "/out.tar")) << "nothing half-written is left";
  ASSERT_EQ(::unlink((src + "/link").c_str()), 0);
  ASSERT_EQ(::mkfifo((src + "/fifo").c_str(), 0600), 0);
  st = WriteDirectoryTar(src, root_ + "/out.tar");
  EXPECT_NE(st.message().find("is a FIFO"), std::string::npos) << st.message();
  EXPECT_EQ(WriteDirectoryTar(root_ + "/nope", root_ + "/out.tar").code(), Code::kNotFound);
}

TEST_F(DirArchiveTest, HostileArchivesAreRefusedAndLeaveNothing) {
  struct Case {
    std::string name;
    std::vector<Entry> entries;
    std::string want;
    DirArchiveLimits limits = {};
  };
  DirArchiveLimits two_entries;
  two_entries.max_entries = 2;
  DirArchiveLimits ten_bytes;
  ten_bytes.max_total_bytes = 10;
  DirArchiveLimits shallow;
  shallow.max_depth = 2;
  const std::vector<Case> cases = {
      {"Symlink", {{"data/", '5'}, {"data/escape", '2', "", "/etc"}}, "data/escape: is a symlink"},
      {"HardLink", {{"a", '0', "x"}, {"b", '1', "", "a"}}, "b: is a hard link"},
      {"CharDevice", {{"dev", '3'}}, "has tar type '3'"},
      {"BlockDevice", {{"dev", '4'}}, "has tar type '4'"},
      {"Fifo", {{"pipe", '6'}}, "has tar type '6'"},
      {"DotDot", {{"../evil", '0', "x"}}, ".."},
      {"DotDotInside", {{"a/../../evil", '0', "x"}}, ".."},
      {"Absolute", {{"/etc/evil", '0', "x"}}, "absolute"},
      {"TwiceAFile", {{"a", '0', "x"}, {"a", '0', "y"}}, "a: appears twice"},
      {"FileThenDir", {{"a", '0', "x"}, {"a/", '5'}}, "a: is both a file and a directory"},
      {"UnderAFile", {{"a", '0', "x"}, {"a/b", '0', "y"}}, "lies under the file a"},
      {"TooMany", {{"a", '0', "1"}, {"b", '0', "2"}, {"c", '0', "3"}}, "more than 2 entries", two_entries},
      {"TooBig", {{"a", '0', "123456"}, {"b", '0', "123456"}}, "more than 10 bytes", ten_bytes},
      {"TooDeep", {{"a/b/c", '0', "x"}}, "deeper than 2", shallow},
  };
  for (const Case& c : cases) {
    const std::string tar = Write(c.name + ".tar", Tar(c.entries));
    const std::string dest = root_ + "/" + c.name;
    Status st = UnpackDirectoryTar(tar, dest, c.limits);
    ASSERT_FALSE(st.ok()) << c.name;
    EXPECT_EQ(st.code(), Code::kInvalidArgument) << c.name << ": " << st.ToString();
    EXPECT_NE(st.message().find(c.want), std::string::npos) << c.name << ": " << st.message();
    EXPECT_FALSE(PathExists(dest)) << c.name;
  }
  EXPECT_FALSE(PathExists("/etc/evil"));
  for (const auto& e : std::filesystem::directory_iterator(root_)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "left behind: " << e.path();
  }
}

TEST_F(DirArchiveTest, ATruncatedArchiveIsRefused) {
  std::string tar = Tar({{"a", '0', std::string(2000, 'x')}});
  const std::string path = Write("short.tar", tar.substr(0, 1024));
  Status st = UnpackDirectoryTar(path, root_ + "/short");
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.ToString();
  EXPECT_FALSE(PathExists(root_ + "/short"));
}

}  // namespace
}  // namespace idlegrid::image
