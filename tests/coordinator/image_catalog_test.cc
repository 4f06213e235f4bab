// The image catalog (coordinator/image_catalog.h) on its own: a real SQLite
// store and artifact store, a manual clock, no coordinator. A layered image
// registers only with every blob uploaded, of the size its manifest states
// and readable by the pusher; its blobs come back in order; another tenant's
// private image reads as missing; registry images need the operator's
// allow-list and a client; the signed-images rule refuses an unsigned image.
#include "coordinator/image_catalog.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/digest.h"
#include "common/test_support.h"
#include "coordinator/service_fixture.h"

namespace idlegrid::coordinator {
namespace {

class ImageCatalogTest : public ServiceTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(ServiceTest::SetUp());
    catalog_ = Make({});
  }
  std::unique_ptr<ImageCatalog> Make(ImageCatalog::Options options) {
    return std::make_unique<ImageCatalog>(store_.get(), artifacts_.get(), nullptr, &clock_, std::move(options),
                                          [this] { ++changes_; });
  }
  // Stores `bytes` as a blob; its digest.
  std::string Put(const std::string& bytes) {
    auto writer = artifacts_->NewWriter("", 0);
    EXPECT_TRUE(writer.ok());
    if (!writer.ok()) return "";
    EXPECT_TRUE((*writer)->Append(bytes.data(), bytes.size()).ok());
    auto digest = (*writer)->Commit();
    EXPECT_TRUE(digest.ok()) << digest.status().ToString();
    return digest.ok() ? *digest : "";
  }
  static std::string Manifest(const std::string& config, uint64_t config_size,
                              const std::vector<std::pair<std::string, uint64_t>>& layers) {
    std::string json = "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",";
    json += "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" + config +
            "\",\"size\":" + std::to_string(config_size) + "},\"layers\":[";
    for (size_t i = 0; i < layers.size(); ++i) {
      json += std::string(i ? "," : "") + "{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"" +
              layers[i].first + "\",\"size\":" + std::to_string(layers[i].second) + "}";
    }
    return json + "]}";
  }
  static Status AnyoneMayRead(const std::string&) { return Status::Ok(); }

  std::unique_ptr<ImageCatalog> catalog_;
  int changes_ = 0;
};

TEST_F(ImageCatalogTest, ALayeredImageRegistersOnlyWithEveryBlobUploadedOfItsStatedSizeAndReadable) {
  const std::string config_bytes = "{\"architecture\":\"amd64\"}";
  const std::string config = Put(config_bytes);
  const std::string layer = Put("layer bytes");  // 11 bytes
  const uint64_t n = config_bytes.size();
  const std::string missing = Sha256Digest("never uploaded");

  const std::string lacking = Put(Manifest(config, n, {{layer, 11}, {missing, 5}}));
  auto refused = catalog_->RegisterLayered(lacking, AnyoneMayRead);
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("layer 1"), std::string::npos) << refused.status().message();

  const std::string wrong_size = Put(Manifest(config, n, {{layer, 12}}));
  EXPECT_EQ(catalog_->RegisterLayered(wrong_size, AnyoneMayRead).status().code(), Code::kDataLoss);

  const std::string good = Put(Manifest(config, n, {{layer, 11}}));
  auto private_layer = catalog_->RegisterLayered(
      good, [&](const std::string& digest) { return digest == layer ? Status::NotFound("not yours") : Status::Ok(); });
  EXPECT_EQ(private_layer.status().code(), Code::kNotFound) << "a pusher cannot name a layer it may not read";
  EXPECT_FALSE(store_->GetImage(good)->has_value()) << "nothing registered by a refusal";

  auto registered = catalog_->RegisterLayered(good, AnyoneMayRead);
  ASSERT_TRUE(registered.ok()) << registered.status().ToString();
  EXPECT_EQ(registered->image(), good);
  EXPECT_EQ(registered->config_digest(), config);
  auto record = store_->GetImage(good);
  ASSERT_TRUE(record.ok() && record->has_value());
  auto blobs = catalog_->BlobsOf(**record);
  ASSERT_TRUE(blobs.ok()) << blobs.status().ToString();
  ASSERT_EQ(blobs->size(), 3u);
  EXPECT_EQ((*blobs)[0].digest(), good) << "the manifest first";
  EXPECT_EQ((*blobs)[1].digest(), config);
  EXPECT_EQ((*blobs)[2].digest(), layer);
  EXPECT_EQ((*blobs)[2].size(), 11u);

  EXPECT_EQ(catalog_->RegisterLayered("sha256:nope", AnyoneMayRead).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(catalog_->RegisterArchive(missing).status().code(), Code::kNotFound);
}

TEST_F(ImageCatalogTest, LayersOfALayeredImageAreItsLayersWithoutManifestOrConfig) {
  const std::string config_bytes = "{\"architecture\":\"amd64\"}";
  const std::string config = Put(config_bytes);
  const std::string base = Put("base layer, the big one");  // 23 bytes
  const std::string script = Put("print(1)");               // 8 bytes
  const std::string manifest = Put(Manifest(config, config_bytes.size(), {{base, 23}, {script, 8}}));
  EXPECT_EQ(catalog_->LayersOf(manifest), nullptr) << "not registered yet";
  ASSERT_TRUE(catalog_->RegisterLayered(manifest, AnyoneMayRead).ok());

  auto layers = catalog_->LayersOf(manifest);
  ASSERT_NE(layers, nullptr);
  ASSERT_EQ(layers->size(), 2u);
  EXPECT_EQ((*layers)[0].digest, base);
  EXPECT_EQ((*layers)[0].bytes, 23u);
  EXPECT_EQ((*layers)[1].digest, script);
  EXPECT_EQ((*layers)[1].bytes, 8u);
  // Asked again (the dispatcher asks every pass), the answer comes from the
  // blob cache and is the same.
  auto again = catalog_->LayersOf(manifest);
  ASSERT_NE(again, nullptr);
  ASSERT_EQ(again->size(), 2u);
  EXPECT_EQ((*again)[0].digest, base);
  EXPECT_EQ((*again)[1].digest, script);

  // An image pushed as one archive has no layers to share.
  const store::ImageRecord archive{Sha256Digest("manifest"), Sha256Digest("config"), Sha256Digest("archive")};
  ASSERT_TRUE(store_->RegisterImage(archive, clock_.NowMs()).ok());
  EXPECT_EQ(catalog_->LayersOf(archive.manifest_digest), nullptr);
}

TEST_F(ImageCatalogTest, AnImagePushedAsOneArchiveHasNoBlobList) {
  store::ImageRecord archive{Sha256Digest("manifest"), Sha256Digest("config"), Sha256Digest("archive")};
  auto blobs = catalog_->BlobsOf(archive);
  ASSERT_TRUE(blobs.ok());
  EXPECT_TRUE(blobs->empty());
}

TEST_F(ImageCatalogTest, AnotherTenantsPrivateImageReadsAsMissing) {
  const std::string archive = Put("alice's archive");
  ASSERT_TRUE(store_->RecordArtifact(archive, 15, "image", clock_.NowMs()).ok());
  ASSERT_TRUE(store_->AddArtifactRefs({{archive, "upload:alice", "alice", clock_.NowMs() + 60'000}}).ok());
  const std::string image = Sha256Digest("alice's manifest");
  ASSERT_TRUE(store_->RegisterImage({image, Sha256Digest("config"), archive}, clock_.NowMs()).ok());

  auto alice = catalog_->UsableImage(image, "alice");
  ASSERT_TRUE(alice.ok());
  EXPECT_TRUE(alice->has_value());
  auto bob = catalog_->UsableImage(image, "bob");
  ASSERT_TRUE(bob.ok());
  EXPECT_FALSE(bob->has_value()) << "the same answer as for an image that does not exist";
  EXPECT_TRUE(catalog_->UsableImage(image, store::kOperatorAccount)->has_value()) << "the operator may use any";
  EXPECT_FALSE(catalog_->UsableImage(Sha256Digest("none"), "alice")->has_value());
}

TEST_F(ImageCatalogTest, ARegistryImageNeedsTheOperatorsAllowListAndAClient) {
  auto ref = manifest::ParseImageRef("registry.example:5000/team/train:v1");
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  v1::JobSpec spec;
  spec.set_image("registry.example:5000/team/train:v1");
  Status refused = catalog_->PinRegistryImage(*ref, &spec);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("spec.image"), std::string::npos) << refused.message();
  EXPECT_EQ(spec.image(), "registry.example:5000/team/train:v1") << "the spec is left as it was";
  EXPECT_FALSE(spec.has_registry_image());
}

TEST_F(ImageCatalogTest, TheSignedImagesRuleRefusesAnUnsignedImageAndNamesTheCommandThatSignsIt) {
  auto key = image::ImageSigningKey::Generate("ops");
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  ImageCatalog::Options strict;
  strict.require_signed_images = true;
  strict.trusted_image_keys.push_back(key->public_key());
  auto catalog = Make(strict);
  const std::string image = Sha256Digest("unsigned");
  Status st = catalog->CheckTrusted(image);
  EXPECT_EQ(st.code(), Code::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("idlegrid image sign " + image), std::string::npos) << st.message();
  EXPECT_TRUE(catalog_->CheckTrusted(image).ok()) << "without the rule every image is trusted";
  EXPECT_TRUE(catalog->SignaturesOf(image).empty());
  EXPECT_EQ(changes_, 0);
}

}  // namespace
}  // namespace idlegrid::coordinator
