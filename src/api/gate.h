#pragma once
// Every requester call passes here first, from both front doors (gRPC and
// HTTP/JSON): who is calling (the bearer token), and may they make this call
// on the object it names (auth::Authorize over the object's owner as the
// store knows it). One place, so the two doors cannot disagree.
#include <functional>
#include <string>
#include <string_view>

#include "auth/authz.h"
#include "coordinator/coordinator.h"

namespace idlegrid::api {

// The object a call names: what to call it in a refusal ("job j-1"), and how
// to look up its owner once the caller is known.
struct TargetOf {
  std::string what;
  std::function<Result<auth::Target>(const auth::Caller&)> lookup;
};

class Gate {
 public:
  explicit Gate(coordinator::Coordinator* c) : c_(c) {}

  // The caller, or why not: Unauthenticated (token), PermissionDenied (role,
  // scope), NotFound (someone else's object, or none). `method` is the full
  // gRPC name ("/idlegrid.v1.RequesterService/GetJob"); HTTP routes name
  // the method they serve.
  // `peer` is the caller's address without its port. A peer that sent too
  // many bad tokens, or a token over its rate, is answered ResourceExhausted
  // before any lookup.
  Result<auth::Caller> Admit(std::string_view method, const std::string& bearer, const TargetOf& target,
                             std::string_view peer = "");

  // Admit's second half, for a call that names more objects than its first
  // (an image's layers): may the admitted `caller` make `method` on `target`.
  Status Check(const auth::Caller& caller, std::string_view method, const TargetOf& target);

  // Targets of the ownership rules.
  static TargetOf None();
  TargetOf Job(std::string job_id);
  TargetOf Workflow(std::string workflow_id);
  TargetOf Node(std::string node_id);
  // An account by name ("": the caller's own).
  TargetOf Account(std::string name);
  // The account a token id belongs to.
  TargetOf Token(std::string token_id);
  // An artifact: visible to the accounts holding it, or to all if public.
  TargetOf Artifact(std::string digest);
  // An image by manifest digest ("[name@]sha256:..."): as its archive.
  TargetOf Image(std::string image);

 private:
  coordinator::Coordinator* c_;
};

// The caller's host from gRPC's peer ("ipv4:1.2.3.4:5678", "ipv6:[::1]:5678")
// or an HTTP remote address: the port changes with every connection.
std::string PeerHost(std::string_view peer);

// "/idlegrid.v1.RequesterService/<name>".
std::string RequesterMethod(std::string_view name);

}  // namespace idlegrid::api
