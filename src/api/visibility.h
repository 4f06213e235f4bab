#pragma once
// Which rows of a listing a caller sees (auth::Rule::filters_listing): an
// operator sees every row, anyone else only their own. Shared by both front
// doors.
#include <string>

#include "auth/authz.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::api {

// The account a job listing is narrowed to ("": all).
inline std::string ListingAccount(const auth::Caller& caller) {
  return caller.role == auth::Role::kOperator ? "" : caller.account;
}

// Nodes: a provider's own; none for a requester (the market shows the fleet's
// capacity without saying whose machines they are).
inline v1::ListNodesResponse VisibleNodes(const auth::Caller& caller, v1::ListNodesResponse all) {
  if (caller.role == auth::Role::kOperator) return all;
  v1::ListNodesResponse out;
  for (auto& n : *all.mutable_nodes()) {
    if (caller.role == auth::Role::kProvider && n.provider() == caller.account) *out.add_nodes() = std::move(n);
  }
  return out;
}

// A node's attempt history: whole for an operator; for the node's provider
// (the only other caller its rule admits) without what is the requester's:
// the attempt's outputs, its message and how its vote differed.
inline v1::ListNodeAttemptsResponse VisibleNodeAttempts(const auth::Caller& caller, v1::ListNodeAttemptsResponse page) {
  if (caller.role == auth::Role::kOperator) return page;
  for (auto& a : *page.mutable_attempts()) {
    a.mutable_attempt()->clear_outputs();
    a.mutable_attempt()->clear_message();
    a.mutable_attempt()->clear_vote_reason();
  }
  return page;
}

}  // namespace idlegrid::api
