// Tests for image/rootfs_unpack.h and image/layer_tar.h: layers written by
// hand, byte by byte, so that hostile ones can say anything a tar header can.
#include "image/rootfs_unpack.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "common/digest.h"
#include "common/fs.h"
#include "image/layer_tar.h"
#include "image/oci_builder.h"

// Entries below name only the fields that matter to each case.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace idlegrid::image {
namespace {

struct Entry {
  std::string name;
  char type = '0';
  std::string content;  // regular files
  std::string link;     // symlinks and hard links
  uint32_t mode = 0644;
};

std::string Header(const Entry& e, uint64_t size) {
  std::string h(512, '\0');
  std::memcpy(h.data(), e.name.data(), std::min<size_t>(e.name.size(), 100));
  std::snprintf(&h[100], 8, "%07o", e.mode);
  std::snprintf(&h[108], 8, "%07o", 0);
  std::snprintf(&h[116], 8, "%07o", 0);
  std::snprintf(&h[124], 12, "%011llo", static_cast<unsigned long long>(size));
  std::snprintf(&h[136], 12, "%011o", 0);
  h[156] = e.type;
  std::memcpy(&h[157], e.link.data(), std::min<size_t>(e.link.size(), 100));
  std::memcpy(&h[257],
              "ustar\0"
              "00",
              8);
  std::memset(&h[148], ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(&h[148], 8, "%06o", sum);
  return h;
}

std::string Padded(const std::string& s) { return s + std::string((512 - s.size() % 512) % 512, '\0'); }

std::string Tar(const std::vector<Entry>& entries) {
  std::string out;
  for (const Entry& e : entries) {
    if (e.name.size() > 100) {  // a pax record carries the long name
      std::string record = " path=" + e.name + "\n";
      size_t len = record.size() + 1;
      while (std::to_string(len).size() + record.size() != len) ++len;
      record = std::to_string(len) + record;
      out += Header({"PaxHeaders/x", 'x'}, record.size()) + Padded(record);
    }
    out += Header(e, e.content.size()) + Padded(e.content);
  }
  return out + std::string(1024, '\0');
}

class RootfsUnpackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rootfs_unpack_test.XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    root_ = dir_ + "/root";
    ASSERT_TRUE(MakeDirs(root_).ok());
  }
  void TearDown() override { EXPECT_TRUE(RemoveUnpackedTree(dir_).ok()); }

  Status Apply(const std::vector<std::vector<Entry>>& layers) {
    std::vector<std::string> paths;
    for (const auto& layer : layers) {
      paths.push_back(dir_ + "/layer" + std::to_string(paths.size()) + ".tar");
      EXPECT_TRUE(WriteFileAtomic(paths.back(), Tar(layer)).ok());
    }
    return ApplyLayerFiles(paths, root_);
  }

  bool Exists(const std::string& rel) {
    struct stat st {};
    return ::lstat((root_ + "/" + rel).c_str(), &st) == 0;
  }
  mode_t Mode(const std::string& rel) {
    struct stat st {};
    EXPECT_EQ(::lstat((root_ + "/" + rel).c_str(), &st), 0) << rel;
    return st.st_mode;
  }
  std::string Read(const std::string& rel) {
    Result<std::string> r = ReadFile(root_ + "/" + rel);
    return r.ok() ? *r : "<missing>";
  }

  std::string dir_, root_;
};

TEST_F(RootfsUnpackTest, WritesFilesDirsLinksAndModes) {
  const std::string long_name = "deep/" + std::string(120, 'n');
  Status s = Apply({{{"./bin/", '5', "", "", 0555},
                     {"./bin/tool", '0', "#!tool", "", 04755},
                     {"etc/conf", '0', "x=1", "", 0640},
                     {"etc/link", '2', "", "../bin/tool"},
                     {"etc/abs", '2', "", "/etc/passwd"},
                     {"etc/hard", '1', "", "etc/conf"},
                     {"dev/null", '3'},
                     {"fifo", '6'},
                     {long_name, '0', "long"}}});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Read("bin/tool"), "#!tool");
  EXPECT_EQ(Mode("bin/tool") & 07777, 0755u) << "setuid must be dropped";
  EXPECT_EQ(Mode("bin") & 07777, 0555u);
  EXPECT_EQ(Mode("etc/conf") & 07777, 0640u);
  EXPECT_TRUE(S_ISLNK(Mode("etc/link")));
  EXPECT_TRUE(S_ISLNK(Mode("etc/abs")));  // stored verbatim; only ever resolved inside the container
  struct stat a {
  }, b{};
  ASSERT_EQ(::stat((root_ + "/etc/conf").c_str(), &a), 0);
  ASSERT_EQ(::stat((root_ + "/etc/hard").c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_FALSE(Exists("dev/null")) << "device nodes are skipped";
  EXPECT_FALSE(Exists("fifo"));
  EXPECT_EQ(Read(long_name), "long");
}

TEST_F(RootfsUnpackTest, RefusesPathsOutsideTheRoot) {
  for (const char* name : {"../escape", "a/../../escape", "/abs"}) {
    Status s = Apply({{{name, '0', "x"}}});
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << name;
  }
  EXPECT_FALSE(PathExists(dir_ + "/escape"));
  Status link = Apply({{{"hl", '1', "", "../../etc/passwd"}}});
  EXPECT_EQ(link.code(), Code::kInvalidArgument) << link.ToString();
}

TEST_F(RootfsUnpackTest, NeverWritesThroughASymlink) {
  const std::string outside = dir_ + "/outside";
  ASSERT_TRUE(MakeDirs(outside).ok());
  // Same layer, then across layers; absolute and relative link targets.
  for (const std::vector<std::vector<Entry>>& layers :
       {std::vector<std::vector<Entry>>{{{"evil", '2', "", outside}, {"evil/passwd", '0', "pwned"}}},
        std::vector<std::vector<Entry>>{{{"evil", '2', "", "../outside"}}, {{"evil/passwd", '0', "pwned"}}},
        std::vector<std::vector<Entry>>{{{"d/", '5'}, {"d/evil", '2', "", "../../outside"}},
                                        {{"d/evil/sub/passwd", '0', "pwned"}}}}) {
    Status s = Apply(layers);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("symlink"), std::string::npos) << s.ToString();
  }
  EXPECT_TRUE(RegularFilesUnder(outside).empty());
  // A file entry replaces a symlink at its own path instead of following it.
  ASSERT_TRUE(Apply({{{"victim", '2', "", outside + "/target"}}, {{"victim", '0', "mine"}}}).ok());
  EXPECT_EQ(Read("victim"), "mine");
  EXPECT_FALSE(PathExists(outside + "/target"));
  // A hard link to a symlink links the symlink itself.
  ASSERT_TRUE(Apply({{{"sl", '2', "", outside + "/t2"}, {"hl", '1', "", "sl"}}}).ok());
  EXPECT_TRUE(S_ISLNK(Mode("hl")));
}

TEST_F(RootfsUnpackTest, WhiteoutsHideLowerLayers) {
  Status s = Apply({{{"a/keep", '0', "k"}, {"a/gone", '0', "g"}, {"b/old1", '0'}, {"b/sub/old2", '0'}, {"c/", '5'}},
                    {{"a/.wh.gone", '0'},
                     {"b/", '5'},
                     {"b/.wh..wh..opq", '0'},
                     {"b/new", '0', "n"},
                     {"c/.wh.never-existed", '0'},
                     {"x/.wh.y", '0'}}});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Read("a/keep"), "k");
  EXPECT_FALSE(Exists("a/gone"));
  EXPECT_FALSE(Exists("a/.wh.gone"));
  EXPECT_FALSE(Exists("b/old1"));
  EXPECT_FALSE(Exists("b/sub"));
  EXPECT_EQ(Read("b/new"), "n");
  EXPECT_FALSE(Exists("b/.wh..wh..opq"));
  EXPECT_FALSE(Exists("x"));
  // An opaque whiteout after this layer's own entries keeps them.
  ASSERT_TRUE(Apply({{{"o/lower", '0'}}, {{"o/", '5'}, {"o/upper", '0', "u"}, {"o/.wh..wh..opq", '0'}}}).ok());
  EXPECT_FALSE(Exists("o/lower"));
  EXPECT_EQ(Read("o/upper"), "u");
  EXPECT_EQ(Apply({{{"a/.wh...", '0'}}}).code(), Code::kInvalidArgument);
}

TEST_F(RootfsUnpackTest, LaterLayersReplaceEarlierEntries) {
  ASSERT_TRUE(Apply({{{"p/", '5', "", "", 0500}, {"p/f", '0', "1"}, {"q", '0', "file"}},
                     {{"p/f", '0', "2"}, {"q/", '5'}, {"q/inside", '0', "i"}}})
                  .ok());
  EXPECT_EQ(Read("p/f"), "2") << "a read-only directory does not block a later layer";
  EXPECT_EQ(Mode("p") & 0777, 0500u);
  EXPECT_EQ(Read("q/inside"), "i");
}

TEST_F(RootfsUnpackTest, RejectsMalformedTars) {
  const std::string path = dir_ + "/bad.tar";
  std::string good = Tar({{"f", '0', "content"}});
  std::string bad_sum = good;
  bad_sum[0] = 'g';
  std::string truncated = good.substr(0, 512 + 100);
  for (const std::string& bytes : {bad_sum, truncated, Tar({{"sparse", 'S'}}), std::string(100, 'x')}) {
    ASSERT_TRUE(WriteFileAtomic(path, bytes).ok());
    EXPECT_EQ(ApplyLayerFiles({path}, root_).code(), Code::kInvalidArgument);
  }
}

// --- whole archives -----------------------------------------------------------

// An OCI archive around hand-made layer tars (RenderOciArchive only makes
// well-behaved ones).
std::string ArchiveWithLayers(const std::vector<std::string>& layers, const std::string& config) {
  auto descriptor = [](const std::string& type, const std::string& blob) {
    return R"({"mediaType":")" + type + R"(","digest":")" + Sha256Digest(blob) + R"(","size":)" +
           std::to_string(blob.size()) + "}";
  };
  std::string manifest = R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":)" +
                         descriptor("application/vnd.oci.image.config.v1+json", config) + R"(,"layers":[)";
  for (size_t i = 0; i < layers.size(); ++i) {
    manifest += (i ? "," : "") + descriptor("application/vnd.oci.image.layer.v1.tar", layers[i]);
  }
  manifest += "]}";
  std::vector<Entry> files = {{"oci-layout", '0', R"({"imageLayoutVersion":"1.0.0"})"},
                              {"index.json", '0',
                               R"({"schemaVersion":2,"manifests":[)" +
                                   descriptor("application/vnd.oci.image.manifest.v1+json", manifest) + "]}"}};
  for (const std::string& blob : layers) files.push_back({"blobs/sha256/" + DigestHex(Sha256Digest(blob)), '0', blob});
  files.push_back({"blobs/sha256/" + DigestHex(Sha256Digest(config)), '0', config});
  files.push_back({"blobs/sha256/" + DigestHex(Sha256Digest(manifest)), '0', manifest});
  return Tar(files);
}

TEST_F(RootfsUnpackTest, UnpacksAVerifiedImageAtomically) {
  Result<BuiltImage> built =
      BuildOciArchive({{"/bin/job", "ELF", 0755}, {"etc/data", "d", 0644}}, {"/bin/job", "x"}, "", dir_ + "/img.tar");
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const std::string dest = dir_ + "/image";
  Result<UnpackedImage> u = UnpackOciImage(built->archive_path, dest, built->config_digest);
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->config_digest, built->config_digest);
  EXPECT_EQ(u->config.entrypoint, (std::vector<std::string>{"/bin/job", "x"}));
  EXPECT_EQ(ReadFile(dest + "/rootfs/bin/job").value(), "ELF");
  Result<std::string> config = ReadFile(dest + "/" + kImageConfigFileName);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(Sha256Digest(*config), built->config_digest);

  // A second unpack to the same place loses the race and says so.
  EXPECT_EQ(UnpackOciImage(built->archive_path, dest).status().code(), Code::kAlreadyExists);
  // The wrong image is refused before anything is written.
  Result<UnpackedImage> wrong = UnpackOciImage(built->archive_path, dir_ + "/other", "sha256:" + std::string(64, '0'));
  EXPECT_EQ(wrong.status().code(), Code::kDataLoss);
  EXPECT_FALSE(PathExists(dir_ + "/other"));
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
}

// A second version of an image on the same base layer starts from the first
// one's tree (hard links) and applies only its own layer; the first image's
// files are untouched, even where the new layer replaces or deletes them.
TEST_F(RootfsUnpackTest, AnImageSharingFirstLayersStartsFromTheirTreeByHardLinks) {
  const std::string base = Tar({{"usr/", '5', "", "", 0755},
                                {"usr/lib/", '5', "", "", 0555},
                                {"usr/lib/big.so", '0', std::string(4096, 'L')},
                                {"usr/lib/link", '2', "", "big.so"},
                                {"etc/conf", '0', "base"}});
  const std::string v1 = Tar({{"app/train.py", '0', "print(1)"}});
  const std::string v2 = Tar({{"app/train.py", '0', "print(2)"},
                              {"etc/conf", '0', "v2"},
                              {"etc/.wh.gone", '0', ""},
                              {"usr/lib/.wh.link", '0', ""}});
  const std::string config = R"({"architecture":"amd64","os":"linux","config":{"Entrypoint":["/x"]}})";
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/v1.tar", ArchiveWithLayers({base, v1}, config)).ok());
  ASSERT_TRUE(WriteFileAtomic(dir_ + "/v2.tar", ArchiveWithLayers({base, v2}, config + " ")).ok());
  const std::string one = dir_ + "/one", two = dir_ + "/two";
  ASSERT_TRUE(UnpackOciImage(dir_ + "/v1.tar", one).ok());
  EXPECT_EQ(ReadLayerChain(one).size(), 2u);
  auto chain = ArchiveLayerChain(dir_ + "/v2.tar");
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
  ASSERT_EQ(chain->size(), 2u);
  EXPECT_EQ((*chain)[0], ReadLayerChain(one)[0]);
  EXPECT_NE((*chain)[1], ReadLayerChain(one)[1]);

  auto u = UnpackOciImage(dir_ + "/v2.tar", two, "", UnpackBase{one, 1});
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  struct stat a {
  }, b{};
  ASSERT_EQ(::stat((one + "/rootfs/usr/lib/big.so").c_str(), &a), 0);
  ASSERT_EQ(::stat((two + "/rootfs/usr/lib/big.so").c_str(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino) << "the shared layer's file is one inode, not a copy";
  EXPECT_EQ(ReadFile(two + "/rootfs/app/train.py").value(), "print(2)");
  EXPECT_EQ(ReadFile(two + "/rootfs/etc/conf").value(), "v2");
  EXPECT_EQ(ReadFile(one + "/rootfs/etc/conf").value(), "base") << "replacing a linked file must not write through";
  EXPECT_EQ(ReadFile(one + "/rootfs/app/train.py").value(), "print(1)");
  struct stat l {};
  EXPECT_NE(::lstat((two + "/rootfs/usr/lib/link").c_str(), &l), 0) << "whited out in v2";
  EXPECT_EQ(::lstat((one + "/rootfs/usr/lib/link").c_str(), &l), 0) << "still in v1";
  struct stat d {};
  ASSERT_EQ(::stat((two + "/rootfs/usr/lib").c_str(), &d), 0);
  EXPECT_EQ(d.st_mode & 07777, 0555u) << "directory modes cloned";

  // A base whose chain does not match is ignored: the image is unpacked whole.
  auto three = UnpackOciImage(dir_ + "/v2.tar", dir_ + "/three", "", UnpackBase{dir_ + "/nowhere", 1});
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  struct stat c {};
  ASSERT_EQ(::stat((dir_ + "/three/rootfs/usr/lib/big.so").c_str(), &c), 0);
  EXPECT_NE(c.st_ino, a.st_ino);
}

TEST_F(RootfsUnpackTest, AHostileLayerLeavesNothingBehind) {
  const std::string archive = dir_ + "/hostile.tar";
  ASSERT_TRUE(WriteFileAtomic(archive, ArchiveWithLayers({Tar({{"ok", '0', "1"}}),
                                                          Tar({{"evil", '2', "", "/"}, {"evil/tmp/x", '0', "2"}})},
                                                         R"({"config":{"Cmd":["/ok"]}})"))
                  .ok());
  Result<UnpackedImage> u = UnpackOciImage(archive, dir_ + "/image");
  EXPECT_EQ(u.status().code(), Code::kInvalidArgument) << u.status().ToString();
  EXPECT_NE(u.status().message().find("layer 1"), std::string::npos) << u.status().ToString();
  EXPECT_FALSE(PathExists(dir_ + "/image"));
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
  }
}

std::string Gzip(const std::string& data) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, data.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

TEST_F(RootfsUnpackTest, InflatesGzipLayersAndChecksTheirDiffIds) {
  const std::string lower = Tar({{"a", '0', std::string(300000, 'a')}, {"gone", '0', "x"}});
  const std::string upper = Tar({{".wh.gone", '0'}, {"b", '0', "b"}});
  // Two concatenated gzip members are one valid gzip stream.
  const std::string upper_gz = Gzip(upper.substr(0, 512)) + Gzip(upper.substr(512));
  const std::string config = R"({"config":{"Cmd":["/a"]},"rootfs":{"type":"layers","diff_ids":[")" +
                             Sha256Digest(lower) + R"(",")" + Sha256Digest(upper) + R"("]}})";
  const std::string archive = dir_ + "/gzip.tar";
  ASSERT_TRUE(WriteFileAtomic(archive, ArchiveWithLayers({Gzip(lower), upper_gz}, config)).ok());
  Result<UnpackedImage> u = UnpackOciImage(archive, dir_ + "/image");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(ReadFile(dir_ + "/image/rootfs/a")->size(), 300000u);
  EXPECT_EQ(ReadFile(dir_ + "/image/rootfs/b").value(), "b");
  EXPECT_FALSE(PathExists(dir_ + "/image/rootfs/gone"));
  EXPECT_FALSE(PathExists(dir_ + "/image/layer.tar")) << "scratch file left behind";

  // A layer that inflates to something else than its diff_id is refused.
  const std::string lying = R"({"rootfs":{"diff_ids":[")" + Sha256Digest(upper) + R"("]}})";
  ASSERT_TRUE(WriteFileAtomic(archive, ArchiveWithLayers({Gzip(lower)}, lying)).ok());
  EXPECT_EQ(UnpackOciImage(archive, dir_ + "/lying").status().code(), Code::kDataLoss);
  // Truncated gzip, and zstd, are refused.
  const std::string gz = Gzip(lower);
  ASSERT_TRUE(WriteFileAtomic(archive, ArchiveWithLayers({gz.substr(0, gz.size() / 2)}, "{}")).ok());
  EXPECT_EQ(UnpackOciImage(archive, dir_ + "/truncated").status().code(), Code::kInvalidArgument);
  ASSERT_TRUE(WriteFileAtomic(archive, ArchiveWithLayers({std::string("\x28\xb5\x2f\xfd rest", 9)}, "{}")).ok());
  Result<UnpackedImage> zstd = UnpackOciImage(archive, dir_ + "/zstd");
  EXPECT_EQ(zstd.status().code(), Code::kInvalidArgument);
  EXPECT_NE(zstd.status().message().find("zstd"), std::string::npos) << zstd.status().ToString();
  for (const char* d : {"/lying", "/truncated", "/zstd"}) EXPECT_FALSE(PathExists(dir_ + d)) << d;
}

TEST_F(RootfsUnpackTest, ConcurrentUnpacksOfOneImageBothSucceedOrLoseCleanly) {
  Result<BuiltImage> built = BuildOciArchive({{"/f", std::string(1 << 20, 'x'), 0644}}, {"/f"}, "", dir_ + "/i.tar");
  ASSERT_TRUE(built.ok());
  Status results[4];
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { results[i] = UnpackOciImage(built->archive_path, dir_ + "/image").status(); });
  }
  for (auto& t : threads) t.join();
  int won = 0;
  for (const Status& s : results) {
    EXPECT_TRUE(s.ok() || s.code() == Code::kAlreadyExists) << s.ToString();
    won += s.ok();
  }
  EXPECT_EQ(won, 1);
  EXPECT_EQ(ReadFile(dir_ + "/image/rootfs/f")->size(), size_t{1} << 20);
}

TEST(ParseImageConfigTest, ReadsTheFieldsThatStartAContainer) {
  Result<ImageConfig> c = ParseImageConfig(
      R"({"architecture":"amd64","config":{"Entrypoint":["/a"],"Cmd":["b","c"],"Env":["X=1"],"WorkingDir":"/w","User":"0"}})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->entrypoint, (std::vector<std::string>{"/a"}));
  EXPECT_EQ(c->cmd, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(c->env, (std::vector<std::string>{"X=1"}));
  EXPECT_EQ(c->working_dir, "/w");
  EXPECT_EQ(c->user, "0");
  EXPECT_TRUE(ParseImageConfig(R"({"config":{"Entrypoint":null}})")->entrypoint.empty());
  EXPECT_EQ(ParseImageConfig(R"({"config":{"Cmd":"sh"}})").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ParseImageConfig("[").status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace idlegrid::image
