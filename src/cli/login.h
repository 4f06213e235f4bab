#pragma once
// `idlegrid login URL --token T --ca-hash sha256:...` (docs/getting-started-researcher.md):
// pins the coordinator's CA as `agent join` does, checks the token, and
// writes the client config every other command reads.
#include <string>

namespace idlegrid::cli {

struct LoginOptions {
  std::string url;          // https://HOST:PORT of the coordinator's gRPC API
  std::string token;        // igt_... (idlegrid token create)
  std::string ca_hash;      // sha256:... of the coordinator's CA (DATA_DIR/login.txt)
  std::string config_file;  // where to write; "" : IDLEGRID_CONFIG, else ~/.config/idlegrid/config.yaml
  bool force = false;       // replace a config that exists
};

// Returns the exit code: 0 logged in, 2 bad input, 1 a refusal or failure.
// Nothing is written unless the CA matches its hash and the token is accepted.
int Login(const LoginOptions& options);

}  // namespace idlegrid::cli
