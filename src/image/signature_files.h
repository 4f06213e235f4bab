#pragma once
// Image keys on disk (the formats are image/signature.h's): what the CLI,
// the coordinator and the agent read and write. Errors name the file.
#include <string>

#include "common/status.h"
#include "image/signature.h"

namespace idlegrid::image {

// Reads and parses a public-key file. NotFound if it cannot be read,
// InvalidArgument (naming the file) if it is not a public key.
Result<ImagePublicKey> LoadPublicKeyFile(const std::string& path);

// Reads and parses a secret-key file. PermissionDenied when group or others
// may access it (the message gives the chmod to run); otherwise as
// ImageSigningKey::Parse, or NotFound if it cannot be read.
Result<ImageSigningKey> LoadSigningKeyFile(const std::string& path);

// Writes <prefix>.key (mode 0600) and <prefix>.pub (0644), each created
// exclusively: AlreadyExists, naming the file, if either exists (then
// nothing is written, and a key file already there is never replaced).
// Internal for other I/O failures.
Status WriteKeyFiles(const ImageSigningKey& key, const std::string& prefix);

// Loads the secret key at `key_path`, or generates one named `name` and
// writes it there (0600) on first use; in both cases (re)writes its public
// key to `pub_path` (0644). For a key a service keeps for itself; callers
// serialise concurrent first uses (the coordinator holds its init lock).
Result<ImageSigningKey> LoadOrCreateSigningKey(const std::string& key_path, const std::string& pub_path,
                                               const std::string& name);

}  // namespace idlegrid::image
