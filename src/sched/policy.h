#pragma once
// Scheduling policies as configuration: which scorers rank feasible nodes and
// with what weights. Plain values; the coordinator loads them from its config
// file (format: docs/scheduling.md) and a job names one by `policy`.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace idlegrid::sched {

// Scorer names (see scorers.h for what each measures; every score is 0..1
// except fragmentation, which is minus the GPUs' worth of fragmentation the
// placement adds, typically -1..1).
inline constexpr char kScorePrice[] = "price";
inline constexpr char kScoreCache[] = "cache";
inline constexpr char kScoreReliability[] = "reliability";
inline constexpr char kScorePacking[] = "packing";
inline constexpr char kScoreEnergy[] = "energy";
inline constexpr char kScoreFragmentation[] = "fragmentation";

// The scorer names a policy may use, sorted.
const std::vector<std::string>& KnownScorers();

enum class Packing { kSpread, kPack };

struct WeightedScorer {
  std::string name;  // one of KnownScorers()
  double weight = 1;
};

struct SchedulingPolicy {
  std::string name;
  std::vector<WeightedScorer> scorers;  // summed: score = sum(weight x scorer)
  Packing packing = Packing::kSpread;   // the direction of the packing scorer
  // Rank by hourly price first (cheapest offer wins) and use the weighted sum
  // only to break ties. Tasks with a bid or a cost cap always rank this way.
  bool price_first = false;
};

using PolicyRegistry = std::map<std::string, SchedulingPolicy, std::less<>>;

inline constexpr char kDefaultPolicy[] = "balanced";

// The shipped policies: "balanced" (the default), "cheapest", "binpack",
// "spread". Never empty.
PolicyRegistry BuiltinPolicies();

struct PolicyConfig {
  PolicyRegistry policies = BuiltinPolicies();  // the built-ins, then the file's (which may replace them)
  std::string default_policy = kDefaultPolicy;
};

// Parses a policy file (YAML). Fails with InvalidArgument naming the line and
// the field ("policies.yaml:7: policies[1].scorers[0].weight: expected a
// number >= 0, got \"high\""); `filename` only labels messages. An empty
// document yields the built-ins.
Result<PolicyConfig> ParsePolicyConfig(std::string_view yaml, const std::string& filename = "policy");

// Why a task naming `name` cannot be placed under `config`:
// `unknown scheduling policy "x" (known: balanced, binpack, cheapest, spread)`.
std::string UnknownPolicy(std::string_view name, const PolicyConfig& config);

// "balanced: fragmentation x3 + reliability x1 + ...; spread".
std::string DescribePolicy(const SchedulingPolicy& policy);

}  // namespace idlegrid::sched
