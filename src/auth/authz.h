#pragma once
// Who may call what (issue 11): one table of (method, roles, scope, whose
// object) and one pure function that decides a call from it. Both front
// doors (gRPC and HTTP/JSON) are to ask it; tests/auth checks that every
// method of the API definition has a rule, so a new method cannot be served
// without one.
//
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace idlegrid::auth {

enum class Role { kOperator, kRequester, kProvider, kAgent };

// What a token may do, as bits (a token carries a set).
enum Scope : uint32_t {
  kNoScope = 0,
  kSubmit = 1u << 0,  // submit jobs, push images and artifacts
  kRead = 1u << 1,    // read jobs, logs, outputs, nodes, the market
  kCancel = 1u << 2,  // cancel jobs, decide on lost tasks
  kDrain = 1u << 3,   // drain and undrain nodes
};

// Whose object the call touches, and so what ownership check applies.
enum class Owner {
  kNone,      // no one's: the call makes a new object or reads public state
  kJob,       // a job: its account, or an operator
  kNode,      // a node: its provider, or an operator
  kAttempt,   // an attempt: only the node it is assigned to, under a live lease
  kSelf,      // the calling agent's own node record and stream
  kAccount,   // an account, or its tokens: itself, or an operator
  kImage,     // an image: the accounts that may use its archive (all, when public), or an operator
  kWorkflow,  // a workflow: its account, or an operator
};

struct Rule {
  std::string_view method;  // "/idlegrid.v1.RequesterService/SubmitJob"
  std::vector<Role> roles;  // who may call it at all
  uint32_t scope = kNoScope;
  Owner owner = Owner::kNone;
  // Rows of a listing a caller does not own are filtered out rather than the
  // call refused (ListJobs, ListNodes, WatchNodes).
  bool filters_listing = false;
};

// Every rule, one per method of the requester and agent services.
const std::vector<Rule>& Rules();
// The rule for a full method name; null if none (the call must be refused).
const Rule* RuleFor(std::string_view method);

struct Caller {
  Role role = Role::kRequester;
  uint32_t scopes = kNoScope;
  std::string account;   // requester's or provider's account
  std::string node_id;   // for agents
  std::string token_id;  // the API token it called with (rate limits)
};

// The object the call names, as the store knows it.
struct Target {
  bool exists = false;
  std::string account;      // the job's account, or the node's provider
  std::string node_id;      // the attempt's node (kAttempt), or the node (kNode)
  bool lease_live = false;  // kAttempt: the attempt still holds its lease
};

// Ok, or why not: PermissionDenied for a role or scope the method does not
// allow; NotFound, worded as for a missing object, for someone else's (no
// existence leak); FailedPrecondition for an attempt whose lease has ended.
Status Authorize(const Caller& caller, std::string_view method, const Target& target);
// The part that needs no object: the method has a rule, and the caller's role
// and scope pass it. Checked before any lookup.
Status AuthorizeMethod(const Caller& caller, std::string_view method);

}  // namespace idlegrid::auth
