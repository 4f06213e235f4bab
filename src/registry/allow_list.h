#pragma once
// Who may pull from which OCI registry (docs/registries.md). Two parties must
// agree: the operator (coordinator flags --allow-registry,
// --allow-registry-tags), at submit, and each host's owner (policy.yaml
// allowedRegistries), on the node that would pull. Pure and thread-safe.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "manifest/image_ref.h"

namespace idlegrid::registry {

// The operator's settings.
struct OperatorRegistries {
  std::set<std::string> allowed;  // "HOST[:PORT]" as ParseRegistryHost returns them
  bool allow_tags = false;        // a tag is resolved to a digest at submit; otherwise refused
};

// Ok for an image pushed to the coordinator, and for a registry image the
// operator allows. FailedPrecondition when its registry is not allowed (the
// message names the registry and `--allow-registry`); InvalidArgument when
// it names a tag and no digest while tags are not allowed (the message says
// to pin a digest, or names `--allow-registry-tags`).
Status CheckOperatorAllows(const manifest::ImageRef& ref, const OperatorRegistries& settings);

// Ok for a pushed image, and for a registry image whose registry is in the
// owner's `allowed` list; FailedPrecondition naming the registry and the
// policy.yaml setting otherwise. An empty list allows no registry.
Status CheckOwnerAllows(const manifest::ImageRef& ref, const std::vector<std::string>& allowed);

// The registry allow-list of a flag or setting: each entry checked and
// folded by manifest::ParseRegistryHost. InvalidArgument naming `setting`
// and the bad entry.
Result<std::set<std::string>> ParseRegistryList(const std::vector<std::string>& entries, const std::string& setting);

// Per-registry CA files from repeatable "HOST[:PORT]=FILE" values (the
// --registry-ca flags of the coordinator and the agent). InvalidArgument for
// a value without "=", an empty file or a bad registry; a registry named
// twice keeps its last file. Whether the file exists is checked when used.
Result<std::map<std::string, std::string>> ParseRegistryCaFlags(const std::vector<std::string>& values);

}  // namespace idlegrid::registry
