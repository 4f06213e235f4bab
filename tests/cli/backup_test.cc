// `idlegrid backup` and `restore` (ops/backup.h) on a real coordinator data
// directory: a SQLite store written while it is copied, the PKI, secrets and
// artifacts; what must be refused is refused and leaves nothing half-made.
#include "ops/backup.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "artifacts/artifact_store.h"
#include "common/fs.h"
#include "common/test_support.h"
#include "pki/pki.h"
#include "store/store.h"

namespace idlegrid::ops {
namespace {

namespace fs = std::filesystem;

class BackupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = dir_.path() + "/coordinator";
    ASSERT_TRUE(MakeDirs(data_, 0700).ok());
    ASSERT_TRUE(pki::LoadOrCreate(data_ + "/pki", {}).ok());
    ASSERT_TRUE(WriteFileAtomic(data_ + "/join.token", "igj_secret\n", 0600).ok());
    ASSERT_TRUE(WriteFileAtomic(data_ + "/admin.token", "igt_admin\n", 0600).ok());
    auto store = store::OpenSqliteStore(data_ + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    ASSERT_TRUE(store_->CreateAccount({"alice", "requester", 1000}).ok());
    artifacts::ArtifactStore blobs(data_ + "/artifacts");
    ASSERT_TRUE(blobs.Init().ok());
    auto writer = blobs.NewWriter("", 0);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Append("result bytes", 12).ok());
    auto digest = (*writer)->Commit();
    ASSERT_TRUE(digest.ok());
    digest_ = *digest;
    blob_rel_ = fs::relative(blobs.PathOf(digest_), data_).string();
    ASSERT_TRUE(MakeDirs(data_ + "/artifacts/partial").ok());
    ASSERT_TRUE(WriteFileAtomic(data_ + "/artifacts/partial/" + std::string(64, 'e') + ".u1", "half").ok());
  }

  idlegrid::testing::TempDir dir_{"igbackup"};
  std::string data_;
  std::unique_ptr<store::Store> store_;
  std::string digest_, blob_rel_;
};

TEST_F(BackupTest, ALiveStoreIsCopiedWholeWithItsKeysSecretsAndPublishedBlobsOnly) {
  // A writer keeps committing while the copy is taken, as a coordinator would.
  std::atomic<bool> stop{false};
  std::atomic<int> written{0};
  std::thread writer([&] {
    for (int i = 0; !stop.load(); ++i) {
      if (store_->CreateAccount({"acct-" + std::to_string(i), "requester", 1000 + i}).ok()) ++written;
    }
  });
  while (written.load() < 20) std::this_thread::yield();
  const std::string out = dir_.path() + "/backup";
  auto report = Backup({data_, "", "", out});
  stop = true;
  writer.join();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->database_copied);
  EXPECT_GT(report->database_bytes, 0u);
  EXPECT_EQ(report->artifacts, 1u) << "the published blob, not the partial upload";
  EXPECT_FALSE(fs::exists(out + ".partial"));

  auto copy = store::OpenSqliteStore(out + "/state.db");
  ASSERT_TRUE(copy.ok()) << copy.status().ToString();
  auto alice = (*copy)->GetAccount("alice");
  ASSERT_TRUE(alice.ok());
  EXPECT_TRUE(alice->has_value()) << "a row committed before the backup is in it";
  auto accounts = (*copy)->ListAccounts();
  ASSERT_TRUE(accounts.ok());
  EXPECT_GE(accounts->size(), 21u) << "the copy holds what was committed when it was taken";

  EXPECT_TRUE(PathExists(out + "/" + blob_rel_));
  EXPECT_FALSE(fs::exists(out + "/artifacts/partial"));
  struct stat st {};
  ASSERT_EQ(::stat((out + "/pki/ca.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the CA key keeps its mode";
  auto join = ReadFile(out + "/join.token");
  ASSERT_TRUE(join.ok());
  EXPECT_EQ(*join, "igj_secret\n");
  EXPECT_TRUE(PathExists(out + "/backup.json"));
}

TEST_F(BackupTest, ARestoredDirectoryIsTheBackedUpCoordinator) {
  const std::string out = dir_.path() + "/backup";
  ASSERT_TRUE(Backup({data_, "", "", out + "/"}).ok()) << "a trailing slash, as tab completion writes it";
  EXPECT_FALSE(fs::exists(out + "/.partial"));
  const std::string fresh = dir_.path() + "/restored";
  Status restored = Restore({out, fresh + "/"});
  ASSERT_TRUE(restored.ok()) << restored.ToString();
  EXPECT_FALSE(fs::exists(fresh + ".restoring"));
  auto ca_before = ReadFile(data_ + "/pki/ca.crt");
  auto ca_after = ReadFile(fresh + "/pki/ca.crt");
  ASSERT_TRUE(ca_before.ok() && ca_after.ok());
  EXPECT_EQ(*ca_before, *ca_after) << "agents pin this CA: it must come back";
  auto reloaded = pki::LoadOrCreate(fresh + "/pki", {});
  ASSERT_TRUE(reloaded.ok()) << reloaded.status().ToString();
  auto original = pki::LoadOrCreate(data_ + "/pki", {});
  ASSERT_TRUE(original.ok());
  EXPECT_EQ(reloaded->ca_fingerprint, original->ca_fingerprint);
  auto store = store::OpenSqliteStore(fresh + "/state.db");
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  auto alice = (*store)->GetAccount("alice");
  ASSERT_TRUE(alice.ok() && alice->has_value());
  EXPECT_TRUE(PathExists(fresh + "/" + blob_rel_));
  EXPECT_FALSE(PathExists(fresh + "/backup.json")) << "the manifest describes the backup, not a data directory";
}

TEST_F(BackupTest, WhatCannotBeDoneSafelyIsRefusedAndLeavesNothingBehind) {
  // Not a coordinator's directory.
  auto none = Backup({dir_.path() + "/nothing-here", "", "", dir_.path() + "/b0"});
  EXPECT_EQ(none.status().code(), Code::kFailedPrecondition) << none.status().ToString();
  EXPECT_FALSE(fs::exists(dir_.path() + "/b0"));
  // A target that holds something.
  ASSERT_TRUE(MakeDirs(dir_.path() + "/busy").ok());
  ASSERT_TRUE(WriteFileAtomic(dir_.path() + "/busy/file", "x").ok());
  auto busy = Backup({data_, "", "", dir_.path() + "/busy"});
  EXPECT_EQ(busy.status().code(), Code::kAlreadyExists) << busy.status().ToString();
  // PostgreSQL: the files are copied, the database is pg_dump's.
  auto pg = Backup({data_, "", "postgresql://nobody@127.0.0.1:1/none", dir_.path() + "/pg"});
  ASSERT_TRUE(pg.ok()) << pg.status().ToString();
  EXPECT_FALSE(pg->database_copied);
  EXPECT_FALSE(PathExists(dir_.path() + "/pg/state.db"));
  EXPECT_TRUE(PathExists(dir_.path() + "/pg/pki/ca.key"));

  const std::string out = dir_.path() + "/backup";
  ASSERT_TRUE(Backup({data_, "", "", out}).ok());
  // Restoring over a live data directory is refused.
  Status over = Restore({out, data_});
  EXPECT_EQ(over.code(), Code::kAlreadyExists) << over.ToString();
  // Not a backup.
  EXPECT_EQ(Restore({data_, dir_.path() + "/r1"}).code(), Code::kInvalidArgument);
  // A damaged database is caught before anything is written.
  ASSERT_TRUE(WriteFileAtomic(out + "/state.db", std::string(8192, 'x')).ok());
  Status damaged = Restore({out, dir_.path() + "/r2"});
  EXPECT_EQ(damaged.code(), Code::kDataLoss) << damaged.ToString();
  EXPECT_FALSE(fs::exists(dir_.path() + "/r2"));
  EXPECT_FALSE(fs::exists(dir_.path() + "/r2.restoring"));
}

}  // namespace
}  // namespace idlegrid::ops
