#include "image/oci_builder.h"
#include "common/test_support.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "common/digest.h"
#include "common/fs.h"
#include "image/oci_archive.h"
#include "image/tar_reader.h"

namespace idlegrid::image {
namespace {

using ::idlegrid::testing::CommandResult;
using ::idlegrid::testing::HaveCommand;
using ::idlegrid::testing::kPodmanUlimitFlags;
using ::idlegrid::testing::RunShell;
using ::idlegrid::testing::TempDir;

// One member of a tar, read straight from its ustar header.
struct RawMember {
  std::string name;  // prefix + "/" + name when the prefix is set
  char type = 0;
  std::string mode, uid, gid, mtime;  // the octal fields as written
  std::string content;
  bool checksum_ok = false;
};

std::string Field(const std::string& block, size_t offset, size_t size) {
  std::string field = block.substr(offset, size);
  return field.substr(0, field.find('\0'));
}

// Walks a tar written by the builder; fails the test on anything unexpected.
std::vector<RawMember> ReadRawTar(const std::string& tar) {
  std::vector<RawMember> members;
  EXPECT_EQ(tar.size() % 512, 0u);
  size_t pos = 0;
  while (pos + 512 <= tar.size()) {
    std::string block = tar.substr(pos, 512);
    if (block == std::string(512, '\0')) break;
    RawMember m;
    std::string prefix = Field(block, 345, 155);
    m.name = (prefix.empty() ? "" : prefix + "/") + Field(block, 0, 100);
    m.type = block[156];
    m.mode = Field(block, 100, 8);
    m.uid = Field(block, 108, 8);
    m.gid = Field(block, 116, 8);
    m.mtime = Field(block, 136, 12);
    unsigned sum = 0;
    for (size_t i = 0; i < 512; ++i) {
      sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(block[i]);
    }
    m.checksum_ok = std::strtoul(Field(block, 148, 8).c_str(), nullptr, 8) == sum;
    size_t size = std::strtoull(Field(block, 124, 12).c_str(), nullptr, 8);
    m.content = tar.substr(pos + 512, size);
    pos += 512 + (size + 511) / 512 * 512;
    members.push_back(std::move(m));
  }
  EXPECT_EQ(tar.substr(pos), std::string(1024, '\0')) << "end-of-archive marker";
  return members;
}

const RawMember* FindMember(const std::vector<RawMember>& members, const std::string& name) {
  for (const RawMember& m : members) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::string BlobOf(const std::vector<RawMember>& archive, const std::string& digest) {
  const RawMember* m = FindMember(archive, "blobs/sha256/" + DigestHex(digest));
  EXPECT_NE(m, nullptr) << digest;
  return m ? m->content : "";
}

google::protobuf::Struct ParseJson(const std::string& text) {
  google::protobuf::Struct object;
  auto status = google::protobuf::util::JsonStringToMessage(text, &object);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << text;
  return object;
}

#if defined(__aarch64__)
constexpr char kArchitecture[] = "arm64";
#else
constexpr char kArchitecture[] = "amd64";
#endif

const std::vector<ImageFile> kFiles = {{"/bench",
                                        std::string("\x7f"
                                                    "ELF\0binary",
                                                    10),
                                        0755},
                                       {"/etc/motd", "hello\n", 0644}};
const std::vector<std::string> kEntrypoint = {"/bench", "--flag"};
constexpr char kRefName[] = "idlegrid/test-image:1";

// --- Reproducibility and verification by the archive reader ------------------

TEST(OciBuilderTest, BuildingTwiceGivesIdenticalBytesAndDigests) {
  TempDir dir("oci_builder_test");
  auto first = BuildOciArchive(kFiles, kEntrypoint, kRefName, dir.path() + "/a.tar");
  auto second = BuildOciArchive(kFiles, kEntrypoint, kRefName, dir.path() + "/b.tar");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(first->manifest_digest, second->manifest_digest);
  EXPECT_EQ(first->config_digest, second->config_digest);
  EXPECT_EQ(first->archive_path, dir.path() + "/a.tar");
  auto a = ReadFile(dir.path() + "/a.tar");
  auto b = ReadFile(dir.path() + "/b.tar");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_FALSE(a->empty());
  EXPECT_EQ(*a, *b);

  auto rendered = RenderOciArchive(kFiles, kEntrypoint, kRefName);
  ASSERT_TRUE(rendered.ok());
  EXPECT_EQ(rendered->bytes, *a);
  EXPECT_EQ(rendered->manifest_digest, first->manifest_digest);

  // Any change to the inputs changes the image.
  std::vector<ImageFile> changed = kFiles;
  changed[1].content = "hello!\n";
  auto other = RenderOciArchive(changed, kEntrypoint, kRefName);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->config_digest, first->config_digest);
}

TEST(OciBuilderTest, InspectOciArchiveAcceptsWhatItBuilds) {
  TempDir dir("oci_builder_test");
  auto built = BuildOciArchive(kFiles, kEntrypoint, kRefName, dir.path() + "/image.tar");
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_TRUE(IsValidDigest(built->manifest_digest));
  EXPECT_TRUE(IsValidDigest(built->config_digest));
  auto info = InspectOciArchive(built->archive_path, built->manifest_digest);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->manifest_digest, built->manifest_digest);
  EXPECT_EQ(info->config_digest, built->config_digest);
  EXPECT_EQ(info->ref_name, kRefName);
}

TEST(OciBuilderTest, EmptyRefNameLeavesNoAnnotation) {
  TempDir dir("oci_builder_test");
  auto built = BuildOciArchive(kFiles, kEntrypoint, "", dir.path() + "/image.tar");
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  auto info = InspectOciArchive(built->archive_path);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->ref_name, "");
}

// --- What is inside ----------------------------------------------------------------

TEST(OciBuilderTest, LayoutDocumentsHaveTheDocumentedContent) {
  auto rendered = RenderOciArchive(kFiles, kEntrypoint, kRefName);
  ASSERT_TRUE(rendered.ok()) << rendered.status().ToString();
  std::vector<RawMember> archive = ReadRawTar(rendered->bytes);
  ASSERT_NE(FindMember(archive, "oci-layout"), nullptr);
  EXPECT_EQ(FindMember(archive, "oci-layout")->content, "{\"imageLayoutVersion\":\"1.0.0\"}");
  ASSERT_NE(FindMember(archive, "index.json"), nullptr);
  for (const RawMember& m : archive) {
    EXPECT_TRUE(m.checksum_ok) << m.name;
    if (m.name.rfind("blobs/sha256/", 0) == 0 && m.type == '0') {
      EXPECT_EQ("sha256:" + m.name.substr(13), Sha256Digest(m.content)) << "blob named by digest";
    }
  }

  google::protobuf::Struct index = ParseJson(FindMember(archive, "index.json")->content);
  const auto& entry = index.fields().at("manifests").list_value().values(0).struct_value();
  EXPECT_EQ(entry.fields().at("digest").string_value(), rendered->manifest_digest);
  EXPECT_EQ(
      entry.fields().at("annotations").struct_value().fields().at("org.opencontainers.image.ref.name").string_value(),
      kRefName);

  google::protobuf::Struct manifest = ParseJson(BlobOf(archive, rendered->manifest_digest));
  const auto& layers = manifest.fields().at("layers").list_value();
  ASSERT_EQ(layers.values_size(), 1);
  const auto& layer_descriptor = layers.values(0).struct_value().fields();
  EXPECT_EQ(layer_descriptor.at("mediaType").string_value(), "application/vnd.oci.image.layer.v1.tar");
  const std::string layer_digest = layer_descriptor.at("digest").string_value();

  const std::string config = BlobOf(archive, rendered->config_digest);
  EXPECT_EQ(config, std::string("{\"architecture\":\"") + kArchitecture +
                        "\",\"os\":\"linux\",\"config\":{\"Entrypoint\":[\"/bench\",\"--flag\"]},"
                        "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" +
                        layer_digest + "\"]}}");
}

TEST(OciBuilderTest, LayerHoldsTheFilesOwnedByRootWithMtimeZero) {
  std::vector<ImageFile> files = {{"/usr/bin/tool", "T", 0700}, {"usr/lib/x", "XX", 0644}, {"/top", "", 04755}};
  auto rendered = RenderOciArchive(files, {"/usr/bin/tool"}, "");
  ASSERT_TRUE(rendered.ok()) << rendered.status().ToString();
  std::vector<RawMember> archive = ReadRawTar(rendered->bytes);
  google::protobuf::Struct manifest = ParseJson(BlobOf(archive, rendered->manifest_digest));
  std::string layer_digest =
      manifest.fields().at("layers").list_value().values(0).struct_value().fields().at("digest").string_value();
  std::vector<RawMember> layer = ReadRawTar(BlobOf(archive, layer_digest));

  struct Expected {
    std::string name;
    char type;
    std::string mode;
    std::string content;
  };
  const std::vector<Expected> expected = {{"usr/", '5', "0000755", ""},          {"usr/bin/", '5', "0000755", ""},
                                          {"usr/bin/tool", '0', "0000700", "T"}, {"usr/lib/", '5', "0000755", ""},
                                          {"usr/lib/x", '0', "0000644", "XX"},   {"top", '0', "0004755", ""}};
  ASSERT_EQ(layer.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(expected[i].name);
    EXPECT_EQ(layer[i].name, expected[i].name);
    EXPECT_EQ(layer[i].type, expected[i].type);
    EXPECT_EQ(layer[i].mode, expected[i].mode);
    EXPECT_EQ(layer[i].content, expected[i].content);
    EXPECT_EQ(layer[i].uid, "0000000");
    EXPECT_EQ(layer[i].gid, "0000000");
    EXPECT_EQ(layer[i].mtime, "00000000000");
    EXPECT_TRUE(layer[i].checksum_ok);
  }
}

TEST(OciBuilderTest, LongPathsUseTheUstarPrefixField) {
  // 182 bytes: the file and "aaa.../bbb.../" need the prefix field.
  const std::string path = "/" + std::string(60, 'a') + "/" + std::string(60, 'b') + "/" + std::string(60, 'f');
  TempDir dir("oci_builder_test");
  auto built = BuildOciArchive({{path, "long", 0644}}, {"/x"}, "", dir.path() + "/image.tar");
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  auto rendered = RenderOciArchive({{path, "long", 0644}}, {"/x"}, "");
  ASSERT_TRUE(rendered.ok());
  std::vector<RawMember> archive = ReadRawTar(rendered->bytes);
  google::protobuf::Struct manifest = ParseJson(BlobOf(archive, rendered->manifest_digest));
  std::string layer_digest =
      manifest.fields().at("layers").list_value().values(0).struct_value().fields().at("digest").string_value();
  // The project's own tar reader (which joins prefix and name) finds it.
  const std::string layer_path = dir.path() + "/layer.tar";
  ASSERT_TRUE(WriteFileAtomic(layer_path, BlobOf(archive, layer_digest)).ok());
  auto tar = TarReader::Open(layer_path);
  ASSERT_TRUE(tar.ok()) << tar.status().ToString();
  const TarMember* member = tar->Find(path.substr(1));
  ASSERT_NE(member, nullptr);
  EXPECT_EQ(tar->ReadAll(*member, 100).value(), "long");
}

TEST(OciBuilderTest, EntrypointIsEscapedAndRoundTripsThroughAJsonParser) {
  const std::vector<std::string> entrypoint = {"/bin/x", "quote\" back\\slash", "new\nline\ttab\x01",
                                               "caf\xc3\xa9 \xe2\x82\xac"};
  auto rendered = RenderOciArchive(kFiles, entrypoint, "");
  ASSERT_TRUE(rendered.ok()) << rendered.status().ToString();
  std::vector<RawMember> archive = ReadRawTar(rendered->bytes);
  google::protobuf::Struct config = ParseJson(BlobOf(archive, rendered->config_digest));
  const auto& parsed = config.fields().at("config").struct_value().fields().at("Entrypoint").list_value();
  ASSERT_EQ(parsed.values_size(), static_cast<int>(entrypoint.size()));
  for (size_t i = 0; i < entrypoint.size(); ++i) {
    EXPECT_EQ(parsed.values(static_cast<int>(i)).string_value(), entrypoint[i]);
  }
}

// --- Rejected inputs -------------------------------------------------------------

TEST(OciBuilderTest, RejectsBadInputs) {
  struct Case {
    std::string name;
    std::vector<ImageFile> files;
    std::vector<std::string> entrypoint;
    std::string ref_name;
  };
  const std::vector<std::string> ok_entry = {"/x"};
  const std::vector<Case> cases = {
      {"empty path", {{"", "x"}}, ok_entry, ""},
      {"root path", {{"/", "x"}}, ok_entry, ""},
      {"empty component", {{"/a//b", "x"}}, ok_entry, ""},
      {"trailing slash", {{"/a/", "x"}}, ok_entry, ""},
      {"dot component", {{"/./a", "x"}}, ok_entry, ""},
      {"dot-dot component", {{"/a/../b", "x"}}, ok_entry, ""},
      {"NUL in path", {{std::string("/a\0b", 4), "x"}}, ok_entry, ""},
      {"path too long", {{"/" + std::string(300, 'p'), "x"}}, ok_entry, ""},
      {"long name, no split", {{"/a/" + std::string(101, 'p'), "x"}}, ok_entry, ""},
      {"parent too long", {{"/" + std::string(120, 'd') + "/f", "x"}}, ok_entry, ""},
      {"duplicate path", {{"/a", "x"}, {"a", "y"}}, ok_entry, ""},
      {"file is also a directory", {{"/a", "x"}, {"/a/b", "y"}}, ok_entry, ""},
      {"mode above 07777", {{"/a", "x", 010000}}, ok_entry, ""},
      {"no entrypoint", {{"/a", "x"}}, {}, ""},
      {"empty entrypoint program", {{"/a", "x"}}, {""}, ""},
      {"entrypoint not UTF-8", {{"/a", "x"}}, {"/a", "\xff"}, ""},
      {"entrypoint overlong UTF-8", {{"/a", "x"}}, {"/a", "\xc0\xaf"}, ""},
      {"entrypoint surrogate", {{"/a", "x"}}, {"/a", "\xed\xa0\x80"}, ""},
      {"entrypoint truncated UTF-8", {{"/a", "x"}}, {"/a", "\xe2\x82"}, ""},
      {"entrypoint NUL", {{"/a", "x"}}, {"/a", std::string("a\0b", 3)}, ""},
      {"ref name with space", {{"/a", "x"}}, ok_entry, "bad name"},
      {"ref name with quote", {{"/a", "x"}}, ok_entry, "a\"b"},
      {"ref name empty component", {{"/a", "x"}}, ok_entry, "a//b"},
      {"ref name leading separator", {{"/a", "x"}}, ok_entry, "-a"},
      {"ref name trailing separator", {{"/a", "x"}}, ok_entry, "a:"},
      {"ref name double separator", {{"/a", "x"}}, ok_entry, "a.:b"},
      {"ref name triple dash", {{"/a", "x"}}, ok_entry, "a---b"},
  };
  for (const Case& c : cases) {
    auto rendered = RenderOciArchive(c.files, c.entrypoint, c.ref_name);
    EXPECT_EQ(rendered.status().code(), Code::kInvalidArgument) << c.name << ": " << rendered.status().ToString();
  }
}

TEST(OciBuilderTest, AcceptsRefNamesOfTheOciGrammar) {
  for (const std::string ref :
       {"idlegrid/readiness-bench:1", "a", "a--b", "a_b.c+d@e", "localhost:5000/team/tool:v1.2"}) {
    auto rendered = RenderOciArchive(kFiles, kEntrypoint, ref);
    EXPECT_TRUE(rendered.ok()) << ref << ": " << rendered.status().ToString();
  }
}

TEST(OciBuilderTest, UnwritableOutputIsAnInternalError) {
  auto built = BuildOciArchive(kFiles, kEntrypoint, kRefName, "/nonexistent-dir/x/image.tar");
  EXPECT_EQ(built.status().code(), Code::kInternal) << built.status().ToString();
}

// --- Loaded and run by real podman ------------------------------------------------

// Removes the image, whatever the test's outcome.
class ImageCleanup {
 public:
  explicit ImageCleanup(std::string id) : id_(std::move(id)) {}
  ~ImageCleanup() { (void)RunShell("podman rmi -f " + id_); }

 private:
  std::string id_;
};

TEST(OciBuilderTest, PodmanLoadsAndRunsTheImage) {
  if (!HaveCommand("podman") || !HaveCommand("gcc")) {
    GTEST_SKIP() << "needs podman and gcc to load and run a built image";
  }
  if (RunShell("podman info").exit_code != 0) {
    GTEST_SKIP() << "podman is installed but not usable here (podman info fails)";
  }
  TempDir dir("oci_builder_test");
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/hello.c",
                              "#include <stdio.h>\n"
                              "int main(int argc, char** argv) {\n"
                              "  printf(\"hello from %s, %d args\\n\", argv[0], argc);\n"
                              "  return 0;\n"
                              "}\n")
                  .ok());
  CommandResult compile = RunShell("gcc -static -O1 -o " + dir.path() + "/hello " + dir.path() + "/hello.c");
  ASSERT_EQ(compile.exit_code, 0) << compile.output;
  auto binary = ReadFile(dir.path() + "/hello");
  ASSERT_TRUE(binary.ok());

  // A per-process file makes the image (and so its ID) unique to this run, so
  // removing it cannot disturb a concurrent run of this test.
  const std::string nonce = std::to_string(::getpid()) + "-" + dir.path();
  const std::string ref = "igtest/oci-builder:" + std::to_string(::getpid());
  auto built = BuildOciArchive({{"/bin/hello", *binary, 0755}, {"/nonce", nonce, 0644}}, {"/bin/hello", "one"}, ref,
                               dir.path() + "/image.tar");
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const std::string id = DigestHex(built->config_digest);
  ImageCleanup cleanup(id);

  CommandResult load = RunShell("podman load -q -i " + built->archive_path);
  ASSERT_EQ(load.exit_code, 0) << load.output;
  // Podman's image ID is the config digest, and it named the image after ref_name.
  CommandResult inspect = RunShell("podman image inspect --format '{{.Id}}' localhost/" + ref);
  ASSERT_EQ(inspect.exit_code, 0) << inspect.output;
  EXPECT_EQ(inspect.output, id + "\n");

  CommandResult run = RunShell("podman run --rm --network none " + kPodmanUlimitFlags + " " + id + " two");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output, "hello from /bin/hello, 3 args\n");
}

}  // namespace
}  // namespace idlegrid::image
