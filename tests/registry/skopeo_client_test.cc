// The skopeo registry client against a real registry (docker-registry over
// TLS on 127.0.0.1, e2e/registry_support.h): resolving tags and digests,
// pulling by digest into an archive that verifies, and every refusal with
// its reason. Images are built offline (image/oci_builder.h).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "common/fs.h"
#include "e2e/registry_support.h"
#include "image/oci_archive.h"
#include "image/oci_builder.h"
#include "registry/registry_client.h"
#include "runtime/subprocess.h"

namespace idlegrid::registry {
namespace {

using testing::RegistryToolsMissing;
using testing::TestRegistry;

bool Mentions(const Status& st, const std::string& part) { return st.message().find(part) != std::string::npos; }

manifest::ImageRef Ref(const std::string& image) {
  Result<manifest::ImageRef> ref = manifest::ParseImageRef(image);
  EXPECT_TRUE(ref.ok()) << image << ": " << ref.status().ToString();
  return ref.ok() ? *ref : manifest::ImageRef{};
}

class SkopeoClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string missing = RegistryToolsMissing(); !missing.empty()) GTEST_SKIP() << missing;
    char tmpl[] = "/tmp/skopeo_client_test.XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    auto registry = TestRegistry::Start(dir_);
    ASSERT_TRUE(registry.ok()) << registry.status().ToString();
    registry_ = std::move(*registry);
    auto built =
        image::BuildOciArchive({{"/hello", "hello v1\n", 0644}}, {"/hello"}, "igtest/hello:v1", dir_ + "/v1.tar");
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    image_ = *built;
    auto pushed = registry_->Push(image_.archive_path, "igtest/hello:v1");
    ASSERT_TRUE(pushed.ok()) << pushed.status().ToString();
    ASSERT_EQ(*pushed, image_.manifest_digest);  // the push keeps the digest
  }
  void TearDown() override {
    registry_.reset();
    if (!dir_.empty()) (void)RemoveTree(dir_);
  }

  std::unique_ptr<RegistryClient> Client(bool with_ca = true) {
    SkopeoOptions options;
    if (with_ca) options.ca_files[registry_->host()] = registry_->ca_file();
    options.work_dir = dir_ + "/client";
    return NewSkopeoClient(options);
  }
  std::string Image(const std::string& rest) const { return registry_->host() + "/" + rest; }

  std::string dir_;
  std::unique_ptr<TestRegistry> registry_;
  image::BuiltImage image_;
};

TEST_F(SkopeoClientTest, ResolvesATagToTheDigestItNamesNow) {
  Result<ResolvedImage> resolved = Client()->Resolve(Ref(Image("igtest/hello:v1")));
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  EXPECT_EQ(resolved->manifest_digest, image_.manifest_digest);
  EXPECT_EQ(resolved->config_digest, image_.config_digest);

  // Moving the tag moves what it resolves to.
  auto v2 = image::BuildOciArchive({{"/hello", "hello v2\n", 0644}}, {"/hello"}, "igtest/hello:v2", dir_ + "/v2.tar");
  ASSERT_TRUE(v2.ok());
  ASSERT_TRUE(registry_->Push(v2->archive_path, "igtest/hello:v1").ok());
  Result<ResolvedImage> moved = Client()->Resolve(Ref(Image("igtest/hello:v1")));
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_EQ(moved->manifest_digest, v2->manifest_digest);
  EXPECT_NE(moved->manifest_digest, image_.manifest_digest);
}

TEST_F(SkopeoClientTest, ResolvesADigest) {
  Result<ResolvedImage> resolved = Client()->Resolve(Ref(Image("igtest/hello@" + image_.manifest_digest)));
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  EXPECT_EQ(resolved->manifest_digest, image_.manifest_digest);
  EXPECT_EQ(resolved->config_digest, image_.config_digest);
}

TEST_F(SkopeoClientTest, AMissingDigestOrRepositoryIsNotFound) {
  const std::string missing = "sha256:" + std::string(64, '0');
  Result<ResolvedImage> digest = Client()->Resolve(Ref(Image("igtest/hello@" + missing)));
  ASSERT_FALSE(digest.ok());
  EXPECT_EQ(digest.status().code(), Code::kNotFound) << digest.status().ToString();
  EXPECT_TRUE(Mentions(digest.status(), "registry " + registry_->host())) << digest.status().message();
  EXPECT_TRUE(Mentions(digest.status(), missing)) << digest.status().message();
  EXPECT_TRUE(Mentions(digest.status(), "manifest unknown")) << digest.status().message();

  Result<ResolvedImage> repo = Client()->Resolve(Ref(Image("igtest/nothing:v1")));
  ASSERT_FALSE(repo.ok());
  EXPECT_EQ(repo.status().code(), Code::kNotFound) << repo.status().ToString();
  Result<ResolvedImage> tag = Client()->Resolve(Ref(Image("igtest/hello:v9")));
  ASSERT_FALSE(tag.ok());
  EXPECT_EQ(tag.status().code(), Code::kNotFound) << tag.status().ToString();
}

TEST_F(SkopeoClientTest, WithoutItsCaTheRegistryIsNotTrusted) {
  // TLS stays verified: a self-signed registry is refused until its CA is given.
  Result<ResolvedImage> resolved = Client(/*with_ca=*/false)->Resolve(Ref(Image("igtest/hello:v1")));
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.status().code(), Code::kUnavailable) << resolved.status().ToString();
  EXPECT_TRUE(Mentions(resolved.status(), "x509")) << resolved.status().message();
  EXPECT_TRUE(Mentions(resolved.status(), "--registry-ca " + registry_->host() + "=CA_FILE"))
      << resolved.status().message();
  // Nor does a pull go through.
  const std::string archive = dir_ + "/untrusted.tar";
  Status pulled = Client(false)->Pull(Ref(Image("igtest/hello@" + image_.manifest_digest)), archive);
  EXPECT_EQ(pulled.code(), Code::kUnavailable) << pulled.ToString();
  EXPECT_FALSE(PathExists(archive));
}

TEST_F(SkopeoClientTest, AnUnreadableCaFileIsNamed) {
  SkopeoOptions options;
  options.ca_files[registry_->host()] = dir_ + "/no-such-ca.crt";
  options.work_dir = dir_ + "/client";
  Result<ResolvedImage> resolved = NewSkopeoClient(options)->Resolve(Ref(Image("igtest/hello:v1")));
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.status().code(), Code::kFailedPrecondition) << resolved.status().ToString();
  EXPECT_TRUE(Mentions(resolved.status(), "--registry-ca " + registry_->host() + "=" + dir_ + "/no-such-ca.crt"))
      << resolved.status().message();
}

TEST_F(SkopeoClientTest, NothingListeningIsUnavailable) {
  registry_.reset();  // stopped: its port now refuses connections
  SkopeoOptions options;
  options.work_dir = dir_ + "/client";
  Result<ResolvedImage> resolved = NewSkopeoClient(options)->Resolve(Ref("127.0.0.1:1/igtest/hello:v1"));
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.status().code(), Code::kUnavailable) << resolved.status().ToString();
  EXPECT_TRUE(Mentions(resolved.status(), "127.0.0.1:1")) << resolved.status().message();
}

TEST_F(SkopeoClientTest, PullsByDigestIntoAnArchiveThatVerifies) {
  const std::string archive = dir_ + "/pulled.tar";
  Status pulled = Client()->Pull(Ref(Image("igtest/hello@" + image_.manifest_digest)), archive);
  ASSERT_TRUE(pulled.ok()) << pulled.ToString();
  Result<image::OciImageInfo> info = image::InspectOciArchive(archive, image_.manifest_digest);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->manifest_digest, image_.manifest_digest);
  EXPECT_EQ(info->config_digest, image_.config_digest);
}

TEST_F(SkopeoClientTest, APullOfAMissingDigestLeavesNoFile) {
  const std::string archive = dir_ + "/missing.tar";
  ASSERT_TRUE(WriteFileAtomic(archive, "stale").ok());  // not mistaken for a pulled image afterwards
  const std::string missing = "sha256:" + std::string(64, '0');
  Status pulled = Client()->Pull(Ref(Image("igtest/hello@" + missing)), archive);
  ASSERT_FALSE(pulled.ok());
  EXPECT_EQ(pulled.code(), Code::kNotFound) << pulled.ToString();
  EXPECT_TRUE(Mentions(pulled, missing)) << pulled.message();
  EXPECT_FALSE(PathExists(archive));
}

TEST_F(SkopeoClientTest, ADockerManifestIsRefusedWithWhatToDo) {
  // The same image stored as a Docker schema 2 manifest: its digest would
  // not survive the copy into an OCI archive.
  Result<runtime::CommandOutput> copy =
      runtime::RunCommand({"skopeo", "copy", "--quiet", "--format", "v2s2", "--dest-cert-dir", registry_->cert_dir(),
                           "oci-archive:" + image_.archive_path, "docker://" + registry_->host() + "/igtest/docker:v1"},
                          std::chrono::seconds(120));
  ASSERT_TRUE(copy.ok() && copy->exit_code == 0) << (copy.ok() ? copy->stderr_text : copy.status().ToString());
  Result<ResolvedImage> resolved = Client()->Resolve(Ref(Image("igtest/docker:v1")));
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.status().code(), Code::kFailedPrecondition) << resolved.status().ToString();
  EXPECT_TRUE(Mentions(resolved.status(), "Docker schema 2")) << resolved.status().message();
}

}  // namespace
}  // namespace idlegrid::registry
