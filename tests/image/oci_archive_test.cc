#include "image/oci_archive.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/digest.h"
#include "common/fs.h"
#include "image/tar_reader.h"

namespace idlegrid::image {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/oci_archive_test.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { (void)RemoveTree(path_); }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& content) const {
    std::string file = path_ + "/" + name;
    EXPECT_TRUE(WriteFileAtomic(file, content).ok());
    return file;
  }

 private:
  std::string path_;
};

// --- Tar bytes, written by hand so tests control every header field --------

using HeaderTweak = std::function<void(char* header)>;

std::string TarHeader(const std::string& name, uint64_t size, char type, const HeaderTweak& tweak = nullptr) {
  std::string h(512, '\0');
  std::memcpy(h.data(), name.data(), std::min<size_t>(name.size(), 100));
  std::snprintf(&h[100], 8, "%07o", 0644);
  std::snprintf(&h[108], 8, "%07o", 0);
  std::snprintf(&h[116], 8, "%07o", 0);
  std::snprintf(&h[124], 12, "%011llo", static_cast<unsigned long long>(size));
  std::snprintf(&h[136], 12, "%011o", 0);
  h[156] = type;
  std::memcpy(&h[257],
              "ustar\0"
              "00",
              8);
  if (tweak) tweak(h.data());
  std::memset(&h[148], ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(&h[148], 8, "%06o", sum);
  return h;
}

std::string Padded(const std::string& content) {
  return content + std::string((512 - content.size() % 512) % 512, '\0');
}

std::string TarMemberBytes(const std::string& name, const std::string& content, char type = '0',
                           const HeaderTweak& tweak = nullptr) {
  return TarHeader(name, content.size(), type, tweak) + Padded(content);
}

const std::string kEndOfArchive(1024, '\0');

std::string Tar(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string out;
  for (const auto& [name, content] : files) out += TarMemberBytes(name, content);
  return out + kEndOfArchive;
}

// --- Synthetic OCI images ----------------------------------------------------

std::string DescriptorJson(const std::string& media_type, const std::string& content, const std::string& extra = "") {
  return R"({"mediaType":")" + media_type + R"(","digest":")" + Sha256Digest(content) + R"(","size":)" +
         std::to_string(content.size()) + extra + "}";
}

std::string BlobName(const std::string& content) { return "blobs/sha256/" + DigestHex(Sha256Digest(content)); }

struct SyntheticImage {
  explicit SyntheticImage(const std::string& seed = "one") {
    layer = "layer contents for image " + seed + std::string(3000, 'x');
    config = R"({"architecture":"amd64","os":"linux","seed":")" + seed + R"("})";
    manifest = R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
               R"("config":)" +
               DescriptorJson("application/vnd.oci.image.config.v1+json", config) + R"(,"layers":[)" +
               DescriptorJson("application/vnd.oci.image.layer.v1.tar", layer) + "]}";
  }
  std::string IndexEntry(const std::string& ref) const {
    return DescriptorJson("application/vnd.oci.image.manifest.v1+json", manifest,
                          R"(,"annotations":{"org.opencontainers.image.ref.name":")" + ref + R"("})");
  }
  std::vector<std::pair<std::string, std::string>> Blobs() const {
    return {{BlobName(layer), layer}, {BlobName(config), config}, {BlobName(manifest), manifest}};
  }

  std::string layer;
  std::string config;
  std::string manifest;
};

const std::pair<std::string, std::string> kOciLayout{"oci-layout", R"({"imageLayoutVersion": "1.0.0"})"};

std::pair<std::string, std::string> Index(const std::vector<std::string>& entries) {
  std::string list;
  for (const std::string& e : entries) list += (list.empty() ? "" : ",") + e;
  return {"index.json", R"({"schemaVersion":2,"manifests":[)" + list + "]}"};
}

std::vector<std::pair<std::string, std::string>> Layout(const SyntheticImage& image) {
  std::vector<std::pair<std::string, std::string>> files = image.Blobs();
  files.push_back(kOciLayout);
  files.push_back(Index({image.IndexEntry("localhost/test:1")}));
  return files;
}

// Replaces the content of `name` in `files` (same size unless told).
void Replace(std::vector<std::pair<std::string, std::string>>& files, const std::string& name,
             const std::string& content) {
  for (auto& [n, c] : files) {
    if (n == name) c = content;
  }
}

void Remove(std::vector<std::pair<std::string, std::string>>& files, const std::string& name) {
  std::erase_if(files, [&](const auto& f) { return f.first == name; });
}

bool Mentions(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

// --- InspectOciArchive on synthetic archives ---------------------------------

TEST(InspectOciArchiveTest, ValidArchive) {
  TempDir dir;
  SyntheticImage image;
  auto info = InspectOciArchive(dir.Write("a.tar", Tar(Layout(image))));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->manifest_digest, Sha256Digest(image.manifest));
  EXPECT_EQ(info->config_digest, Sha256Digest(image.config));
  EXPECT_EQ(info->ref_name, "localhost/test:1");
}

TEST(InspectOciArchiveTest, ArchiveWrittenByGnuTarWithDotPrefixes) {
  TempDir dir;
  SyntheticImage image;
  ASSERT_TRUE(MakeDirs(dir.path() + "/layout/blobs/sha256").ok());
  for (const auto& [name, content] : Layout(image)) dir.Write("layout/" + name, content);
  const std::string tar = dir.path() + "/gnu.tar";
  const std::string command = "tar -cf " + tar + " -C " + dir.path() + "/layout .";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  auto info = InspectOciArchive(tar);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->manifest_digest, Sha256Digest(image.manifest));
}

TEST(InspectOciArchiveTest, TamperedManifestIsDataLoss) {
  TempDir dir;
  SyntheticImage image;
  auto files = Layout(image);
  std::string tampered = image.manifest;
  tampered[1] = ' ';  // Same size.
  Replace(files, BlobName(image.manifest), tampered);
  auto info = InspectOciArchive(dir.Write("a.tar", Tar(files)));
  EXPECT_EQ(info.status().code(), Code::kDataLoss) << info.status().ToString();
  EXPECT_TRUE(Mentions(info.status(), "manifest blob is corrupt")) << info.status().message();
  EXPECT_TRUE(Mentions(info.status(), Sha256Digest(image.manifest)));
  EXPECT_TRUE(Mentions(info.status(), Sha256Digest(tampered)));
}

TEST(InspectOciArchiveTest, TamperedLayerIsDataLoss) {
  TempDir dir;
  SyntheticImage image;
  auto files = Layout(image);
  std::string tampered = image.layer;
  tampered.back() = 'y';
  Replace(files, BlobName(image.layer), tampered);
  auto info = InspectOciArchive(dir.Write("a.tar", Tar(files)));
  EXPECT_EQ(info.status().code(), Code::kDataLoss) << info.status().ToString();
  EXPECT_TRUE(Mentions(info.status(), "layer 0")) << info.status().message();
  EXPECT_TRUE(Mentions(info.status(), Sha256Digest(tampered))) << info.status().message();
}

TEST(InspectOciArchiveTest, LayerOfWrongSizeIsDataLoss) {
  TempDir dir;
  SyntheticImage image;
  auto files = Layout(image);
  Replace(files, BlobName(image.layer), image.layer + "extra");
  auto info = InspectOciArchive(dir.Write("a.tar", Tar(files)));
  EXPECT_EQ(info.status().code(), Code::kDataLoss) << info.status().ToString();
  EXPECT_TRUE(Mentions(info.status(), "bytes")) << info.status().message();
}

TEST(InspectOciArchiveTest, TamperedConfigIsDataLoss) {
  TempDir dir;
  SyntheticImage image;
  auto files = Layout(image);
  std::string tampered = image.config;
  tampered[1] = ' ';
  Replace(files, BlobName(image.config), tampered);
  auto info = InspectOciArchive(dir.Write("a.tar", Tar(files)));
  EXPECT_EQ(info.status().code(), Code::kDataLoss) << info.status().ToString();
  EXPECT_TRUE(Mentions(info.status(), "config")) << info.status().message();
}

TEST(InspectOciArchiveTest, MissingLayerIsNotFound) {
  TempDir dir;
  SyntheticImage image;
  auto files = Layout(image);
  Remove(files, BlobName(image.layer));
  auto info = InspectOciArchive(dir.Write("a.tar", Tar(files)));
  EXPECT_EQ(info.status().code(), Code::kNotFound) << info.status().ToString();
  EXPECT_TRUE(Mentions(info.status(), Sha256Digest(image.layer))) << info.status().message();
}

TEST(InspectOciArchiveTest, MissingConfigIsNotFound) {
  TempDir dir;
  SyntheticImage image;
  auto files = Layout(image);
  Remove(files, BlobName(image.config));
  auto info = InspectOciArchive(dir.Write("a.tar", Tar(files)));
  EXPECT_EQ(info.status().code(), Code::kNotFound) << info.status().ToString();
}

TEST(InspectOciArchiveTest, TwoManifestsNeedAnExpectedDigest) {
  TempDir dir;
  SyntheticImage first("one");
  SyntheticImage second("two");
  auto files = first.Blobs();
  for (const auto& blob : second.Blobs()) files.push_back(blob);
  files.push_back(kOciLayout);
  files.push_back(Index({first.IndexEntry("localhost/a:1"), second.IndexEntry("localhost/b:1")}));
  const std::string tar = dir.Write("a.tar", Tar(files));

  auto ambiguous = InspectOciArchive(tar);
  EXPECT_EQ(ambiguous.status().code(), Code::kInvalidArgument) << ambiguous.status().ToString();
  EXPECT_TRUE(Mentions(ambiguous.status(), "2 manifests")) << ambiguous.status().message();

  auto chosen = InspectOciArchive(tar, Sha256Digest(second.manifest));
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ(chosen->manifest_digest, Sha256Digest(second.manifest));
  EXPECT_EQ(chosen->config_digest, Sha256Digest(second.config));
  EXPECT_EQ(chosen->ref_name, "localhost/b:1");

  auto absent = InspectOciArchive(tar, Sha256Digest("no such manifest"));
  EXPECT_EQ(absent.status().code(), Code::kNotFound) << absent.status().ToString();
}

TEST(InspectOciArchiveTest, SameManifestUnderTwoTagsIsOneManifest) {
  TempDir dir;
  SyntheticImage image;
  auto files = image.Blobs();
  files.push_back(kOciLayout);
  files.push_back(Index({image.IndexEntry("localhost/a:1"), image.IndexEntry("localhost/a:2")}));
  auto info = InspectOciArchive(dir.Write("a.tar", Tar(files)));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->ref_name, "localhost/a:1");
}

TEST(InspectOciArchiveTest, TruncatedArchiveIsInvalidArgument) {
  TempDir dir;
  std::string bytes = Tar(Layout(SyntheticImage()));
  // Cut inside the first member's content, and exactly after a member.
  for (size_t cut : {size_t{700}, bytes.size() - kEndOfArchive.size()}) {
    auto info = InspectOciArchive(dir.Write("cut.tar", bytes.substr(0, cut)));
    EXPECT_EQ(info.status().code(), Code::kInvalidArgument) << cut << ": " << info.status().ToString();
  }
}

TEST(InspectOciArchiveTest, NotATarIsInvalidArgument) {
  TempDir dir;
  auto info = InspectOciArchive(dir.Write("a.tar", std::string(4096, 'z')));
  EXPECT_EQ(info.status().code(), Code::kInvalidArgument) << info.status().ToString();
  EXPECT_TRUE(Mentions(info.status(), "checksum")) << info.status().message();
  auto empty = InspectOciArchive(dir.Write("empty.tar", ""));
  EXPECT_EQ(empty.status().code(), Code::kInvalidArgument) << empty.status().ToString();
  EXPECT_EQ(InspectOciArchive(dir.path()).status().code(), Code::kInvalidArgument);
}

TEST(InspectOciArchiveTest, MissingArchiveIsNotFound) {
  TempDir dir;
  EXPECT_EQ(InspectOciArchive(dir.path() + "/nope.tar").status().code(), Code::kNotFound);
}

TEST(InspectOciArchiveTest, NotAnOciLayout) {
  TempDir dir;
  auto files = Layout(SyntheticImage());
  Remove(files, "oci-layout");
  auto info = InspectOciArchive(dir.Write("a.tar", Tar(files)));
  EXPECT_EQ(info.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Mentions(info.status(), "oci-layout")) << info.status().message();
}

TEST(InspectOciArchiveTest, MalformedIndexNamesTheFile) {
  TempDir dir;
  auto files = Layout(SyntheticImage());
  Replace(files, "index.json", "{\"manifests\": [");
  auto info = InspectOciArchive(dir.Write("a.tar", Tar(files)));
  EXPECT_EQ(info.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Mentions(info.status(), "index.json")) << info.status().message();
}

TEST(InspectOciArchiveTest, MalformedManifestNamesTheManifest) {
  TempDir dir;
  const std::string manifest = "[1, 2, 3]";  // Valid JSON, digest right, not a manifest.
  auto files = Layout(SyntheticImage());
  files.push_back({BlobName(manifest), manifest});
  Replace(files, "index.json", Index({DescriptorJson("application/vnd.oci.image.manifest.v1+json", manifest)}).second);
  auto info = InspectOciArchive(dir.Write("a.tar", Tar(files)));
  EXPECT_EQ(info.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Mentions(info.status(), "manifest " + Sha256Digest(manifest))) << info.status().message();
}

TEST(InspectOciArchiveTest, NestedIndexIsRejected) {
  TempDir dir;
  SyntheticImage image;
  auto files = Layout(image);
  Replace(files, "index.json",
          Index({DescriptorJson("application/vnd.oci.image.index.v1+json", image.manifest)}).second);
  auto info = InspectOciArchive(dir.Write("a.tar", Tar(files)));
  EXPECT_EQ(info.status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(Mentions(info.status(), "nested image index")) << info.status().message();
}

TEST(InspectOciArchiveTest, MalformedDescriptorsAreInvalidArgument) {
  TempDir dir;
  SyntheticImage image;
  const std::string digest = Sha256Digest(image.manifest);
  for (const std::string& descriptor :
       {R"({"digest":")" + digest + R"(","size":-1})", R"({"digest":")" + digest + R"(","size":1.5})",
        R"({"digest":")" + digest + R"("})", std::string(R"({"digest":"md5:abc","size":1})"),
        std::string(R"("not an object")")}) {
    auto files = Layout(image);
    Replace(files, "index.json", Index({descriptor}).second);
    auto info = InspectOciArchive(dir.Write("a.tar", Tar(files)));
    EXPECT_EQ(info.status().code(), Code::kInvalidArgument) << descriptor << ": " << info.status().ToString();
  }
}

TEST(InspectOciArchiveTest, MalformedExpectedDigestIsInvalidArgument) {
  TempDir dir;
  const std::string tar = dir.Write("a.tar", Tar(Layout(SyntheticImage())));
  EXPECT_EQ(InspectOciArchive(tar, "sha256:ABC").status().code(), Code::kInvalidArgument);
}

// --- TarReader on hostile and unusual archives ------------------------------

Result<TarReader> OpenTar(const TempDir& dir, const std::string& bytes) {
  return TarReader::Open(dir.Write("t.tar", bytes));
}

TEST(TarReaderTest, ReadsContentsByOffset) {
  TempDir dir;
  const std::string big(3 * 1024 * 1024 + 17, 'b');  // Spans several read chunks.
  auto tar = OpenTar(dir, Tar({{"small", "hello"}, {"dir/big", big}}));
  ASSERT_TRUE(tar.ok()) << tar.status().ToString();
  ASSERT_NE(tar->Find("small"), nullptr);
  EXPECT_EQ(*tar->ReadAll(*tar->Find("small"), 100), "hello");
  EXPECT_EQ(tar->ReadAll(*tar->Find("small"), 4).status().code(), Code::kInvalidArgument);
  std::string streamed;
  int chunks = 0;
  ASSERT_TRUE(tar->ReadChunks(*tar->Find("dir/big"),
                              [&](std::string_view chunk) {
                                streamed.append(chunk);
                                ++chunks;
                                return Status::Ok();
                              })
                  .ok());
  EXPECT_EQ(streamed, big);
  EXPECT_GT(chunks, 1);
  EXPECT_EQ(tar->Find("missing"), nullptr);
}

TEST(TarReaderTest, UstarPrefixField) {
  TempDir dir;
  auto with_prefix = [](char* h) { std::memcpy(&h[345], "blobs/sha256", 12); };
  auto tar = OpenTar(dir, TarMemberBytes("abc", "x", '0', with_prefix) + kEndOfArchive);
  ASSERT_TRUE(tar.ok()) << tar.status().ToString();
  EXPECT_NE(tar->Find("blobs/sha256/abc"), nullptr);
  EXPECT_EQ(tar->Find("abc"), nullptr);
}

TEST(TarReaderTest, GnuLongName) {
  TempDir dir;
  const std::string long_name = "blobs/" + std::string(150, 'n');
  auto tar = OpenTar(dir, TarMemberBytes("././@LongLink", long_name + '\0', 'L') +
                              TarMemberBytes(long_name.substr(0, 100), "content") + kEndOfArchive);
  ASSERT_TRUE(tar.ok()) << tar.status().ToString();
  ASSERT_NE(tar->Find(long_name), nullptr);
  EXPECT_EQ(*tar->ReadAll(*tar->Find(long_name), 100), "content");
  EXPECT_EQ(tar->members().size(), 1u);
}

TEST(TarReaderTest, PaxPathAndSize) {
  TempDir dir;
  const std::string record = "30 path=blobs/sha256/from-pax\n";
  ASSERT_EQ(record.size(), 30u);
  auto tar =
      OpenTar(dir, TarMemberBytes("PaxHeaders/x", record, 'x') + TarMemberBytes("short-name", "pax") + kEndOfArchive);
  ASSERT_TRUE(tar.ok()) << tar.status().ToString();
  EXPECT_NE(tar->Find("blobs/sha256/from-pax"), nullptr);
}

TEST(TarReaderTest, StopsAtEndMarker) {
  TempDir dir;
  auto tar = OpenTar(dir, Tar({{"a", "1"}}) + std::string(2000, 'g'));  // Trailing junk.
  ASSERT_TRUE(tar.ok()) << tar.status().ToString();
  EXPECT_EQ(tar->members().size(), 1u);
}

TEST(TarReaderTest, SkipsDirectoriesAndLinks) {
  TempDir dir;
  auto tar = OpenTar(dir, TarMemberBytes("d/", "", '5') + TarHeader("link", 9999, '2') +
                              TarMemberBytes("./d/./f", "f") + kEndOfArchive);
  ASSERT_TRUE(tar.ok()) << tar.status().ToString();
  EXPECT_EQ(tar->members().size(), 1u);
  EXPECT_NE(tar->Find("d/f"), nullptr);
}

struct HostileCase {
  const char* name;
  std::string bytes;
};

TEST(TarReaderTest, RejectsHostileArchives) {
  const std::vector<HostileCase> cases = {
      {"dot-dot path", Tar({{"blobs/../../etc/passwd", "x"}})},
      {"dot-dot via long name", TarMemberBytes("././@LongLink", "a/../../b", 'L') + Tar({{"b", "x"}})},
      {"dot-dot via prefix",
       TarMemberBytes("f", "x", '0', [](char* h) { std::memcpy(&h[345], "..", 2); }) + kEndOfArchive},
      {"absolute path", Tar({{"/etc/passwd", "x"}})},
      {"bad checksum",
       [] {
         std::string t = Tar({{"a", "x"}});
         t[0] = 'b';
         return t;
       }()},
      {"negative base-256 size",
       TarHeader("a", 0, '0', [](char* h) { std::memset(&h[124], 0xff, 12); }) + kEndOfArchive},
      {"overflowing base-256 size", TarHeader("a", 0, '0',
                                              [](char* h) {
                                                std::memset(&h[124], 0x7f, 12);
                                                h[124] = static_cast<char>(0x80);
                                              }) +
                                        kEndOfArchive},
      {"non-octal size",
       TarHeader("a", 0, '0', [](char* h) { std::memcpy(&h[124], "0000000001-", 11); }) + kEndOfArchive},
      {"size past end of file", TarHeader("a", 1 << 20, '0') + kEndOfArchive},
      {"duplicate member", Tar({{"a", "1"}, {"./a", "2"}})},
      {"not ustar magic",
       TarMemberBytes("a", "x", '0', [](char* h) { std::memcpy(&h[257], "abcdef", 6); }) + kEndOfArchive},
      {"no end marker", TarMemberBytes("a", "x")},
      {"lone zero block before a member", std::string(512, '\0') + Tar({{"a", "x"}})},
      {"too short", "ustar"},
      {"long name without member", TarMemberBytes("././@LongLink", "name", 'L') + kEndOfArchive},
      {"oversized long name", TarHeader("././@LongLink", 1 << 20, 'L') + std::string(1 << 20, 'n') + kEndOfArchive},
      {"malformed pax record", TarMemberBytes("p", "99 path=x\n", 'x') + Tar({{"a", "x"}})},
  };
  TempDir dir;
  for (const HostileCase& c : cases) {
    auto tar = OpenTar(dir, c.bytes);
    EXPECT_EQ(tar.status().code(), Code::kInvalidArgument) << c.name << ": " << tar.status().ToString();
  }
}

// --- A real archive written by podman ---------------------------------------

bool HaveCommand(const std::string& name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

TEST(InspectOciArchiveTest, RealPodmanArchive) {
  if (!HaveCommand("podman") || !HaveCommand("gcc")) {
    GTEST_SKIP() << "needs podman and gcc to build a real image";
  }
  if (std::system("podman info >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "podman is installed but not usable here (podman info fails)";
  }
  TempDir dir;
  dir.Write("hello.c", "int main(void) { return 0; }\n");
  dir.Write("Containerfile", "FROM scratch\nCOPY hello /hello\nENTRYPOINT [\"/hello\"]\n");
  const std::string tag = "localhost/igtest-oci:" + std::to_string(::getpid());
  const std::string archive = dir.path() + "/image.tar";
  const std::string log = dir.path() + "/log";
  const std::string build = "cd " + dir.path() + " && gcc -static -o hello hello.c && podman build -q -t " + tag +
                            " . && podman save --format oci-archive -o " + archive + " " + tag +
                            " && podman image inspect --format '{{.Id}}' " + tag + " > image-id";
  int rc = std::system(("(" + build + ") >" + log + " 2>&1").c_str());
  auto id = ReadFile(dir.path() + "/image-id");
  (void)std::system(("podman rmi -f " + tag + " >/dev/null 2>&1").c_str());
  ASSERT_EQ(rc, 0) << build << "\n" << ReadFile(log).value();
  ASSERT_TRUE(id.ok());

  auto info = InspectOciArchive(archive);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_TRUE(IsValidDigest(info->manifest_digest));
  // Podman's image ID is the digest of the image config.
  std::string image_id = id.value().substr(0, id.value().find_first_of("\n"));
  EXPECT_EQ(info->config_digest, "sha256:" + image_id);
  EXPECT_NE(info->ref_name.find("igtest-oci"), std::string::npos) << info->ref_name;
  EXPECT_TRUE(InspectOciArchive(archive, info->manifest_digest).ok());

  // Flip one byte inside the largest blob (the layer) of the real archive.
  const TarMember* layer = nullptr;
  {
    auto tar = TarReader::Open(archive);
    ASSERT_TRUE(tar.ok()) << tar.status().ToString();
    for (const auto& [path, member] : tar->members()) {
      if (!layer || member.size > layer->size) layer = &member;
    }
    ASSERT_NE(layer, nullptr);
    uint64_t offset = layer->offset + layer->size / 2;
    FILE* f = std::fopen(archive.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, static_cast<long>(offset), SEEK_SET);
    int c = std::fgetc(f);
    std::fseek(f, static_cast<long>(offset), SEEK_SET);
    std::fputc(c ^ 0x01, f);
    std::fclose(f);
  }
  auto corrupt = InspectOciArchive(archive);
  EXPECT_EQ(corrupt.status().code(), Code::kDataLoss) << corrupt.status().ToString();
}

}  // namespace
}  // namespace idlegrid::image
