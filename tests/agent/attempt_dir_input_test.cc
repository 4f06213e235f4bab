// Directory inputs through whole attempts (agent/attempt_runner.h): the
// archive unpacked read-only and mounted as the input's path, with and
// without the node's input cache (which keeps public data only); a hostile
// archive fails the attempt
// before it runs, naming the entry, and leaves nothing behind.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>

#include "agent/attempt_fixture_support.h"
#include "agent/input_cache.h"
#include "common/digest.h"
#include "image/dir_archive.h"
#include "image/rootfs_unpack.h"

namespace idlegrid::agent::testing {
namespace {

class DirInputAttemptTest : public AttemptRunnerTest {
 protected:
  // The cache's trees are read-only: removed the way the cache removes them.
  void TearDown() override {
    EXPECT_TRUE(image::RemoveUnpackedTree(dir_ + "/inputs").ok());
    AttemptRunnerTest::TearDown();
  }
  // The tar of a two-file tree, stored as an artifact; its digest.
  std::string StoreTree() {
    const std::string src = dir_ + "/tree";
    EXPECT_TRUE(MakeDirs(src + "/sub").ok());
    EXPECT_TRUE(WriteFileAtomic(src + "/top.txt", "top").ok());
    EXPECT_TRUE(WriteFileAtomic(src + "/sub/deep.txt", "deep").ok());
    EXPECT_TRUE(image::WriteDirectoryTar(src, dir_ + "/tree.tar").ok());
    const std::string bytes = *ReadFile(dir_ + "/tree.tar");
    const std::string digest = Sha256Digest(bytes);
    artifacts_.store[digest] = bytes;
    return digest;
  }

  v1::Assignment WithDirInput(const std::string& digest) {
    v1::Assignment a = Assignment();
    auto* in = a.mutable_spec()->add_inputs();
    in->set_artifact(digest);
    in->set_path("/data");
    in->set_unpack(true);
    return a;
  }

  // Run, with the node's input cache.
  void RunWithCache(const v1::Assignment& a, InputCache* cache) {
    LogShipper logs([](const v1::AppendLogsRequest&) { return true; });
    AttemptEnv env;
    env.runtime = &runtime_;
    env.host = &host_;
    env.reporter = &reporter_;
    env.artifacts = &artifacts_;
    env.images = &images_;
    env.inputs = cache;
    env.logs = &logs;
    env.attempts_dir = dir_ + "/attempts";
    env.cdi_spec_paths = {dir_ + "/cdi/nvidia.yaml"};
    env.output_watch_interval = output_watch_interval_;
    AttemptRunner(env).Run(a);
  }

  // What the container saw at /data while it ran.
  struct Seen {
    bool mounted = false;
    bool read_only = false;
    std::string deep;
    mode_t file_mode = 0;
  };
  void WatchData(Seen* seen) {
    runtime_.while_running = [seen](const runtime::RunSpec& spec) {
      for (const runtime::Mount& m : spec.mounts) {
        if (m.container_path != "/data") continue;
        seen->mounted = true;
        seen->read_only = m.read_only;
        auto deep = ReadFile(m.host_path + "/sub/deep.txt");
        seen->deep = deep.ok() ? *deep : "";
        struct stat st {};
        if (::stat((m.host_path + "/sub/deep.txt").c_str(), &st) == 0) seen->file_mode = st.st_mode & 07777;
      }
    };
  }
};

TEST_F(DirInputAttemptTest, AnUnpackInputIsADirectoryMountedReadOnly) {
  Seen seen;
  WatchData(&seen);
  Run(WithDirInput(StoreTree()));
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED EXITED");
  EXPECT_TRUE(seen.mounted);
  EXPECT_TRUE(seen.read_only);
  EXPECT_EQ(seen.deep, "deep");
  EXPECT_EQ(seen.file_mode, 0444u);
  ExpectCleanedUp();
}

TEST_F(DirInputAttemptTest, WithTheNodesCacheTheTreeComesFromTheCacheAndStaysThere) {
  const std::string digest = StoreTree();
  InputCache cache(dir_ + "/inputs", 1 << 20, &artifacts_);
  Seen seen;
  WatchData(&seen);
  RunWithCache(WithDirInput(digest), &cache);
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED EXITED");
  EXPECT_EQ(seen.deep, "deep");
  ExpectCleanedUp();
  EXPECT_EQ(*ReadFile(dir_ + "/inputs/" + DigestHex(digest) + ".d/sub/deep.txt"), "deep")
      << "the cached tree outlives the attempt's scratch";
  EXPECT_EQ(cache.CachedDigests(), std::vector<std::string>{digest});
}

TEST_F(DirInputAttemptTest, APrivateJobsInputsAreNotKeptOnTheNode) {
  const std::string digest = StoreTree();
  InputCache cache(dir_ + "/inputs", 1 << 20, &artifacts_);
  Seen seen;
  WatchData(&seen);
  v1::Assignment a = WithDirInput(digest);
  a.mutable_spec()->set_data_class("private");
  RunWithCache(a, &cache);
  EXPECT_EQ(EventNames(), "ACCEPTED STARTED EXITED");
  EXPECT_EQ(seen.deep, "deep") << "the attempt reads its own copy";
  EXPECT_TRUE(seen.read_only);
  ExpectCleanedUp();
  EXPECT_TRUE(cache.CachedDigests().empty());
  EXPECT_EQ(cache.downloads(), 0u);
  EXPECT_FALSE(PathExists(dir_ + "/inputs/" + DigestHex(digest) + ".d"));
}

TEST_F(DirInputAttemptTest, AHostileArchiveFailsBeforeTheRunNamingTheEntry) {
  // One member: a symlink "escape" -> /etc.
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
  const std::string tar = h + std::string(1024, '\0');
  const std::string digest = Sha256Digest(tar);
  artifacts_.store[digest] = tar;
  Run(WithDirInput(digest));
  EXPECT_EQ(EventNames(), "ACCEPTED ERRORED");
  EXPECT_NE(Last().message().find("escape: is a symlink"), std::string::npos) << Last().message();
  EXPECT_TRUE(runtime_.runs.empty());
  ExpectCleanedUp();
}

}  // namespace
}  // namespace idlegrid::agent::testing
