// CheckpointSync (agent/checkpoint_sync.h) on a real directory with an
// in-memory coordinator: unchanged files are not sent again, a large file
// moves in chunks and only its changed chunks are sent, and a chunked
// checkpoint restores byte for byte or not at all.
#include "agent/checkpoint_sync.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <functional>
#include <map>

#include "common/digest.h"
#include "common/fs.h"

namespace idlegrid::agent {
namespace {

class CheckpointSyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/checkpoint-sync-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/checkpoint";
    ASSERT_TRUE(MakeDirs(dir_, 0700).ok());
  }
  void TearDown() override { (void)RemoveTree(root_); }

  // Small sizes: files above 1000 bytes are chunked in 256-byte chunks.
  std::unique_ptr<CheckpointSync> Make(const std::string& dir) {
    return std::make_unique<CheckpointSync>(
        dir,
        [this](const std::string& path, const std::string& rel) -> Result<v1::OutputFile> {
          IG_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
          if (during_upload_) during_upload_(rel);
          uploaded_bytes_ += bytes.size();
          ++uploads_;
          v1::OutputFile f;
          f.set_path(rel);
          f.set_digest(Sha256Digest(bytes));
          f.set_size(bytes.size());
          store_[f.digest()] = bytes;
          return f;
        },
        [this](const std::vector<v1::OutputFile>& files) {
          reports_.push_back(files);
          return Status::Ok();
        },
        CheckpointSync::Chunking{1000, 256});
  }
  CheckpointSync::DownloadFn Download() {
    return [this](const std::string& digest, const std::string& path) -> Status {
      auto it = store_.find(digest);
      if (it == store_.end()) return Status::NotFound("no " + digest);
      return WriteFileAtomic(path, it->second, 0600);
    };
  }
  void Write(const std::string& rel, const std::string& bytes) {
    const std::string path = dir_ + "/" + rel;
    ASSERT_TRUE(MakeDirs(path.substr(0, path.rfind('/')), 0700).ok());
    ASSERT_TRUE(WriteFileAtomic(path, bytes, 0600).ok());
  }
  static std::string Pattern(size_t n) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 13) % 26);
    return s;
  }

  std::string root_, dir_;
  std::map<std::string, std::string> store_;  // the coordinator's blobs
  std::vector<std::vector<v1::OutputFile>> reports_;
  uint64_t uploaded_bytes_ = 0;
  int uploads_ = 0;
  std::function<void(const std::string& rel)> during_upload_;  // runs inside each upload
};

TEST_F(CheckpointSyncTest, AnUnchangedSmallFileIsSentOnceAndReportedOnce) {
  auto sync = Make(dir_);
  Write("state.json", "{\"epoch\": 1}");
  ASSERT_TRUE(sync->SyncOnce().ok());
  ASSERT_TRUE(sync->SyncOnce().ok());
  EXPECT_EQ(uploads_, 1);
  ASSERT_EQ(reports_.size(), 1u);
  ASSERT_EQ(reports_[0].size(), 1u);
  EXPECT_EQ(reports_[0][0].chunks_size(), 0) << "small files are one blob";
}

// A job still writing a file (its temporary file before the rename) is not
// reported torn: the sync that saw it change keeps the version already held,
// and the next sync, finding it settled, sends and reports it.
TEST_F(CheckpointSyncTest, AFileWrittenWhileItIsSentWaitsForTheNextSync) {
  auto sync = Make(dir_);
  Write("state.json", "{\"epoch\": 1}");
  ASSERT_TRUE(sync->SyncOnce().ok());
  ASSERT_EQ(reports_.size(), 1u);
  const std::string epoch1 = reports_[0][0].digest();

  Write("state.json", "{\"epoch\": 2}");
  Write(".next.tmp", "half of a ");
  during_upload_ = [&](const std::string& rel) {
    const std::string path = dir_ + "/" + rel;
    FILE* f = std::fopen(path.c_str(), "a");  // the writer goes on, in place
    ASSERT_NE(f, nullptr);
    std::fputs("more", f);
    std::fclose(f);
  };
  ASSERT_TRUE(sync->SyncOnce().ok());
  EXPECT_EQ(reports_.size(), 1u) << "nothing settled changed, so nothing new is reported";

  during_upload_ = nullptr;
  Write(".next.tmp", "whole");
  Write("state.json", "{\"epoch\": 3}");
  ASSERT_TRUE(sync->SyncOnce().ok());
  ASSERT_EQ(reports_.size(), 2u);
  ASSERT_EQ(reports_[1].size(), 2u);
  for (const auto& f : reports_[1]) {
    EXPECT_NE(f.digest(), epoch1);
    EXPECT_EQ(store_.at(f.digest()), f.path() == "state.json" ? "{\"epoch\": 3}" : "whole") << f.path();
  }
}

TEST_F(CheckpointSyncTest, ALargeFileMovesInChunksAndOnlyItsChangedChunkIsSentAgain) {
  auto sync = Make(dir_);
  std::string model = Pattern(10 * 256 + 100);  // ten whole chunks and a tail
  Write("model.pt", model);
  ASSERT_TRUE(sync->SyncOnce().ok());
  EXPECT_EQ(uploads_, 11);
  EXPECT_EQ(uploaded_bytes_, model.size());
  ASSERT_EQ(reports_.size(), 1u);
  const v1::OutputFile& first = reports_[0][0];
  EXPECT_EQ(first.digest(), Sha256Digest(model));
  EXPECT_EQ(first.size(), model.size());
  ASSERT_EQ(first.chunks_size(), 11);
  EXPECT_EQ(first.chunks(10).size(), 100u);
  EXPECT_EQ(store_.count(first.digest()), 0u) << "the whole file is not stored as a blob of its own";

  model[3 * 256 + 5] ^= 1;  // one byte of chunk 3
  Write("model.pt", model);
  uploads_ = 0;
  uploaded_bytes_ = 0;
  ASSERT_TRUE(sync->SyncOnce().ok());
  EXPECT_EQ(uploads_, 1);
  EXPECT_EQ(uploaded_bytes_, 256u);
  ASSERT_EQ(reports_.size(), 2u);
  EXPECT_EQ(reports_[1][0].digest(), Sha256Digest(model));
  EXPECT_TRUE(jobs::ValidateCheckpointFiles({reports_[1].begin(), reports_[1].end()}).ok());
  EXPECT_FALSE(PathExists(dir_ + "-chunks") && !RegularFilesUnder(dir_ + "-chunks").empty())
      << "no chunk copy is left behind";
}

TEST_F(CheckpointSyncTest, AChunkedCheckpointRestoresByteForByteAndIsNotSentAgain) {
  auto writer = Make(dir_);
  const std::string model = Pattern(5 * 256 + 17);
  Write("sub/model.pt", model);
  ASSERT_TRUE(writer->SyncOnce().ok());
  v1::Checkpoint cp;
  for (const auto& f : reports_.back()) *cp.add_files() = f;

  const std::string again = root_ + "/again";
  ASSERT_TRUE(MakeDirs(again, 0700).ok());
  auto reader = Make(again);
  ASSERT_TRUE(reader->Restore(cp, Download()).ok());
  EXPECT_EQ(ReadFile(again + "/sub/model.pt").value(), model);
  uploads_ = 0;
  ASSERT_TRUE(reader->SyncOnce().ok());
  EXPECT_EQ(uploads_, 0) << "what was restored is held already";
}

TEST_F(CheckpointSyncTest, AChunkThatDoesNotMakeUpTheFileFailsTheRestoreAndLeavesNoFile) {
  auto writer = Make(dir_);
  Write("model.pt", Pattern(4 * 256 + 1));
  ASSERT_TRUE(writer->SyncOnce().ok());
  v1::Checkpoint cp;
  for (const auto& f : reports_.back()) *cp.add_files() = f;
  // Swap one chunk's bytes for others of the same size (a transport that
  // did not check digests).
  std::string& stored = store_[cp.files(0).chunks(1).digest()];
  stored[0] ^= 1;
  const std::string again = root_ + "/again";
  ASSERT_TRUE(MakeDirs(again, 0700).ok());
  auto reader = Make(again);
  Status st = reader->Restore(cp, Download());
  EXPECT_EQ(st.code(), Code::kDataLoss) << st.ToString();
  EXPECT_FALSE(PathExists(again + "/model.pt"));
}

TEST(ValidateCheckpointFilesTest, ChunksMustBeWellFormedAndAddUpToTheFile) {
  auto file = [](std::vector<uint64_t> sizes, uint64_t total) {
    google::protobuf::RepeatedPtrField<v1::OutputFile> files;
    v1::OutputFile* f = files.Add();
    f->set_path("model.pt");
    f->set_digest("sha256:" + std::string(64, 'a'));
    f->set_size(total);
    for (uint64_t s : sizes) {
      v1::ArtifactRef* c = f->add_chunks();
      c->set_digest("sha256:" + std::string(64, 'b'));
      c->set_size(s);
    }
    return files;
  };
  EXPECT_TRUE(jobs::ValidateCheckpointFiles(file({16 << 20, 5}, (16 << 20) + 5)).ok());
  EXPECT_EQ(jobs::ValidateCheckpointFiles(file({10, 5}, 16)).code(), Code::kInvalidArgument);
  EXPECT_EQ(jobs::ValidateCheckpointFiles(file({0, 16}, 16)).code(), Code::kInvalidArgument);
  EXPECT_EQ(jobs::ValidateCheckpointFiles(file({(16 << 20) + 1}, (16 << 20) + 1)).code(), Code::kInvalidArgument);
  auto bad = file({16}, 16);
  bad[0].mutable_chunks(0)->set_digest("md5:x");
  EXPECT_EQ(jobs::ValidateCheckpointFiles(bad).code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace idlegrid::agent
