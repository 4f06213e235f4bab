#pragma once
// The part of an OCI image config (the verified config blob) that decides how
// a container starts. Pure parsing; no I/O.
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace idlegrid::image {

struct ImageConfig {
  std::vector<std::string> entrypoint;  // config.Entrypoint
  std::vector<std::string> cmd;         // config.Cmd
  std::vector<std::string> env;         // config.Env, "NAME=value" each
  std::string working_dir;              // config.WorkingDir; "" means "/"
  std::string user;                     // config.User; "" means root
};

// Parses an OCI image config JSON document ({"config": {"Entrypoint": ...}}).
// Absent fields (or an absent "config") are empty. InvalidArgument when the
// text is not a JSON object or a field has the wrong type (the message names
// the field).
Result<ImageConfig> ParseImageConfig(std::string_view config_json);

}  // namespace idlegrid::image
