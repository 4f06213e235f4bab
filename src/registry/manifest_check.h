#pragma once
// Whether what a registry serves for a reference is an image idlegrid can
// run: a single-platform OCI image manifest, whose bytes (and so digest)
// survive the copy into the OCI archive an agent verifies and loads. Pure.
#include <string>

#include "common/status.h"

namespace idlegrid::registry {

// The config digest (the image id) of `manifest_json`, served for
// `reference`. FailedPrecondition for an image index or Docker manifest
// list, and for a Docker schema 1 or 2 manifest, the message saying what to
// name instead; InvalidArgument for a malformed manifest.
Result<std::string> RunnableManifestConfig(const std::string& manifest_json, const std::string& reference);

}  // namespace idlegrid::registry
