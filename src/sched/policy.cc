#include "sched/policy.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "sched/data_policy.h"
#include "sched/yaml_file.h"

namespace idlegrid::sched {

const std::vector<std::string>& KnownScorers() {
  static const std::vector<std::string> kNames = {kScoreCache,   kScoreEnergy, kScoreFragmentation,
                                                  kScorePacking, kScorePrice,  kScoreReliability};
  return kNames;
}

PolicyRegistry BuiltinPolicies() {
  PolicyRegistry out;
  // Fragmentation first: keeps whole GPUs whole for the tasks that need them
  // (a packing term on top of it lowered the trace replay's saturation, see
  // docs/PERFORMANCE.md); reliability and cache locality next; price as a
  // mild preference.
  out["balanced"] = {
      "balanced",
      {{kScoreFragmentation, 4}, {kScoreReliability, 1}, {kScoreCache, 0.5}, {kScorePrice, 0.5}, {kScoreEnergy, 0.25}},
      Packing::kPack,
      false};
  out["cheapest"] = {
      "cheapest", {{kScoreFragmentation, 1}, {kScoreReliability, 1}, {kScoreCache, 0.5}}, Packing::kPack, true};
  out["binpack"] = {"binpack", {{kScorePacking, 1}}, Packing::kPack, false};
  out["spread"] = {"spread", {{kScorePacking, 1}, {kScoreReliability, 0.25}}, Packing::kSpread, false};
  return out;
}

std::string DescribePolicy(const SchedulingPolicy& policy) {
  std::string out = policy.name + ":";
  if (policy.price_first) out += " price first, then";
  const char* sep = " ";
  for (const auto& s : policy.scorers) {
    char w[32];
    std::snprintf(w, sizeof w, "%g", s.weight);
    out += sep + s.name + " x" + w;
    sep = " + ";
  }
  if (policy.scorers.empty()) out += " (no scorers)";
  out += policy.packing == Packing::kPack ? "; pack" : "; spread";
  return out;
}

namespace {

// Reads one policy file; every error names the line and the field's path.
class PolicyParser {
 public:
  explicit PolicyParser(std::string filename) : filename_(std::move(filename)) {}

  Result<PolicyConfig> Parse(std::string_view text) {
    return ParseYamlText(filename_, text, [this](const YAML::Node& root) { return ParseRoot(root); });
  }

 private:
  Status Error(const YAML::Mark& mark, const std::string& message) const { return YamlError(filename_, mark, message); }

  Result<PolicyConfig> ParseRoot(const YAML::Node& root) {
    PolicyConfig config;
    config.policies = BuiltinPolicies();
    if (root.IsNull()) return config;
    if (!root.IsMap()) return Error(root.Mark(), "expected a map with policies and defaultPolicy");
    for (const auto& entry : root) {
      const std::string key = entry.first.as<std::string>();
      if (key == "defaultPolicy") {
        if (!entry.second.IsScalar()) return Error(entry.second.Mark(), "defaultPolicy: expected a policy name");
        config.default_policy = entry.second.Scalar();
      } else if (key == "policies") {
        IG_RETURN_IF_ERROR(ParsePolicies(entry.second, &config.policies));
      } else if (std::find(DataPolicyKeys().begin(), DataPolicyKeys().end(), key) == DataPolicyKeys().end()) {
        // The data policy's keys are ParseDataPolicy's (data_policy.h).
        std::string known = "defaultPolicy, policies";
        for (const auto& k : DataPolicyKeys()) known += ", " + k;
        return Error(entry.first.Mark(), key + ": unknown field (known: " + known + ")");
      }
    }
    if (config.policies.find(config.default_policy) == config.policies.end()) {
      return Error(root["defaultPolicy"].Mark(), "defaultPolicy: no policy named \"" + config.default_policy + "\"");
    }
    return config;
  }

  Status ParsePolicies(const YAML::Node& list, PolicyRegistry* out) {
    if (!list.IsSequence()) return Error(list.Mark(), "policies: expected a list of policies");
    std::set<std::string> seen;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string path = "policies[" + std::to_string(i) + "]";
      SchedulingPolicy policy;
      IG_RETURN_IF_ERROR(ParsePolicy(list[i], path, &policy));
      if (!seen.insert(policy.name).second) {
        return Error(list[i].Mark(), path + ".name: duplicate policy \"" + policy.name + "\"");
      }
      (*out)[policy.name] = std::move(policy);
    }
    return Status::Ok();
  }

  Status ParsePolicy(const YAML::Node& node, const std::string& path, SchedulingPolicy* policy) {
    if (!node.IsMap()) return Error(node.Mark(), path + ": expected a map (name, scorers, packing, priceFirst)");
    for (const auto& entry : node) {
      const std::string key = entry.first.as<std::string>();
      const YAML::Node& value = entry.second;
      const std::string field = path + "." + key;
      if (key == "name") {
        if (!value.IsScalar() || value.Scalar().empty()) return Error(value.Mark(), field + ": expected a name");
        policy->name = value.Scalar();
      } else if (key == "packing") {
        if (value.IsScalar() && value.Scalar() == "spread") {
          policy->packing = Packing::kSpread;
        } else if (value.IsScalar() && value.Scalar() == "pack") {
          policy->packing = Packing::kPack;
        } else {
          return Error(value.Mark(), field + ": expected spread or pack");
        }
      } else if (key == "priceFirst") {
        bool b = false;
        if (!value.IsScalar() || !YAML::convert<bool>::decode(value, b)) {
          return Error(value.Mark(), field + ": expected true or false");
        }
        policy->price_first = b;
      } else if (key == "scorers") {
        IG_RETURN_IF_ERROR(ParseScorers(value, field, &policy->scorers));
      } else {
        return Error(entry.first.Mark(), field + ": unknown field (known: name, packing, priceFirst, scorers)");
      }
    }
    if (policy->name.empty()) return Error(node.Mark(), path + ".name: missing");
    return Status::Ok();
  }

  Status ParseScorers(const YAML::Node& list, const std::string& path, std::vector<WeightedScorer>* out) {
    if (!list.IsSequence()) return Error(list.Mark(), path + ": expected a list of {name, weight}");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string item = path + "[" + std::to_string(i) + "]";
      const YAML::Node& node = list[i];
      if (!node.IsMap()) return Error(node.Mark(), item + ": expected a map {name, weight}");
      WeightedScorer scorer;
      for (const auto& entry : node) {
        const std::string key = entry.first.as<std::string>();
        const YAML::Node& value = entry.second;
        if (key == "name") {
          const auto& known = KnownScorers();
          if (!value.IsScalar() || std::find(known.begin(), known.end(), value.Scalar()) == known.end()) {
            std::string names;
            for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
            return Error(value.Mark(), item + ".name: unknown scorer \"" + (value.IsScalar() ? value.Scalar() : "") +
                                           "\" (known: " + names + ")");
          }
          scorer.name = value.Scalar();
        } else if (key == "weight") {
          double w = 0;
          if (!value.IsScalar() || !YAML::convert<double>::decode(value, w) || !std::isfinite(w) || w < 0) {
            return Error(value.Mark(), item + ".weight: expected a number >= 0, got \"" +
                                           (value.IsScalar() ? value.Scalar() : "") + "\"");
          }
          scorer.weight = w;
        } else {
          return Error(entry.first.Mark(), item + "." + key + ": unknown field (known: name, weight)");
        }
      }
      if (scorer.name.empty()) return Error(node.Mark(), item + ".name: missing");
      out->push_back(std::move(scorer));
    }
    return Status::Ok();
  }

  const std::string filename_;
};

}  // namespace

Result<PolicyConfig> ParsePolicyConfig(std::string_view yaml, const std::string& filename) {
  return PolicyParser(filename).Parse(yaml);
}

std::string UnknownPolicy(std::string_view name, const PolicyConfig& config) {
  std::string known;
  for (const auto& [policy, unused] : config.policies) known += (known.empty() ? "" : ", ") + policy;
  return "unknown scheduling policy \"" + std::string(name) + "\" (known: " + known + ")";
}

}  // namespace idlegrid::sched
