// Image signatures in the coordinator (docs/containment.md, Signatures): adding one
// (verified first, only for an image the account may use), the operator's
// --require-signed-images at submit, nodes whose owner trusts only some keys,
// and the signature files shared between coordinators. Driven by hand
// (pipeline_support.h).
#include <gtest/gtest.h>

#include "agent/local_policy.h"
#include "common/digest.h"
#include "common/fs.h"
#include "coordinator/image_signatures.h"
#include "coordinator/pipeline_support.h"
#include "image/signature.h"

namespace idlegrid::coordinator::testing {
namespace {

image::ImageSigningKey Key(const std::string& name) {
  auto key = image::ImageSigningKey::Generate(name);
  EXPECT_TRUE(key.ok());
  return *key;
}

v1::AddImageSignatureRequest SignatureRequest(const image::ImageSigningKey& key, const std::string& image) {
  v1::AddImageSignatureRequest r;
  r.set_image(image);
  r.set_public_key(key.public_key().key);
  r.set_signature(*key.Sign(image));
  r.set_key_name(key.public_key().name);
  return r;
}

class SignaturesTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(Options()); }

  void Start(Options options) {
    h_ = std::make_unique<PipelineHarness>(options);
    ASSERT_TRUE(h_->Init().ok());
    for (auto [name, role] : {std::pair{"alice", "requester"}, {"bob", "requester"}}) {
      v1::Account a;
      a.set_name(name);
      a.set_role(role);
      ASSERT_TRUE(c().tenancy().CreateAccount(a).ok()) << name;
    }
  }

  Coordinator& c() { return h_->coordinator(); }

  const image::ImageSigningKey owner_ = Key("owner");
  const image::ImageSigningKey stranger_ = Key("stranger");
  std::unique_ptr<PipelineHarness> h_;
};

TEST_F(SignaturesTest, RequireSignedImagesRefusesAnUnsignedImageAndAcceptsItOnceATrustedKeySignedIt) {
  Options options;
  options.require_signed_images = true;
  options.trusted_image_keys = {owner_.public_key()};
  Start(options);

  auto refused = h_->Submit(CpuJob("unsigned"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition);
  const std::string& why = refused.status().message();
  EXPECT_NE(why.find(kImage), std::string::npos) << why;
  EXPECT_NE(why.find(owner_.public_key().id() + " (owner)"), std::string::npos) << "names the trusted key: " << why;
  EXPECT_NE(why.find("idlegrid image sign " + std::string(kImage) + " --key"), std::string::npos) << why;
  EXPECT_EQ(c().jobs().List("")->jobs_size(), 0) << "nothing stored";

  // A valid signature, by a key the operator does not trust.
  ASSERT_TRUE(c().images().AddSignature(SignatureRequest(stranger_, kImage), "operator").ok());
  auto still = h_->Submit(CpuJob("signed-by-a-stranger"));
  ASSERT_FALSE(still.ok());
  EXPECT_NE(still.status().message().find("valid signatures by: " + stranger_.public_key().id()), std::string::npos)
      << still.status().message();

  auto added = c().images().AddSignature(SignatureRequest(owner_, kImage), "operator");
  ASSERT_TRUE(added.ok()) << added.status().ToString();
  EXPECT_EQ(added->key_id(), owner_.public_key().id());
  EXPECT_EQ(added->key_name(), "owner");
  EXPECT_EQ(added->added_by(), "operator");
  auto accepted = h_->Submit(CpuJob("signed"));
  EXPECT_TRUE(accepted.ok()) << accepted.status().ToString();
}

TEST_F(SignaturesTest, AForgedSignatureIsRefusedWhenAddedAndNothingIsStored) {
  // The stranger's signature presented under the owner's public key.
  v1::AddImageSignatureRequest forged = SignatureRequest(stranger_, kImage);
  forged.set_public_key(owner_.public_key().key);
  auto refused = c().images().AddSignature(forged, "operator");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("does not verify"), std::string::npos) << refused.status().message();

  // The owner's genuine signature over another image, replayed for this one.
  v1::AddImageSignatureRequest replayed = SignatureRequest(owner_, Sha256Digest("another image"));
  replayed.set_image(kImage);
  EXPECT_EQ(c().images().AddSignature(replayed, "operator").status().code(), Code::kInvalidArgument);

  v1::AddImageSignatureRequest truncated = SignatureRequest(owner_, kImage);
  truncated.set_signature(truncated.signature().substr(0, 32));
  EXPECT_EQ(c().images().AddSignature(truncated, "operator").status().code(), Code::kInvalidArgument);

  v1::AddImageSignatureRequest bad_name = SignatureRequest(owner_, kImage);
  bad_name.set_key_name("../../etc");
  EXPECT_EQ(c().images().AddSignature(bad_name, "operator").status().code(), Code::kInvalidArgument);

  EXPECT_TRUE(c().images().SignaturesOf(kImage).empty());
}

TEST_F(SignaturesTest, ATenantCannotSignAnotherTenantsPrivateImage) {
  const std::string image = Sha256Digest("alice's manifest");
  const std::string archive = Sha256Digest("alice's archive");
  ASSERT_TRUE(c().store()->RegisterImage({image, Sha256Digest("config"), archive}, 1).ok());
  ASSERT_TRUE(c().artifact_rights().Record(archive, 100, "image").ok());
  ASSERT_TRUE(c().artifact_rights().HoldUpload(archive, "alice", false).ok());

  auto bob = c().images().AddSignature(SignatureRequest(stranger_, image), "bob");
  ASSERT_FALSE(bob.ok());
  EXPECT_EQ(bob.status().code(), Code::kNotFound);
  // The same answer as for an image that does not exist at all.
  const std::string missing = Sha256Digest("no such manifest");
  auto none = c().images().AddSignature(SignatureRequest(stranger_, missing), "bob");
  EXPECT_EQ(none.status().code(), Code::kNotFound);
  auto named = [](std::string message, const std::string& digest) {
    const size_t at = message.find(digest);
    if (at != std::string::npos) message.replace(at, digest.size(), "IMAGE");
    return message;
  };
  EXPECT_EQ(named(bob.status().message(), image), named(none.status().message(), missing)) << "only the digest differs";
  EXPECT_TRUE(c().images().SignaturesOf(image).empty());

  EXPECT_TRUE(c().images().AddSignature(SignatureRequest(owner_, image), "alice").ok());
  EXPECT_TRUE(c().images().AddSignature(SignatureRequest(stranger_, image), "operator").ok())
      << "an operator may use any";
  EXPECT_EQ(c().images().SignaturesOf(image).size(), 2u);
}

TEST_F(SignaturesTest, ANodeWhoseOwnerTrustsAKeyIsOfferedOnlyImagesThatKeySigned) {
  v1::LocalPolicy picky;
  picky.add_trusted_image_key_ids(owner_.public_key().id());
  auto node = h_->AddNode("picky", 0, kJoinSecret, picky);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  ASSERT_TRUE(c().images().AddSignature(SignatureRequest(stranger_, kImage), "operator").ok());
  auto job = h_->Submit(CpuJob("waits"));
  ASSERT_TRUE(job.ok()) << job.status().ToString();

  ASSERT_TRUE(h_->Pass(0, {*node}).ok());
  auto task = h_->Task(*job);
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->state(), v1::QUEUED);
  EXPECT_NE(task->message().find("not signed by a key the node's owner trusts"), std::string::npos) << task->message();
  EXPECT_TRUE(h_->TakeCommands(*node).empty());
  auto explained = c().dispatcher().Explain(*job);
  ASSERT_TRUE(explained.ok());
  ASSERT_EQ(explained->tasks_size(), 1);
  ASSERT_EQ(explained->tasks(0).filtered_size(), 1);
  EXPECT_EQ(explained->tasks(0).filtered(0).stage(), "image-signature");
  EXPECT_NE(explained->tasks(0).filtered(0).example_detail().find("image signed by " + stranger_.public_key().id()),
            std::string::npos)
      << explained->tasks(0).filtered(0).example_detail();

  ASSERT_TRUE(c().images().AddSignature(SignatureRequest(owner_, kImage), "operator").ok());
  ASSERT_TRUE(h_->Pass(0, {*node}).ok());
  EXPECT_EQ(h_->Task(*job)->state(), v1::ASSIGNED);
  auto commands = h_->TakeCommands(*node);
  ASSERT_EQ(commands.size(), 1u);
  const v1::Assignment& a = commands[0].assign();
  ASSERT_EQ(a.image_signatures_size(), 2) << "every signature the coordinator holds travels with it";
  // What the node's agent will check, with its owner's key, passes.
  EXPECT_TRUE(agent::CheckImageTrust(a, {owner_.public_key()}).ok());
  EXPECT_FALSE(agent::CheckImageTrust(a, {Key("owner").public_key()}).ok()) << "and only for that key";
}

TEST(ImageSignatureFilesTest, CoordinatorsSharingTheDirectorySeeEachOthersSignatures) {
  TempDir dir;
  ManualClock clock;
  ImageSignatureFiles mine(dir.path() + "/signatures", &clock);
  ImageSignatureFiles theirs(dir.path() + "/signatures", &clock);
  const image::ImageSigningKey key = Key("owner");
  const std::string image = Sha256Digest("manifest");
  EXPECT_TRUE(theirs.Of(image).empty());  // cached: none

  v1::ImageSignature s;
  s.set_image(image);
  s.set_public_key(key.public_key().key);
  s.set_signature(*key.Sign(image));
  s.set_key_id(key.public_key().id());
  ASSERT_TRUE(mine.Put(s).ok());
  EXPECT_EQ(mine.Of(image).size(), 1u) << "its own Put is seen at once";
  EXPECT_TRUE(PathExists(dir.path() + "/signatures/" + DigestHex(image) + "/" + key.public_key().id() + ".sig"));
  clock.AdvanceMs(ImageSignatureFiles::kRecheckMs);
  EXPECT_EQ(theirs.SignersOf(image), std::set<std::string>{key.public_key().id()}) << "the other's, after the recheck";
}

TEST(ImageSignatureFilesTest, AFileChangedOnDiskNoLongerCounts) {
  TempDir dir;
  ManualClock clock;
  ImageSignatureFiles files(dir.path(), &clock);
  const image::ImageSigningKey key = Key("owner");
  const std::string image = Sha256Digest("manifest");
  v1::ImageSignature s;
  s.set_image(image);
  s.set_public_key(key.public_key().key);
  s.set_signature(*key.Sign(image));
  s.set_key_id(key.public_key().id());
  ASSERT_TRUE(files.Put(s).ok());
  ASSERT_EQ(files.Of(image).size(), 1u);

  // Someone with write access to the directory swaps in a signature for
  // another image under the same name.
  v1::ImageSignature swapped = s;
  swapped.set_signature(*key.Sign(Sha256Digest("other")));
  const std::string path = dir.path() + "/" + DigestHex(image) + "/" + key.public_key().id() + ".sig";
  ASSERT_TRUE(WriteFileAtomic(path, swapped.SerializeAsString()).ok());
  clock.AdvanceMs(ImageSignatureFiles::kRecheckMs);
  EXPECT_TRUE(files.Of(image).empty());

  EXPECT_EQ(files
                .Put([&] {
                  v1::ImageSignature bad = s;
                  bad.set_key_id("../x");
                  return bad;
                }())
                .code(),
            Code::kInvalidArgument);
}

}  // namespace
}  // namespace idlegrid::coordinator::testing
