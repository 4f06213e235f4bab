// Resumable, verified artifact transfers over a real gRPC server on loopback
// (api/artifact_transfer.h, common/artifact_client.h): an upload or download
// cut off mid-way (its ClientContext cancelled from the progress callback)
// goes on from where it stopped, moving only the rest; a kept partial that
// was tampered with ends in DataLoss and a clean retry from 0; one
// uploader's partial is invisible to another, and a blob another account
// holds reads as absent.
#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "api/grpc_services.h"
#include "artifacts/artifact_store.h"
#include "auth/authz.h"
#include "common/artifact_client.h"
#include "common/digest.h"
#include "common/fs.h"
#include "auth/credentials.h"
#include "common/test_support.h"
#include "coordinator/coordinator.h"
#include "sched/pipeline.h"
#include "store/store.h"

namespace idlegrid::api {
namespace {

// gRPC shuts itself down when its last object goes (here, at the end of
// each test), and that shutdown can wait about 10 s for an executor thread
// that is polling; initialized once for the whole binary, tests end at once.
const bool kGrpcKeptUp = [] {
  grpc_init();
  return true;
}();

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kSize = 32 * kMiB;  // 32 chunks
constexpr uint64_t kCut = 20 * kMiB;   // where a transfer is cut off

// Bytes that differ everywhere, so a flipped byte anywhere changes the digest.
std::string PseudoRandomBytes(uint64_t size, uint64_t seed) {
  std::string out(size, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint64_t i = 0; i < size; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    for (uint64_t b = 0; b < 8 && i + b < size; ++b) out[i + b] = static_cast<char>(x >> (8 * b));
  }
  return out;
}

class ArtifactTransferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::OpenSqliteStore(dir_.path() + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto artifacts = std::make_unique<artifacts::ArtifactStore>(dir_.path() + "/artifacts");
    ASSERT_TRUE(artifacts->Init().ok());
    c_ = std::make_unique<coordinator::Coordinator>(
        std::move(*store), std::move(artifacts), sched::NewPipelineScheduler(), "join-secret", coordinator::Options{});
    auth::Caller op{auth::Role::kOperator, ~0u, store::kOperatorAccount, "", ""};
    for (const char* name : {"alice", "bob", "carol"}) {
      v1::Account a;
      a.set_name(name);
      a.set_role("requester");
      // carol may store a little over one file: partials must count.
      if (std::string(name) == "carol") a.mutable_quota()->set_max_stored_bytes(kSize + kSize / 2);
      ASSERT_TRUE(c_->tenancy().CreateAccount(a).ok()) << name;
      v1::CreateTokenRequest req;
      req.set_account(name);
      auto made = c_->tenancy().CreateToken(op, req);
      ASSERT_TRUE(made.ok()) << made.status().ToString();
      tokens_[name] = made->token();
    }
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.SetMaxReceiveMessageSize(8 << 20);  // as the coordinator's listener
    requester_ = NewRequesterService(c_.get());
    agent_ = NewAgentService(c_.get());
    builder.RegisterService(requester_.get());
    builder.RegisterService(agent_.get());
    server_ = builder.BuildAndStart();
    ASSERT_TRUE(server_ && port != 0);
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
    stub_ = v1::RequesterService::NewStub(channel);
    agent_stub_ = v1::AgentService::NewStub(channel);
    file_ = dir_.path() + "/input.bin";
    content_ = PseudoRandomBytes(kSize, 1);
    ASSERT_TRUE(WriteFileAtomic(file_, content_).ok());
    digest_ = Sha256Digest(content_);
  }

  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }

  // Makes `who`'s contexts, remembering the latest so a progress callback
  // can cancel the stream it reports on.
  auto Contexts(const std::string& who) {
    return [this, token = tokens_.at(who)] {
      auto ctx = std::make_unique<grpc::ClientContext>();
      ctx->AddMetadata("authorization", "Bearer " + token);
      latest_ = ctx.get();
      return ctx;
    };
  }

  // Cancels the current stream once `cut` bytes are held.
  TransferProgress CutAt(uint64_t cut) {
    return [this, cut](uint64_t so_far) {
      if (so_far >= cut && latest_) latest_->TryCancel();
    };
  }

  Result<v1::ArtifactRef> Upload(const std::string& who, const std::string& path, TransferStats* stats,
                                 const TransferProgress& progress = {}) {
    return UploadArtifactFile(stub_.get(), Contexts(who), path, "input", {}, progress, stats);
  }

  Status Download(const std::string& who, const std::string& digest, const std::string& path, TransferStats* stats,
                  const TransferProgress& progress = {}) {
    return DownloadArtifactFile(stub_.get(), Contexts(who), digest, path, {}, progress, stats);
  }

  v1::ArtifactStat Stat(const std::string& who, const std::string& digest) {
    v1::StatArtifactsRequest req;
    req.add_digests(digest);
    v1::StatArtifactsResponse resp;
    auto ctx = Contexts(who)();
    grpc::Status st = stub_->StatArtifacts(ctx.get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(resp.stats_size(), 1);
    return resp.stats_size() == 1 ? resp.stats(0) : v1::ArtifactStat();
  }

  // What the coordinator kept of `who`'s cut-off upload, once the server's
  // handler has let go of it (PartialBytes waits for that).
  uint64_t AwaitKept(const std::string& who, const std::string& digest) {
    return c_->artifact_store()->PartialBytes(digest, "account " + who);
  }

  // Cuts an upload of the test file by `who` off at kCut; returns the bytes kept.
  uint64_t CutUpload(const std::string& who, uint64_t cut = kCut) {
    TransferStats stats;
    auto ref = Upload(who, file_, &stats, CutAt(cut));
    EXPECT_FALSE(ref.ok()) << "the cut-off upload succeeded";
    EXPECT_LE(stats.bytes_moved, cut);
    return AwaitKept(who, digest_);
  }

  // One upload stream written by hand: the test file from `offset`.
  grpc::Status RawUploadFrom(const std::string& who, uint64_t offset) {
    auto ctx = Contexts(who)();
    v1::ArtifactRef ref;
    auto writer = stub_->UploadArtifact(ctx.get(), &ref);
    v1::ArtifactChunk chunk;
    chunk.set_digest(digest_);
    chunk.set_size(kSize);
    chunk.set_offset(offset);
    for (uint64_t at = offset; at < kSize; at += kMiB) {
      chunk.set_data(content_.substr(at, kMiB));
      if (!writer->Write(chunk)) break;
      chunk.Clear();
    }
    writer->WritesDone();
    return writer->Finish();
  }

  void FlipByteOf(const std::string& path, uint64_t at) {
    std::FILE* f = std::fopen(path.c_str(), "r+b");
    ASSERT_NE(f, nullptr) << path;
    std::fseek(f, static_cast<long>(at), SEEK_SET);
    int c = std::fgetc(f);
    std::fseek(f, static_cast<long>(at), SEEK_SET);
    std::fputc(c ^ 0x5a, f);
    std::fclose(f);
  }

  idlegrid::testing::TempDir dir_{"igtransfer"};
  std::unique_ptr<coordinator::Coordinator> c_;
  std::unique_ptr<v1::RequesterService::Service> requester_;
  std::unique_ptr<v1::AgentService::Service> agent_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::RequesterService::Stub> stub_;
  std::unique_ptr<v1::AgentService::Stub> agent_stub_;
  std::map<std::string, std::string> tokens_;
  grpc::ClientContext* latest_ = nullptr;
  std::string file_, content_, digest_;
};

TEST_F(ArtifactTransferTest, ACutOffUploadResumesAndMovesOnlyTheRest) {
  TransferStats first;
  auto cut = Upload("alice", file_, &first, CutAt(kCut));
  ASSERT_FALSE(cut.ok());
  EXPECT_LE(first.bytes_moved, kCut);
  EXPECT_FALSE(c_->artifact_store()->Has(digest_));

  // Straight on: the resume's StatArtifacts waits for the server's handler to let go.
  TransferStats second;
  auto ref = Upload("alice", file_, &second);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  EXPECT_EQ(ref->digest(), digest_);
  EXPECT_EQ(ref->size(), kSize);
  EXPECT_GT(second.resumed_at, 0u) << "nothing of the first try was kept";
  EXPECT_LE(second.resumed_at, kCut);
  EXPECT_EQ(second.bytes_moved, kSize - second.resumed_at) << "resumed at " << second.resumed_at;
  // About size - cut: what was in flight when the stream was cut is all that is sent twice.
  EXPECT_LE(second.bytes_moved, kSize - kCut + 8 * kMiB);
  EXPECT_EQ(second.restarts, 0);
  EXPECT_EQ(*ReadFile(c_->artifact_store()->PathOf(digest_)), content_);
  EXPECT_EQ(c_->artifact_store()->PartialBytes(digest_, "account alice"), 0u) << "the partial outlived its blob";

  // Now present for alice: a third upload sends nothing.
  TransferStats third;
  ASSERT_TRUE(Upload("alice", file_, &third).ok());
  EXPECT_TRUE(third.already_present);
  EXPECT_EQ(third.bytes_moved, 0u);
}

TEST_F(ArtifactTransferTest, ACutOffDownloadResumesFromItsPart) {
  ASSERT_TRUE(Upload("alice", file_, nullptr).ok());
  const std::string out = dir_.path() + "/out.bin";
  TransferStats first;
  Status cut = Download("alice", digest_, out, &first, CutAt(kCut));
  ASSERT_FALSE(cut.ok());
  EXPECT_FALSE(PathExists(out)) << "an unverified download was left in place";
  auto kept = ReadFile(out + ".part");
  ASSERT_TRUE(kept.ok()) << "the part was not kept";
  EXPECT_GE(kept->size(), kCut);
  EXPECT_LT(kept->size(), kSize);

  TransferStats second;
  Status st = Download("alice", digest_, out, &second);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(second.resumed_at, kept->size());
  EXPECT_EQ(second.bytes_moved, kSize - kept->size());
  EXPECT_EQ(second.restarts, 0);
  EXPECT_EQ(*ReadFile(out), content_);
  EXPECT_FALSE(PathExists(out + ".part"));
}

TEST_F(ArtifactTransferTest, ATamperedPartEndsInOneCleanDownloadFromZero) {
  ASSERT_TRUE(Upload("alice", file_, nullptr).ok());
  const std::string out = dir_.path() + "/out.bin";
  ASSERT_FALSE(Download("alice", digest_, out, nullptr, CutAt(kCut)).ok());
  auto kept = transfer_internal::FileSize(out + ".part");
  ASSERT_TRUE(kept.ok());
  FlipByteOf(out + ".part", 12345);

  TransferStats stats;
  Status st = Download("alice", digest_, out, &stats);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(stats.restarts, 1);
  EXPECT_EQ(stats.bytes_moved, (kSize - *kept) + kSize);
  EXPECT_EQ(*ReadFile(out), content_);
}

TEST_F(ArtifactTransferTest, ATamperedPartialEndsInDataLossThenACleanUploadFromZero) {
  const uint64_t kept = CutUpload("alice");
  ASSERT_GT(kept, 0u);
  const std::string partial = c_->artifact_store()->PartialPathOf(digest_, "account alice");
  FlipByteOf(partial, kept / 2);

  // The coordinator re-hashes what it kept: the whole does not verify.
  grpc::Status resumed = RawUploadFrom("alice", kept);
  EXPECT_EQ(resumed.error_code(), grpc::StatusCode::DATA_LOSS) << resumed.error_message();
  EXPECT_FALSE(c_->artifact_store()->Has(digest_));
  EXPECT_FALSE(PathExists(partial)) << "a partial that failed verification was kept";

  TransferStats clean;
  auto ref = Upload("alice", file_, &clean);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  EXPECT_EQ(clean.resumed_at, 0u);
  EXPECT_EQ(clean.bytes_moved, kSize);
  EXPECT_EQ(*ReadFile(c_->artifact_store()->PathOf(digest_)), content_);
}

TEST_F(ArtifactTransferTest, TheClientRestartsFromZeroWhenAResumeFailsVerification) {
  const uint64_t kept = CutUpload("alice");
  ASSERT_GT(kept, 0u);
  FlipByteOf(c_->artifact_store()->PartialPathOf(digest_, "account alice"), 0);
  TransferStats stats;
  auto ref = Upload("alice", file_, &stats);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  EXPECT_EQ(stats.resumed_at, kept);
  EXPECT_EQ(stats.restarts, 1);
  EXPECT_EQ(stats.bytes_moved, (kSize - kept) + kSize);
  EXPECT_EQ(*ReadFile(c_->artifact_store()->PathOf(digest_)), content_);
}

TEST_F(ArtifactTransferTest, OneUploadersPartialIsInvisibleToAnother) {
  const uint64_t alices = CutUpload("alice");
  ASSERT_GT(alices, 0u);
  v1::ArtifactStat bob_sees = Stat("bob", digest_);
  EXPECT_EQ(bob_sees.partial_bytes(), 0u);
  EXPECT_FALSE(bob_sees.present());
  EXPECT_EQ(Stat("alice", digest_).partial_bytes(), alices);

  // bob's own cut-off upload is his alone, and leaves alice's as it was.
  const uint64_t bobs = CutUpload("bob", 8 * kMiB);
  ASSERT_GT(bobs, 0u);
  EXPECT_EQ(Stat("bob", digest_).partial_bytes(), bobs);
  EXPECT_EQ(Stat("alice", digest_).partial_bytes(), alices);
  EXPECT_NE(c_->artifact_store()->PartialPathOf(digest_, "account alice"),
            c_->artifact_store()->PartialPathOf(digest_, "account bob"));

  // Resuming at more than bob holds is refused, naming both sizes.
  grpc::Status too_far = RawUploadFrom("bob", alices + kMiB);
  EXPECT_EQ(too_far.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(too_far.error_message().find(std::to_string(alices + kMiB)), std::string::npos) << too_far.error_message();
  EXPECT_NE(too_far.error_message().find(std::to_string(bobs)), std::string::npos) << too_far.error_message();
}

TEST_F(ArtifactTransferTest, ABlobOfAnotherAccountReadsAsAbsentUntilUploaded) {
  ASSERT_TRUE(Upload("alice", file_, nullptr).ok());
  v1::ArtifactStat alice_sees = Stat("alice", digest_);
  EXPECT_TRUE(alice_sees.present());
  EXPECT_EQ(alice_sees.size(), kSize);
  v1::ArtifactStat bob_sees = Stat("bob", digest_);
  EXPECT_FALSE(bob_sees.present());
  EXPECT_EQ(bob_sees.size(), 0u) << "the size of alice's blob leaked";

  // Proof of possession: bob sends every byte, then holds it too.
  TransferStats bobs;
  ASSERT_TRUE(Upload("bob", file_, &bobs).ok());
  EXPECT_FALSE(bobs.already_present);
  EXPECT_EQ(bobs.bytes_moved, kSize);
  EXPECT_TRUE(Stat("bob", digest_).present());
}

TEST_F(ArtifactTransferTest, PartialsCountTowardTheStoreQuota) {
  const uint64_t kept = CutUpload("carol", 28 * kMiB);
  ASSERT_GT(kept, kSize / 2) << "too little kept for the quota to bite";
  // Another file of the same size no longer fits beside the kept bytes...
  const std::string other = dir_.path() + "/other.bin";
  ASSERT_TRUE(WriteFileAtomic(other, PseudoRandomBytes(kSize, 2)).ok());
  auto refused = Upload("carol", other, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kResourceExhausted) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("interrupted uploads"), std::string::npos) << refused.status().ToString();
  // ...but the interrupted one may finish: its kept bytes are part of its size.
  TransferStats stats;
  auto ref = Upload("carol", file_, &stats);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  EXPECT_EQ(stats.bytes_moved, kSize - kept);
}

TEST_F(ArtifactTransferTest, StatRefusesMalformedDigests) {
  v1::StatArtifactsRequest req;
  req.add_digests("sha256:nothex");
  v1::StatArtifactsResponse resp;
  auto ctx = Contexts("alice")();
  EXPECT_EQ(stub_->StatArtifacts(ctx.get(), req, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// The agent's side: StatArtifacts needs the node's live attempt and its
// token; a stored blob is present only if the attempt may read it (an
// input), and the node's interrupted upload is its own.
TEST_F(ArtifactTransferTest, AnAgentSeesOnlyItsAttemptsInputsAndItsOwnPartials) {
  const std::string image = "sha256:" + std::string(64, 'b'), archive = "sha256:" + std::string(64, 'd');
  ASSERT_TRUE(c_->store()->RegisterImage({image, "sha256:" + std::string(64, 'c'), archive}, 1000).ok());
  ASSERT_TRUE(c_->store()->RecordArtifact(archive, 10, "image", 1).ok());
  ASSERT_TRUE(c_->store()->SetArtifactPublic(archive).ok());
  ASSERT_TRUE(Upload("alice", file_, nullptr).ok());  // the job's input
  const std::string others = dir_.path() + "/bobs.bin";
  ASSERT_TRUE(WriteFileAtomic(others, PseudoRandomBytes(kMiB, 3)).ok());
  auto bobs = Upload("bob", others, nullptr);
  ASSERT_TRUE(bobs.ok());

  const std::string credential = "iga_transfer-node";
  store::NodeRecord node{"n-1", "box-1"};
  ASSERT_TRUE(c_->store()->UpsertNode(node, Sha256Digest(credential)).ok());
  v1::SubmitJobRequest submit;
  v1::JobSpec* spec = submit.mutable_spec();
  spec->set_api_version("idlegrid/v1");
  spec->set_name("reads-the-input");
  spec->set_image(image);
  spec->add_command("/sim");
  v1::InputSpec* input = spec->add_inputs();
  input->set_artifact(digest_);
  input->set_path("/data/input.bin");
  auto job = c_->jobs().Submit(submit, "alice");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  store::NewAttempt attempt;
  attempt.attempt_id = "att-1";
  attempt.job_id = job->id();
  attempt.node_id = "n-1";
  attempt.now_ms = SystemClock::Get()->NowMs();
  auto committed = c_->store()->CommitAssignments({attempt});
  ASSERT_TRUE(committed.ok() && committed->size() == 1u);
  // The token the assignment carries (coordinator.cc: the key is the join secret's).
  const std::string token = auth::AttemptToken(Sha256Digest("idlegrid artifact tokens\njoin-secret"), "att-1", "n-1",
                                               (*committed)[0].lease_epoch);
  auto agent_context = [&] {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->AddMetadata("authorization", "Bearer " + credential);
    latest_ = ctx.get();
    return ctx;
  };
  auto stat = [&](const std::string& attempt_token, v1::StatArtifactsResponse* resp) {
    v1::StatArtifactsRequest req;
    req.add_digests(digest_);
    req.add_digests(bobs->digest());
    req.set_attempt_id("att-1");
    req.set_attempt_token(attempt_token);
    auto ctx = agent_context();
    return agent_stub_->StatArtifacts(ctx.get(), req, resp);
  };
  v1::StatArtifactsResponse wrong;
  EXPECT_EQ(stat("not-the-token", &wrong).error_code(), grpc::StatusCode::NOT_FOUND);
  v1::StatArtifactsResponse seen;
  ASSERT_TRUE(stat(token, &seen).ok());
  ASSERT_EQ(seen.stats_size(), 2);
  EXPECT_TRUE(seen.stats(0).present()) << "the attempt's own input";
  EXPECT_EQ(seen.stats(0).size(), kSize);
  EXPECT_FALSE(seen.stats(1).present()) << "a blob the attempt does not use";

  // An output the agent uploads, cut off and resumed: the partial is the node's.
  const std::string output = dir_.path() + "/output.bin";
  const std::string produced = PseudoRandomBytes(kSize, 4);
  ASSERT_TRUE(WriteFileAtomic(output, produced).ok());
  const std::string output_digest = Sha256Digest(produced);
  const TransferScope scope{"att-1", token};
  TransferStats cut;
  ASSERT_FALSE(UploadArtifactFile(agent_stub_.get(), agent_context, output, "output", scope, CutAt(kCut), &cut).ok());
  const uint64_t kept = c_->artifact_store()->PartialBytes(output_digest, "node n-1");
  ASSERT_GT(kept, 0u);
  EXPECT_EQ(Stat("alice", output_digest).partial_bytes(), 0u) << "a requester saw the node's partial";
  TransferStats rest;
  auto ref = UploadArtifactFile(agent_stub_.get(), agent_context, output, "output", scope, {}, &rest);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  EXPECT_EQ(rest.resumed_at, kept);
  EXPECT_EQ(rest.bytes_moved, kSize - kept);
  EXPECT_EQ(*ReadFile(c_->artifact_store()->PathOf(output_digest)), produced);
}

}  // namespace
}  // namespace idlegrid::api
