// AddImageSignature over gRPC (docs/containment.md, Signatures): the gate admits only an
// account that may use the image (another tenant's private image reads as
// missing), the submit scope is needed, and a signature that does not verify
// is InvalidArgument.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "api/grpc_services.h"
#include "artifacts/artifact_store.h"
#include "auth/authz.h"
#include "common/clock.h"
#include "common/digest.h"
#include "common/test_support.h"
#include "coordinator/coordinator.h"
#include "image/signature.h"
#include "sched/pipeline.h"
#include "store/store.h"

namespace idlegrid::api {
namespace {

const std::string kAliceImage = Sha256Digest("alice's manifest");
const std::string kAliceArchive = Sha256Digest("alice's archive");

class ImageSignatureApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::OpenSqliteStore(dir_.path() + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto artifacts = std::make_unique<artifacts::ArtifactStore>(dir_.path() + "/artifacts");
    ASSERT_TRUE(artifacts->Init().ok());
    c_ = std::make_unique<coordinator::Coordinator>(std::move(*store), std::move(artifacts),
                                                    sched::NewPipelineScheduler(), "join-secret",
                                                    coordinator::Options(), &clock_);
    for (const char* name : {"alice", "bob"}) {
      v1::Account a;
      a.set_name(name);
      a.set_role("requester");
      ASSERT_TRUE(c_->tenancy().CreateAccount(a).ok());
    }
    ASSERT_TRUE(c_->store()->RegisterImage({kAliceImage, Sha256Digest("config"), kAliceArchive}, 1).ok());
    ASSERT_TRUE(c_->artifact_rights().Record(kAliceArchive, 100, "image").ok());
    ASSERT_TRUE(c_->artifact_rights().HoldUpload(kAliceArchive, "alice", false).ok());
    alice_ = Mint("alice", {});
    bob_ = Mint("bob", {});
    alice_read_only_ = Mint("alice", {"read"});

    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    service_ = NewRequesterService(c_.get());
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_TRUE(server_ && port != 0);
    stub_ = v1::RequesterService::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }

  std::string Mint(const std::string& account, const std::vector<std::string>& scopes) {
    auth::Caller op{auth::Role::kOperator, ~0u, store::kOperatorAccount, ""};
    v1::CreateTokenRequest req;
    req.set_account(account);
    for (const auto& s : scopes) req.add_scopes(s);
    auto made = c_->tenancy().CreateToken(op, req);
    EXPECT_TRUE(made.ok()) << made.status().ToString();
    return made.ok() ? made->token() : "";
  }

  grpc::Status Add(const std::string& token, const v1::AddImageSignatureRequest& req, v1::ImageSignature* out) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer " + token);
    return stub_->AddImageSignature(&ctx, req, out);
  }

  static v1::AddImageSignatureRequest SignedBy(const image::ImageSigningKey& key, const std::string& image) {
    v1::AddImageSignatureRequest r;
    r.set_image(image);
    r.set_public_key(key.public_key().key);
    r.set_signature(*key.Sign(image));
    r.set_key_name(key.public_key().name);
    return r;
  }

  idlegrid::testing::TempDir dir_{"igsigapi"};
  ManualClock clock_;
  std::unique_ptr<coordinator::Coordinator> c_;
  std::unique_ptr<v1::RequesterService::Service> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::RequesterService::Stub> stub_;
  std::string alice_, bob_, alice_read_only_;
};

TEST_F(ImageSignatureApiTest, OnlyAnAccountThatMayUseTheImageAddsAVerifiedSignature) {
  auto key = image::ImageSigningKey::Generate("alice-release");
  ASSERT_TRUE(key.ok());
  v1::ImageSignature stored;

  grpc::Status bob = Add(bob_, SignedBy(*key, kAliceImage), &stored);
  EXPECT_EQ(bob.error_code(), grpc::StatusCode::NOT_FOUND) << bob.error_message();
  EXPECT_TRUE(c_->images().SignaturesOf(kAliceImage).empty()) << "bob's signature was not stored";

  grpc::Status read_only = Add(alice_read_only_, SignedBy(*key, kAliceImage), &stored);
  EXPECT_EQ(read_only.error_code(), grpc::StatusCode::PERMISSION_DENIED) << read_only.error_message();

  v1::AddImageSignatureRequest forged = SignedBy(*key, kAliceImage);
  forged.mutable_signature()->back() ^= 1;
  grpc::Status bad = Add(alice_, forged, &stored);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad.error_message();
  EXPECT_NE(bad.error_message().find("does not verify"), std::string::npos) << bad.error_message();
  EXPECT_TRUE(c_->images().SignaturesOf(kAliceImage).empty());

  grpc::Status ok = Add(alice_, SignedBy(*key, kAliceImage), &stored);
  ASSERT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(stored.key_id(), key->public_key().id());
  EXPECT_EQ(stored.added_by(), "alice");
  ASSERT_EQ(c_->images().SignaturesOf(kAliceImage).size(), 1u);
}

}  // namespace
}  // namespace idlegrid::api
