// The node's input cache (agent/input_cache.h): one download per digest,
// however many attempts read it; directory inputs unpacked once; read-only
// copies; an LRU bound that never evicts what a running attempt pinned;
// what an earlier agent left is taken over.
#include "agent/input_cache.h"

#include "agent/local_policy.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "common/digest.h"
#include "common/fs.h"
#include "image/dir_archive.h"

namespace idlegrid::agent {
namespace {

// Serves artifacts from memory and counts what it is asked for.
class CountingArtifacts : public ArtifactTransfer {
 public:
  std::string Add(const std::string& bytes) {
    const std::string digest = Sha256Digest(bytes);
    std::lock_guard<std::mutex> lock(mu_);
    blobs_[digest] = bytes;
    return digest;
  }
  Status Download(const std::string& digest, const std::string& path) override {
    std::string bytes;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++asked_[digest];
      auto it = blobs_.find(digest);
      if (it == blobs_.end()) return Status::NotFound("no artifact " + digest);
      bytes = it->second;
    }
    return WriteFileAtomic(path, bytes, 0600);
  }
  Result<v1::OutputFile> Upload(const std::string&, const std::string&) override {
    return Status::FailedPrecondition("not in this test");
  }
  int asked(const std::string& digest) {
    std::lock_guard<std::mutex> lock(mu_);
    return asked_[digest];
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::string> blobs_;
  std::map<std::string, int> asked_;
};

v1::InputSpec Input(const std::string& digest, bool unpack = false) {
  v1::InputSpec in;
  in.set_artifact(digest);
  in.set_path("/data");
  in.set_unpack(unpack);
  return in;
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

class InputCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ig-input-cache-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    ASSERT_TRUE(MakeDirs(root_ + "/attempts").ok());
  }
  void TearDown() override {
    std::error_code ec;
    for (auto& e : std::filesystem::recursive_directory_iterator(root_, ec)) {
      std::filesystem::permissions(e.path(), std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    }
    std::filesystem::remove_all(root_, ec);
  }
  std::string Dest(const std::string& attempt, int i = 0) {
    const std::string dir = root_ + "/attempts/" + attempt;
    EXPECT_TRUE(MakeDirs(dir).ok());
    return dir + "/input-" + std::to_string(i);
  }
  // A tar of a small tree, as `artifact push DIR` makes it.
  std::string DirArtifact(const std::string& content) {
    const std::string src = root_ + "/src-" + Sha256Digest(content).substr(7, 8);
    EXPECT_TRUE(MakeDirs(src + "/sub").ok());
    EXPECT_TRUE(WriteFileAtomic(src + "/sub/file.txt", content).ok());
    const std::string tar = src + ".tar";
    EXPECT_TRUE(image::WriteDirectoryTar(src, tar).ok());
    return artifacts_.Add(*ReadFile(tar));
  }
  std::string root_;
  CountingArtifacts artifacts_;
};

TEST_F(InputCacheTest, TwoAttemptsReadingOneDigestDownloadItOnce) {
  InputCache cache(root_ + "/inputs", 1 << 20, &artifacts_);
  const std::string digest = artifacts_.Add("the shard");
  std::thread other([&] { EXPECT_TRUE(cache.Provide("a2", Input(digest), Dest("a2")).ok()); });
  ASSERT_TRUE(cache.Provide("a1", Input(digest), Dest("a1")).ok());
  other.join();
  EXPECT_EQ(artifacts_.asked(digest), 1);
  EXPECT_EQ(cache.downloads(), 1u);
  EXPECT_EQ(*ReadFile(Dest("a1")), "the shard");
  EXPECT_EQ(*ReadFile(Dest("a2")), "the shard");
  EXPECT_EQ(ModeOf(Dest("a1")), 0444u) << "the attempt's copy is the cached file, read-only";
  EXPECT_EQ(cache.CachedDigests(), std::vector<std::string>{digest});
  cache.Release("a1");
  cache.Release("a2");
  ASSERT_TRUE(cache.Provide("a3", Input(digest), Dest("a3")).ok());
  EXPECT_EQ(artifacts_.asked(digest), 1) << "still cached after the attempts ended";
}

TEST_F(InputCacheTest, ADirectoryInputIsUnpackedOnceAndLinkedReadOnly) {
  InputCache cache(root_ + "/inputs", 1 << 20, &artifacts_);
  const std::string digest = DirArtifact("inside");
  ASSERT_TRUE(cache.Provide("a1", Input(digest, true), Dest("a1")).ok());
  ASSERT_TRUE(cache.Provide("a2", Input(digest, true), Dest("a2")).ok());
  EXPECT_EQ(artifacts_.asked(digest), 1);
  EXPECT_EQ(*ReadFile(Dest("a2") + "/sub/file.txt"), "inside");
  EXPECT_EQ(ModeOf(Dest("a2") + "/sub/file.txt"), 0444u);
  const std::string cached = root_ + "/inputs/" + DigestHex(digest) + ".d";
  EXPECT_EQ(ModeOf(cached + "/sub"), 0555u) << "the cached tree is read-only";
  EXPECT_FALSE(PathExists(root_ + "/inputs/" + DigestHex(digest))) << "the archive goes once unpacked";
}

TEST_F(InputCacheTest, AHostileDirectoryArchiveFailsTheAttemptNamingTheEntry) {
  InputCache cache(root_ + "/inputs", 1 << 20, &artifacts_);
  // A tar whose one member is a symlink to /etc.
  std::string h(512, '\0');
  std::memcpy(h.data(), "escape", 6);
  std::snprintf(&h[100], 8, "%07o", 0777);
  std::snprintf(&h[108], 8, "%07o", 0);
  std::snprintf(&h[116], 8, "%07o", 0);
  std::snprintf(&h[124], 12, "%011o", 0);
  std::snprintf(&h[136], 12, "%011o", 0);
  h[156] = '2';
  std::memcpy(&h[157], "/etc", 4);
  std::memcpy(&h[257],
              "ustar\0"
              "00",
              8);
  std::memset(&h[148], ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(&h[148], 8, "%06o", sum);
  const std::string digest = artifacts_.Add(h + std::string(1024, '\0'));
  Status st = cache.Provide("a1", Input(digest, true), Dest("a1"));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("escape: is a symlink"), std::string::npos) << st.message();
  EXPECT_FALSE(PathExists(Dest("a1")));
}

TEST_F(InputCacheTest, TheBoundEvictsTheLeastRecentlyUsedButNeverAPinnedInput) {
  InputCache cache(root_ + "/inputs", 10, &artifacts_);  // room for two of the 4-byte inputs below
  const std::string a = artifacts_.Add("aaaa");
  const std::string b = artifacts_.Add("bbbb");
  const std::string c = artifacts_.Add("cccc");
  ASSERT_TRUE(cache.Provide("t1", Input(a), Dest("t1")).ok());
  ASSERT_TRUE(cache.Provide("t2", Input(b), Dest("t2")).ok());
  cache.Release("t2");
  ASSERT_TRUE(cache.Provide("t3", Input(c), Dest("t3")).ok());
  // a is pinned by t1 (older), b is not (younger): b goes.
  EXPECT_EQ(cache.CachedDigests(), (std::vector<std::string>{std::min(a, c), std::max(a, c)}));
  EXPECT_LE(cache.bytes(), 10u);
  cache.Release("t1");
  cache.Release("t3");
  ASSERT_TRUE(cache.Provide("t4", Input(b), Dest("t4")).ok());
  EXPECT_EQ(artifacts_.asked(b), 2) << "evicted, so fetched again";
  EXPECT_EQ(artifacts_.asked(a), 1);
  EXPECT_EQ(*ReadFile(Dest("t1")), "aaaa") << "an attempt's link outlives the eviction of the cached copy";

  // Larger than the whole bound: kept only while pinned.
  const std::string big = artifacts_.Add(std::string(64, 'x'));
  ASSERT_TRUE(cache.Provide("t5", Input(big), Dest("t5")).ok());
  EXPECT_EQ(*ReadFile(Dest("t5")), std::string(64, 'x'));
  cache.Release("t5");
  for (const std::string& d : cache.CachedDigests()) EXPECT_NE(d, big);
  EXPECT_LE(cache.bytes(), 10u);
}

TEST_F(InputCacheTest, ARestartedAgentKeepsWhatWasCachedAndDropsPartialDownloads) {
  const std::string digest = artifacts_.Add("kept");
  const std::string dir_digest = DirArtifact("kept too");
  {
    InputCache cache(root_ + "/inputs", 1 << 20, &artifacts_);
    ASSERT_TRUE(cache.Provide("a1", Input(digest), Dest("a1")).ok());
    ASSERT_TRUE(cache.Provide("a1", Input(dir_digest, true), Dest("a1", 1)).ok());
  }
  ASSERT_TRUE(WriteFileAtomic(root_ + "/inputs/" + DigestHex(digest) + ".download.part", "half").ok());
  InputCache again(root_ + "/inputs", 1 << 20, &artifacts_);
  EXPECT_EQ(again.CachedDigests(),
            (std::vector<std::string>{std::min(digest, dir_digest), std::max(digest, dir_digest)}));
  EXPECT_FALSE(PathExists(root_ + "/inputs/" + DigestHex(digest) + ".download.part"));
  ASSERT_TRUE(again.Provide("a2", Input(digest), Dest("a2")).ok());
  ASSERT_TRUE(again.Provide("a2", Input(dir_digest, true), Dest("a2", 1)).ok());
  EXPECT_EQ(again.downloads(), 0u);
  EXPECT_EQ(*ReadFile(Dest("a2", 1) + "/sub/file.txt"), "kept too");
}

TEST_F(InputCacheTest, TheOwnersPolicySetsTheBoundAndALowerOneEvictsAtOnce) {
  auto policy = ParseOwnerPolicy("inputCache: 4\n", "policy.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();
  EXPECT_TRUE(policy->input_cache_set);
  EXPECT_EQ(policy->input_cache_bytes, 4u);
  auto none = ParseOwnerPolicy("inputCache: 0\n", "policy.yaml");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->input_cache_set) << "0 is a bound too: nothing kept past its attempts";
  EXPECT_FALSE(ParseOwnerPolicy("acceptJobs: true\n", "policy.yaml")->input_cache_set);
  auto bad = ParseOwnerPolicy("inputCache: lots\n", "policy.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("inputCache: expected a size"), std::string::npos) << bad.status().message();

  InputCache cache(root_ + "/inputs", 1 << 20, &artifacts_);
  const std::string a = artifacts_.Add("aaaa");
  const std::string b = artifacts_.Add("bbbb");
  ASSERT_TRUE(cache.Provide("t1", Input(a), Dest("t1")).ok());
  ASSERT_TRUE(cache.Provide("t2", Input(b), Dest("t2")).ok());
  cache.Release("t1");
  cache.SetBudget(policy->input_cache_bytes);
  EXPECT_EQ(cache.CachedDigests(), std::vector<std::string>{b}) << "a is unpinned and goes; b is in use";
  cache.Release("t2");
  EXPECT_EQ(cache.CachedDigests(), std::vector<std::string>{b}) << "4 bytes fit the bound of 4";
  cache.SetBudget(0);
  EXPECT_TRUE(cache.CachedDigests().empty());
  EXPECT_EQ(cache.bytes(), 0u);
}

TEST_F(InputCacheTest, AMalformedDigestIsRefused) {
  InputCache cache(root_ + "/inputs", 1 << 20, &artifacts_);
  Status st = cache.Provide("a1", Input("sha256:../../etc/passwd"), Dest("a1"));
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace idlegrid::agent
