#include "sched/data_policy.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "sched/snapshot.h"
#include "sched/yaml_file.h"

namespace idlegrid::sched {

const std::vector<std::string>& KnownDataClasses() {
  static const std::vector<std::string> kNames = {kDataPublic, kDataPrivate, kDataRegulated};
  return kNames;
}

bool IsKnownDataClass(std::string_view name) {
  const auto& known = KnownDataClasses();
  return std::find(known.begin(), known.end(), name) != known.end();
}

DataClassRules BuiltinDataClasses() {
  DataClassRules out;
  out[kDataPublic] = {kDataPublic, kTrustUnverified, {}, 0, false};
  // A GPU of its own: co-tenants on one device share memory bandwidth and
  // caches, a side channel a provider-run neighbour could read.
  out[kDataPrivate] = {kDataPrivate, kTrustMeasured, {}, 0, true};
  out[kDataRegulated] = {kDataRegulated, kTrustOwnerVerified, {}, 0, true};
  return out;
}

DataClassRule RuleFor(const DataPolicy& policy, std::string_view data_class) {
  const std::string_view name = data_class.empty() ? std::string_view(policy.default_class) : data_class;
  if (auto it = policy.classes.find(name); it != policy.classes.end()) return it->second;
  DataClassRule strictest = BuiltinDataClasses().at(kDataRegulated);
  strictest.name = std::string(name);
  return strictest;
}

int NodeTrustTier(const TrustEvidence& evidence) {
  if (!evidence.measured || evidence.simulated_gpus) return kTrustUnverified;
  return std::max(kTrustMeasured, evidence.assigned_tier);
}

int AssignedTier(const DataPolicy& policy, std::string_view node_id) {
  auto it = policy.trusted_nodes.find(node_id);
  return it == policy.trusted_nodes.end() ? 0 : it->second;
}

std::string DescribeDataClass(const DataClassRule& rule) {
  if (rule.name.empty()) return "";
  std::string out = "data class " + rule.name + ": ";
  out += rule.min_trust_tier > 0 ? "trust tier >= " + std::to_string(rule.min_trust_tier) : "any trust tier";
  if (rule.regions.empty()) {
    out += ", any region";
  } else {
    std::string list;
    for (const auto& r : rule.regions) list += (list.empty() ? "" : "|") + r;
    out += ", regions " + list;
  }
  if (rule.min_reliability > 0) {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, rule.min_reliability);
    out += ", reliability >= " + std::string(buf, ec == std::errc() ? end : buf);
  }
  if (rule.exclusive_gpu) out += ", exclusive GPU";
  return out;
}

const std::vector<std::string>& DataPolicyKeys() {
  static const std::vector<std::string> kKeys = {"dataClasses", "defaultDataClass", "trustedNodes"};
  return kKeys;
}

namespace {

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Reads the data-policy part of one policy file; every error names the line
// and the field's path.
class DataPolicyParser {
 public:
  explicit DataPolicyParser(std::string filename) : filename_(std::move(filename)) {}

  Result<DataPolicy> Parse(std::string_view text) {
    return ParseYamlText(filename_, text, [this](const YAML::Node& root) { return ParseRoot(root); });
  }

 private:
  Status Error(const YAML::Mark& mark, const std::string& message) const { return YamlError(filename_, mark, message); }

  static std::string ScalarOf(const YAML::Node& node) { return node.IsScalar() ? node.Scalar() : ""; }

  Result<DataPolicy> ParseRoot(const YAML::Node& root) {
    DataPolicy policy;
    // The rest of the file (and whether the root is a map) is ParsePolicyConfig's to judge.
    if (!root.IsMap()) return policy;
    for (const auto& entry : root) {
      const std::string key = entry.first.as<std::string>();
      const YAML::Node& value = entry.second;
      if (key == "dataClasses") {
        IG_RETURN_IF_ERROR(ParseClasses(value, &policy.classes));
      } else if (key == "defaultDataClass") {
        if (!value.IsScalar() || !IsKnownDataClass(value.Scalar())) {
          return Error(value.Mark(), "defaultDataClass: unknown data class \"" + ScalarOf(value) +
                                         "\" (known: " + Join(KnownDataClasses()) + ")");
        }
        policy.default_class = value.Scalar();
      } else if (key == "trustedNodes") {
        IG_RETURN_IF_ERROR(ParseTrustedNodes(value, &policy.trusted_nodes));
      }
    }
    return policy;
  }

  Status ParseClasses(const YAML::Node& map, DataClassRules* out) {
    if (!map.IsMap()) return Error(map.Mark(), "dataClasses: expected a map from data class to its rule");
    for (const auto& entry : map) {
      const std::string name = entry.first.as<std::string>();
      const std::string path = "dataClasses." + name;
      if (!IsKnownDataClass(name)) {
        return Error(entry.first.Mark(), path + ": unknown data class (known: " + Join(KnownDataClasses()) + ")");
      }
      DataClassRule rule;
      rule.name = name;
      IG_RETURN_IF_ERROR(ParseRule(entry.second, path, &rule));
      (*out)[name] = std::move(rule);
    }
    return Status::Ok();
  }

  Status ParseRule(const YAML::Node& node, const std::string& path, DataClassRule* rule) {
    // A bare `private:` would silently ask nothing of a sensitive class: `{}` says so on purpose.
    if (!node.IsMap()) {
      return Error(node.Mark(),
                   path + ": expected a map (minTrustTier, regions, minReliability, exclusiveGpu; {} for none)");
    }
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>();
      const YAML::Node& value = entry.second;
      const std::string field = path + "." + key;
      if (key == "minTrustTier") {
        int tier = 0;
        if (!value.IsScalar() || !YAML::convert<int>::decode(value, tier) || tier < 0) {
          return Error(value.Mark(),
                       field + ": expected a trust tier (an integer >= 0), got \"" + ScalarOf(value) + "\"");
        }
        rule->min_trust_tier = tier;
      } else if (key == "regions") {
        if (!value.IsSequence()) return Error(value.Mark(), field + ": expected a list of regions");
        for (const auto& region : value) {
          if (!region.IsScalar() || region.Scalar().empty()) {
            return Error(region.Mark(), field + ": expected a region name");
          }
          rule->regions.insert(region.Scalar());
        }
      } else if (key == "minReliability") {
        double r = 0;
        if (!value.IsScalar() || !YAML::convert<double>::decode(value, r) || !std::isfinite(r) || r < 0 || r > 1) {
          return Error(value.Mark(), field + ": expected a number from 0 to 1, got \"" + ScalarOf(value) + "\"");
        }
        rule->min_reliability = r;
      } else if (key == "exclusiveGpu") {
        bool b = false;
        if (!value.IsScalar() || !YAML::convert<bool>::decode(value, b)) {
          return Error(value.Mark(), field + ": expected true or false");
        }
        rule->exclusive_gpu = b;
      } else {
        return Error(entry.first.Mark(),
                     field + ": unknown field (known: minTrustTier, regions, minReliability, exclusiveGpu)");
      }
    }
    return Status::Ok();
  }

  Status ParseTrustedNodes(const YAML::Node& map, std::map<std::string, int, std::less<>>* out) {
    if (map.IsNull()) return Status::Ok();
    if (!map.IsMap()) return Error(map.Mark(), "trustedNodes: expected a map from node id to trust tier");
    for (const auto& entry : map) {
      const std::string id = entry.first.as<std::string>();
      const std::string field = "trustedNodes." + id;
      int tier = 0;
      // Tiers 0 and 1 are what the coordinator measures; an operator only adds on top.
      if (!entry.second.IsScalar() || !YAML::convert<int>::decode(entry.second, tier) || tier < kTrustOwnerVerified) {
        return Error(entry.second.Mark(), field + ": expected a trust tier >= " + std::to_string(kTrustOwnerVerified) +
                                              " (0 and 1 are measured, not assigned), got \"" + ScalarOf(entry.second) +
                                              "\"");
      }
      if (!out->emplace(id, tier).second) return Error(entry.first.Mark(), field + ": listed twice");
    }
    return Status::Ok();
  }

  const std::string filename_;
};

}  // namespace

Result<DataPolicy> ParseDataPolicy(std::string_view yaml, const std::string& filename) {
  return DataPolicyParser(filename).Parse(yaml);
}

}  // namespace idlegrid::sched
