#pragma once
// Data classes: which nodes may hold a job's data. A job names a class (public,
// private, regulated); the coordinator's data policy maps each class to a rule
// -- the lowest trust tier, the regions and the lowest reliability allowed, and
// whether the job may share a GPU -- and gives each node its trust tier. Plain
// values and pure functions: the coordinator loads the policy from its policy
// file (docs/scheduling.md, "Data classes"), resolves each job's class into the
// DataClassRule its TaskView carries, and the scheduler's `data-class` stage
// checks nodes against it.
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace idlegrid::sched {

inline constexpr char kDataPublic[] = "public";
inline constexpr char kDataPrivate[] = "private";
inline constexpr char kDataRegulated[] = "regulated";

// The classes a job may name, least sensitive first.
const std::vector<std::string>& KnownDataClasses();
bool IsKnownDataClass(std::string_view name);

// What one data class asks of a node. The default asks nothing: a task whose
// rule has no name (a readiness benchmark) passes the `data-class` stage.
struct DataClassRule {
  std::string name;               // "regulated"; "": no data class applies
  int min_trust_tier = 0;         // the node's tier (NodeTrustTier) must be at least this
  std::set<std::string> regions;  // allowed node regions; empty: any
  double min_reliability = 0;     // the node's reliability score must be at least this; 0: any
  bool exclusive_gpu = false;     // never shares a GPU with another tenant
};

using DataClassRules = std::map<std::string, DataClassRule, std::less<>>;

// public: any node. private: measured nodes (tier >= 1), a GPU of its own.
// regulated: tier >= 2, which only operator-assigned nodes reach, a GPU of
// its own. One entry per KnownDataClasses().
DataClassRules BuiltinDataClasses();

struct DataPolicy {
  DataClassRules classes = BuiltinDataClasses();  // every known class has a rule
  std::string default_class = kDataPublic;        // the class of a job that names none
  // Operator-assigned trust tiers (2 and up) by node id.
  std::map<std::string, int, std::less<>> trusted_nodes;
};

// The rule for a job naming `data_class` ("": the policy's default class).
// A class the policy has no rule for (ValidateJobSpec admits none) gets the
// strictest built-in rule, regulated's, under its own name: fail closed.
DataClassRule RuleFor(const DataPolicy& policy, std::string_view data_class);

// What a node's trust tier rests on.
struct TrustEvidence {
  bool measured = false;        // its readiness benchmark passed
  bool simulated_gpus = false;  // it advertises simulated GPUs
  int assigned_tier = 0;        // the operator's (DataPolicy::trusted_nodes); 0: none
};

// 0 unverified; 1 measured (benchmark passed, no simulated GPUs); the
// operator's tier (2+) only on top of 1 -- an assignment never vouches for a
// node the coordinator has not measured.
int NodeTrustTier(const TrustEvidence& evidence);

// The tier `policy` assigns to `node_id`; 0 when it assigns none.
int AssignedTier(const DataPolicy& policy, std::string_view node_id);

// "data class private: trust tier >= 1, any region, exclusive GPU", for
// `status --explain`; "" for a rule without a name.
std::string DescribeDataClass(const DataClassRule& rule);

// Reads the data-policy keys of a policy file -- dataClasses,
// defaultDataClass, trustedNodes -- and ignores the others (ParsePolicyConfig
// reads those). A class the file names replaces that class's built-in rule
// entirely; the classes it does not name keep theirs. Fails with
// InvalidArgument naming the file, the line and the field
// ("policy.yaml:4: dataClasses.regulated.minReliability: expected a number
// from 0 to 1, got \"high\""). An empty document yields the built-ins.
Result<DataPolicy> ParseDataPolicy(std::string_view yaml, const std::string& filename = "policy");

// The top-level keys ParseDataPolicy reads, for ParsePolicyConfig to accept.
const std::vector<std::string>& DataPolicyKeys();

}  // namespace idlegrid::sched
