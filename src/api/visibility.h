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

}  // namespace idlegrid::api
