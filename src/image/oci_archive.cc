#include "image/oci_archive.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <set>
#include <vector>

#include "common/digest.h"
#include "image/tar_reader.h"

namespace idlegrid::image {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

constexpr uint64_t kMaxJsonSize = 4 * 1024 * 1024;
constexpr char kManifestMediaType[] = "application/vnd.oci.image.manifest.v1+json";
constexpr char kIndexMediaType[] = "application/vnd.oci.image.index.v1+json";
constexpr char kRefNameAnnotation[] = "org.opencontainers.image.ref.name";
// Integers above 2^53 do not survive the JSON parser's doubles exactly.
constexpr double kMaxExactSize = 9007199254740992.0;

struct Descriptor {
  std::string media_type;
  std::string digest;
  uint64_t size = 0;
  std::string ref_name;
};

Result<Struct> ParseJsonObject(const std::string& text, const std::string& what) {
  Struct object;
  auto status = google::protobuf::util::JsonStringToMessage(text, &object);
  if (!status.ok()) {
    return Status::InvalidArgument(what + " is not a JSON object: " + status.ToString());
  }
  return object;
}

const Value* Field(const Struct& object, const std::string& key) {
  auto it = object.fields().find(key);
  return it == object.fields().end() ? nullptr : &it->second;
}

std::string StringField(const Struct& object, const std::string& key) {
  const Value* value = Field(object, key);
  return value && value->has_string_value() ? value->string_value() : "";
}

Result<Descriptor> ParseDescriptor(const Value& value, const std::string& where) {
  if (!value.has_struct_value()) return Status::InvalidArgument(where + " is not an object");
  const Struct& object = value.struct_value();
  Descriptor descriptor;
  descriptor.media_type = StringField(object, "mediaType");
  descriptor.digest = StringField(object, "digest");
  if (!IsValidDigest(descriptor.digest)) {
    return Status::InvalidArgument(where + " has digest \"" + descriptor.digest +
                                   "\"; only sha256:<64 lowercase hex> is supported");
  }
  const Value* size = Field(object, "size");
  if (!size || !size->has_number_value() || size->number_value() < 0 || size->number_value() > kMaxExactSize ||
      std::floor(size->number_value()) != size->number_value()) {
    return Status::InvalidArgument(where + " has no valid size");
  }
  descriptor.size = static_cast<uint64_t>(size->number_value());
  const Value* annotations = Field(object, "annotations");
  if (annotations && annotations->has_struct_value()) {
    descriptor.ref_name = StringField(annotations->struct_value(), kRefNameAnnotation);
  }
  return descriptor;
}

std::string BlobPath(const std::string& digest) { return "blobs/sha256/" + DigestHex(digest); }

// Finds the blob for `descriptor` and checks its size; `what` names it in
// errors ("layer 2", "config").
Result<const TarMember*> FindBlob(const TarReader& tar, const Descriptor& descriptor, const std::string& what) {
  const TarMember* member = tar.Find(BlobPath(descriptor.digest));
  if (!member) {
    return Status::NotFound(what + " blob " + descriptor.digest + " is missing from the archive");
  }
  if (member->size != descriptor.size) {
    return Status::DataLoss(what + " blob " + descriptor.digest + " is " + std::to_string(member->size) +
                            " bytes; its descriptor says " + std::to_string(descriptor.size));
  }
  return member;
}

Status DigestMismatch(const std::string& what, const std::string& expected, const std::string& actual) {
  return Status::DataLoss(what + " blob is corrupt: expected " + expected + ", content hashes to " + actual);
}

Status VerifyBlob(const TarReader& tar, const Descriptor& descriptor, const std::string& what) {
  IG_ASSIGN_OR_RETURN(const TarMember* member, FindBlob(tar, descriptor, what));
  Sha256 hasher;
  IG_RETURN_IF_ERROR(tar.ReadChunks(*member, [&hasher](std::string_view chunk) {
    hasher.Update(chunk);
    return Status::Ok();
  }));
  std::string actual = hasher.Finish();
  if (actual != descriptor.digest) return DigestMismatch(what, descriptor.digest, actual);
  return Status::Ok();
}

// Reads a small JSON file of the layout; InvalidArgument if absent.
Result<Struct> ReadLayoutJson(const TarReader& tar, const std::string& name) {
  const TarMember* member = tar.Find(name);
  if (!member) {
    return Status::InvalidArgument("not an OCI image layout: the archive has no " + name);
  }
  IG_ASSIGN_OR_RETURN(std::string text, tar.ReadAll(*member, kMaxJsonSize));
  return ParseJsonObject(text, name);
}

Result<std::vector<Descriptor>> ReadIndex(const TarReader& tar) {
  IG_ASSIGN_OR_RETURN(Struct layout, ReadLayoutJson(tar, "oci-layout"));
  if (StringField(layout, "imageLayoutVersion").empty()) {
    return Status::InvalidArgument("oci-layout has no imageLayoutVersion");
  }
  IG_ASSIGN_OR_RETURN(Struct index, ReadLayoutJson(tar, "index.json"));
  const Value* manifests = Field(index, "manifests");
  if (!manifests || !manifests->has_list_value()) {
    return Status::InvalidArgument("index.json has no manifests list");
  }
  std::vector<Descriptor> descriptors;
  for (int i = 0; i < manifests->list_value().values_size(); ++i) {
    IG_ASSIGN_OR_RETURN(Descriptor d, ParseDescriptor(manifests->list_value().values(i),
                                                      "index.json manifests[" + std::to_string(i) + "]"));
    descriptors.push_back(std::move(d));
  }
  return descriptors;
}

Result<Descriptor> ChooseManifest(const std::vector<Descriptor>& listed, const std::string& expected) {
  std::set<std::string> digests;
  std::string all;
  for (const Descriptor& d : listed) {
    if (digests.insert(d.digest).second) all += (all.empty() ? "" : ", ") + d.digest;
  }
  if (!expected.empty()) {
    for (const Descriptor& d : listed) {
      if (d.digest == expected) return d;
    }
    return Status::NotFound("manifest " + expected +
                            " is not listed in index.json (it lists: " + (all.empty() ? "nothing" : all) + ")");
  }
  if (digests.empty()) return Status::InvalidArgument("index.json lists no manifests");
  if (digests.size() > 1) {
    return Status::InvalidArgument("index.json lists " + std::to_string(digests.size()) + " manifests (" + all +
                                   "); say which one to use");
  }
  return listed.front();
}

struct Manifest {
  Descriptor config;
  std::vector<Descriptor> layers;
};

// The manifest's structure from its bytes; `what` names it in errors.
Result<Manifest> ParseManifest(const std::string& text, const std::string& what) {
  IG_ASSIGN_OR_RETURN(Struct object, ParseJsonObject(text, what));
  const Value* schema = Field(object, "schemaVersion");
  if (!schema || !schema->has_number_value() || schema->number_value() != 2) {
    return Status::InvalidArgument(what + " does not have schemaVersion 2");
  }
  std::string media_type = StringField(object, "mediaType");
  if (!media_type.empty() && media_type != kManifestMediaType) {
    return Status::InvalidArgument(what + " has unsupported mediaType " + media_type);
  }
  const Value* config = Field(object, "config");
  if (!config) return Status::InvalidArgument(what + " has no config");
  Manifest manifest;
  IG_ASSIGN_OR_RETURN(manifest.config, ParseDescriptor(*config, what + " config"));
  const Value* layers = Field(object, "layers");
  if (!layers || !layers->has_list_value()) {
    return Status::InvalidArgument(what + " has no layers list");
  }
  for (int i = 0; i < layers->list_value().values_size(); ++i) {
    IG_ASSIGN_OR_RETURN(Descriptor layer,
                        ParseDescriptor(layers->list_value().values(i), what + " layers[" + std::to_string(i) + "]"));
    manifest.layers.push_back(std::move(layer));
  }
  return manifest;
}

Result<Manifest> ReadManifest(const TarReader& tar, const Descriptor& descriptor) {
  if (descriptor.media_type == kIndexMediaType) {
    return Status::InvalidArgument("manifest " + descriptor.digest +
                                   " is a nested image index; only single-platform images are "
                                   "supported");
  }
  IG_ASSIGN_OR_RETURN(const TarMember* member, FindBlob(tar, descriptor, "manifest"));
  IG_ASSIGN_OR_RETURN(std::string text, tar.ReadAll(*member, kMaxJsonSize));
  std::string actual = Sha256Digest(text);
  if (actual != descriptor.digest) return DigestMismatch("manifest", descriptor.digest, actual);
  return ParseManifest(text, "manifest " + descriptor.digest);
}

}  // namespace

Result<std::string> OciManifestConfigDigest(const std::string& manifest_json, const std::string& what) {
  if (manifest_json.size() > kMaxJsonSize) return Status::InvalidArgument(what + " is larger than 4 MiB");
  IG_ASSIGN_OR_RETURN(Manifest manifest, ParseManifest(manifest_json, what));
  return manifest.config.digest;
}

namespace {
OciBlobRef RefOf(const Descriptor& d) { return OciBlobRef{d.media_type, d.digest, d.size}; }
}  // namespace

Result<OciManifestBlobs> ParseOciManifestBlobs(const std::string& manifest_json, const std::string& what) {
  if (manifest_json.size() > kMaxJsonSize) return Status::InvalidArgument(what + " is larger than 4 MiB");
  IG_ASSIGN_OR_RETURN(Manifest manifest, ParseManifest(manifest_json, what));
  OciManifestBlobs out;
  out.config = RefOf(manifest.config);
  std::set<std::string> seen;
  for (const Descriptor& layer : manifest.layers) {
    if (seen.insert(layer.digest).second) out.layers.push_back(RefOf(layer));
  }
  return out;
}

Result<OciArchiveBlobs> LocateOciArchiveBlobs(const std::string& path, const std::string& expected_manifest_digest) {
  IG_ASSIGN_OR_RETURN(OciImageInfo info, InspectOciArchive(path, expected_manifest_digest));
  IG_ASSIGN_OR_RETURN(TarReader tar, TarReader::Open(path));
  const TarMember* manifest_member = tar.Find(BlobPath(info.manifest_digest));
  if (!manifest_member) return Status::NotFound("manifest blob vanished from " + path);
  IG_ASSIGN_OR_RETURN(std::string text, tar.ReadAll(*manifest_member, kMaxJsonSize));
  IG_ASSIGN_OR_RETURN(OciManifestBlobs parsed, ParseOciManifestBlobs(text, "manifest " + info.manifest_digest));
  OciArchiveBlobs out;
  out.info = info;
  out.blobs.push_back({{kManifestMediaType, info.manifest_digest, manifest_member->size}, manifest_member->offset});
  std::vector<OciBlobRef> refs{parsed.config};
  refs.insert(refs.end(), parsed.layers.begin(), parsed.layers.end());
  std::set<std::string> seen{info.manifest_digest};
  for (const OciBlobRef& ref : refs) {
    if (!seen.insert(ref.digest).second) continue;  // a layer that is also the config: once
    const TarMember* member = tar.Find(BlobPath(ref.digest));
    if (!member) return Status::NotFound("blob " + ref.digest + " vanished from " + path);
    out.blobs.push_back({ref, member->offset});
  }
  return out;
}

Result<OciImageInfo> InspectOciArchive(const std::string& path, const std::string& expected_manifest_digest) {
  if (!expected_manifest_digest.empty() && !IsValidDigest(expected_manifest_digest)) {
    return Status::InvalidArgument("expected manifest digest \"" + expected_manifest_digest +
                                   "\" is not of the form sha256:<64 lowercase hex>");
  }
  IG_ASSIGN_OR_RETURN(TarReader tar, TarReader::Open(path));
  auto inspect = [&]() -> Result<OciImageInfo> {
    IG_ASSIGN_OR_RETURN(std::vector<Descriptor> listed, ReadIndex(tar));
    IG_ASSIGN_OR_RETURN(Descriptor chosen, ChooseManifest(listed, expected_manifest_digest));
    IG_ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(tar, chosen));
    IG_RETURN_IF_ERROR(VerifyBlob(tar, manifest.config, "config"));
    std::set<std::string> verified;  // Images may repeat a layer (e.g. empty ones).
    for (size_t i = 0; i < manifest.layers.size(); ++i) {
      const Descriptor& layer = manifest.layers[i];
      if (!verified.insert(layer.digest).second) continue;
      IG_RETURN_IF_ERROR(VerifyBlob(tar, layer, "layer " + std::to_string(i)));
    }
    return OciImageInfo{chosen.digest, manifest.config.digest, chosen.ref_name};
  };
  auto info = inspect();
  if (!info.ok()) return info.status().WithContext(path);
  return info;
}

}  // namespace idlegrid::image
