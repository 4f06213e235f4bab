#include "registry/allow_list.h"

#include <algorithm>

namespace idlegrid::registry {

Status CheckOperatorAllows(const manifest::ImageRef& ref, const OperatorRegistries& settings) {
  if (!ref.from_registry()) return Status::Ok();
  if (settings.allowed.count(ref.registry) == 0) {
    return Status::FailedPrecondition("registry " + ref.registry + " (image " + ref.Named() +
                                      ") is not on this coordinator's allow-list of registries; the operator "
                                      "allows it with `idlegrid coordinator --allow-registry " +
                                      ref.registry + "`");
  }
  if (ref.digest.empty() && !settings.allow_tags) {
    return Status::InvalidArgument("image \"" + ref.Named() +
                                   "\" names a tag, and this coordinator runs registry images by digest only: "
                                   "name it as " +
                                   ref.registry + "/" + ref.repository +
                                   "@sha256:<64 hex>, or the operator lets tags be resolved at submit with "
                                   "`idlegrid coordinator --allow-registry-tags`");
  }
  return Status::Ok();
}

Status CheckOwnerAllows(const manifest::ImageRef& ref, const std::vector<std::string>& allowed) {
  if (!ref.from_registry()) return Status::Ok();
  if (std::find(allowed.begin(), allowed.end(), ref.registry) != allowed.end()) return Status::Ok();
  return Status::FailedPrecondition("registry " + ref.registry +
                                    " is not in this node's allowedRegistries; the owner allows it in the agent's "
                                    "policy.yaml with `allowedRegistries: [" +
                                    ref.registry + "]`");
}

Result<std::set<std::string>> ParseRegistryList(const std::vector<std::string>& entries, const std::string& setting) {
  std::set<std::string> out;
  for (const std::string& entry : entries) {
    Result<std::string> host = manifest::ParseRegistryHost(entry);
    if (!host.ok()) return host.status().WithContext(setting);
    out.insert(*host);
  }
  return out;
}

Result<std::map<std::string, std::string>> ParseRegistryCaFlags(const std::vector<std::string>& values) {
  std::map<std::string, std::string> out;
  for (const std::string& value : values) {
    const size_t eq = value.find('=');
    if (eq == std::string::npos || eq + 1 == value.size()) {
      return Status::InvalidArgument("--registry-ca: expected HOST[:PORT]=CA_FILE, got \"" + value + "\"");
    }
    Result<std::string> host = manifest::ParseRegistryHost(value.substr(0, eq));
    if (!host.ok()) return host.status().WithContext("--registry-ca");
    out[*host] = value.substr(eq + 1);
  }
  return out;
}

}  // namespace idlegrid::registry
