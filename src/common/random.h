#pragma once
// Identifiers and secrets from libsodium's CSPRNG.
#include <string>

namespace idlegrid {

// Hex string of `bytes` random bytes. Aborts if libsodium cannot initialise.
std::string RandomHex(size_t bytes);
// Short readable id with a prefix, e.g. "j-3f9a1c2b7d4e".
std::string NewId(const std::string& prefix);

}  // namespace idlegrid
