#pragma once
// Signing images from the client (docs/containment.md, Signatures): `image keygen`,
// `image sign` and `image push --sign-key` share these.
#include <string>

#include "cli/client.h"
#include "common/status.h"
#include "image/signature.h"

namespace idlegrid::cli {

// Signs `image` ("[name@]sha256:<manifest digest>") with `key` and adds the
// signature to the coordinator, which verifies it first. Returns the record
// it stored; the coordinator's refusal as is (NotFound for an image this
// account may not use, InvalidArgument for a signature that does not verify).
Result<v1::ImageSignature> SignImage(Client& client, const std::string& image, const image::ImageSigningKey& key);

// "signed sha256:... with key 3f9a1c2b7d4e5f60 (owner)".
std::string DescribeSignature(const v1::ImageSignature& signature);

}  // namespace idlegrid::cli
