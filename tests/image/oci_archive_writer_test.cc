// Assembling an OCI archive from blobs on disk (image/oci_archive_writer.h)
// and locating the blobs of an archive (LocateOciArchiveBlobs): the round
// trip an image takes when it is pushed layer by layer and fetched by an agent.
#include "image/oci_archive_writer.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "common/digest.h"
#include "common/fs.h"
#include "image/oci_archive.h"
#include "image/oci_builder.h"
#include "image/tar_reader.h"

namespace idlegrid::image {
namespace {

class OciArchiveWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/oci-writer-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto built = BuildOciArchive({{"/bin/tool", std::string(5000, 't'), 0755}, {"/etc/conf", "x=1\n", 0644}},
                                 {"/bin/tool"}, "igtest/tool:v1", dir_ + "/built.tar");
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    built_ = *built;
  }
  void TearDown() override { (void)RemoveTree(dir_); }

  // Each blob of the built archive as a file of its own.
  std::vector<BlobFile> ExtractBlobs(const OciArchiveBlobs& located) {
    auto tar = TarReader::Open(built_.archive_path);
    EXPECT_TRUE(tar.ok());
    std::vector<BlobFile> out;
    for (const LocatedBlob& b : located.blobs) {
      const TarMember* m = tar->Find("blobs/sha256/" + DigestHex(b.ref.digest));
      EXPECT_NE(m, nullptr);
      EXPECT_EQ(m->offset, b.offset);
      auto bytes = tar->ReadAll(*m, 1 << 20);
      EXPECT_TRUE(bytes.ok());
      const std::string path = dir_ + "/" + DigestHex(b.ref.digest);
      EXPECT_TRUE(WriteFileAtomic(path, *bytes, 0600).ok());
      out.push_back({b.ref.digest, b.ref.size, path});
    }
    return out;
  }

  std::string dir_;
  BuiltImage built_;
};

TEST_F(OciArchiveWriterTest, BlobsLocatedInAnArchiveReassembleIntoTheSameImage) {
  auto located = LocateOciArchiveBlobs(built_.archive_path);
  ASSERT_TRUE(located.ok()) << located.status().ToString();
  ASSERT_EQ(located->blobs.size(), 3u);  // manifest, config, one layer
  EXPECT_EQ(located->blobs[0].ref.digest, built_.manifest_digest);
  EXPECT_EQ(located->blobs[1].ref.digest, built_.config_digest);
  std::vector<BlobFile> files = ExtractBlobs(*located);
  const std::string out = dir_ + "/assembled.tar";
  ASSERT_TRUE(WriteOciArchiveFromBlobs(located->blobs[0].ref, files, "", out).ok());
  auto info = InspectOciArchive(out, built_.manifest_digest);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->config_digest, built_.config_digest);
  EXPECT_FALSE(PathExists(out + ".tmp"));
}

TEST_F(OciArchiveWriterTest, AMissingOrShortBlobFailsAndLeavesNothing) {
  auto located = LocateOciArchiveBlobs(built_.archive_path);
  ASSERT_TRUE(located.ok());
  std::vector<BlobFile> files = ExtractBlobs(*located);
  const std::string out = dir_ + "/assembled.tar";
  std::vector<BlobFile> short_blob = files;
  short_blob[2].size += 1;
  Status st = WriteOciArchiveFromBlobs(located->blobs[0].ref, short_blob, "", out);
  EXPECT_EQ(st.code(), Code::kNotFound) << st.ToString();
  std::vector<BlobFile> gone = files;
  gone[2].path = dir_ + "/nowhere";
  EXPECT_EQ(WriteOciArchiveFromBlobs(located->blobs[0].ref, gone, "", out).code(), Code::kNotFound);
  EXPECT_FALSE(PathExists(out));
  EXPECT_FALSE(PathExists(out + ".tmp"));
}

TEST_F(OciArchiveWriterTest, TheManifestMustBeAmongTheBlobsAndNoneTwice) {
  auto located = LocateOciArchiveBlobs(built_.archive_path);
  ASSERT_TRUE(located.ok());
  std::vector<BlobFile> files = ExtractBlobs(*located);
  std::vector<BlobFile> no_manifest(files.begin() + 1, files.end());
  EXPECT_EQ(WriteOciArchiveFromBlobs(located->blobs[0].ref, no_manifest, "", dir_ + "/o.tar").code(),
            Code::kInvalidArgument);
  std::vector<BlobFile> twice = files;
  twice.push_back(files[2]);
  EXPECT_EQ(WriteOciArchiveFromBlobs(located->blobs[0].ref, twice, "", dir_ + "/o.tar").code(), Code::kInvalidArgument);
}

TEST(ParseOciManifestBlobsTest, ListsConfigAndEachLayerOnce) {
  const std::string d1 = "sha256:" + std::string(64, '1'), d2 = "sha256:" + std::string(64, '2'),
                    dc = "sha256:" + std::string(64, 'c');
  const std::string manifest = R"({"schemaVersion":2,"config":{"mediaType":"m","digest":")" + dc +
                               R"(","size":3},"layers":[{"mediaType":"l","digest":")" + d1 +
                               R"(","size":10},{"mediaType":"l","digest":")" + d2 +
                               R"(","size":20},{"mediaType":"l","digest":")" + d1 + R"(","size":10}]})";
  auto blobs = ParseOciManifestBlobs(manifest, "test manifest");
  ASSERT_TRUE(blobs.ok()) << blobs.status().ToString();
  EXPECT_EQ(blobs->config.digest, dc);
  ASSERT_EQ(blobs->layers.size(), 2u);
  EXPECT_EQ(blobs->layers[0].digest, d1);
  EXPECT_EQ(blobs->layers[1].size, 20u);
  EXPECT_EQ(ParseOciManifestBlobs(R"({"schemaVersion":1})", "old").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ParseOciManifestBlobs("not json", "junk").status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace idlegrid::image
