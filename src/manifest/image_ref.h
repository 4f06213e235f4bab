#pragma once
// Image references: what a job's `image:` names. Pure and thread-safe.
//
//   sha256:<64 hex>                        an image pushed to the coordinator
//   NAME@sha256:<64 hex>                   the same; NAME is only a label
//   HOST[:PORT]/REPO@sha256:<64 hex>       an image in an OCI registry, by digest
//   HOST[:PORT]/REPO:TAG                   the same by tag: resolved to a digest at
//                                          submit, where the operator allows tags
//   HOST[:PORT]/REPO:TAG@sha256:<64 hex>   by digest; the tag is only a label
//
// The first path component names a registry host when it contains a "." or
// a ":" (registry.example.org, 127.0.0.1:5000, localhost:5000, [::1]:5000),
// as in Docker's rule, except that a bare "localhost" does not: podman names
// its local builds localhost/NAME, and such a name stays a pushed image's
// label as it always was.
#include <string>
#include <string_view>

#include "common/status.h"

namespace idlegrid::manifest {

struct ImageRef {
  std::string registry;    // "HOST[:PORT]"; "" for an image pushed to the coordinator
  std::string repository;  // registry images: "team/sim"
  std::string tag;         // registry images: "v1", or ""
  std::string digest;      // "sha256:<64 hex>", or "" for a tag not resolved yet
  std::string label;       // pushed images: the NAME before "@", or ""

  bool from_registry() const { return !registry.empty(); }
  // "HOST/REPO@sha256:<hex>" for a registry image with a digest: the form a
  // job stores and an agent pulls (no tag: a tag is resolved once, at submit).
  std::string Pinned() const { return registry + "/" + repository + "@" + digest; }
  // "HOST/REPO:TAG" or "HOST/REPO" (no digest), for messages.
  std::string Named() const { return registry + "/" + repository + (tag.empty() ? "" : ":" + tag); }
};

// Parses `image` as above. InvalidArgument whose message says what is wrong
// and quotes the value (at most 80 bytes of it), e.g. "\"sim:latest\" is not
// pinned by digest; ...". Lowercase only, as before registries: a host or
// repository with capitals is refused, not folded.
Result<ImageRef> ParseImageRef(std::string_view image);

// Checks a registry named in an allow-list or a CA setting: "HOST[:PORT]"
// with the grammar of a reference's host, folded to lowercase (host names
// are case-insensitive; references are lowercase). InvalidArgument otherwise.
Result<std::string> ParseRegistryHost(std::string_view host);

}  // namespace idlegrid::manifest
