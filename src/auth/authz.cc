#include "auth/authz.h"

#include <algorithm>

#include "auth/credentials.h"

namespace idlegrid::auth {

namespace {

std::vector<Rule> BuildRules() {
  const std::vector<Role> tenants = {Role::kOperator, Role::kRequester};
  const std::vector<Role> people = {Role::kOperator, Role::kRequester, Role::kProvider};
  const std::vector<Role> owners = {Role::kOperator, Role::kProvider};
  const std::vector<Role> agents = {Role::kAgent};
  const std::vector<Role> operators = {Role::kOperator};
  std::vector<Rule> r = {
      {"/idlegrid.v1.RequesterService/SubmitJob", tenants, kSubmit, Owner::kNone},
      {"/idlegrid.v1.RequesterService/GetJob", tenants, kRead, Owner::kJob},
      {"/idlegrid.v1.RequesterService/WatchJob", tenants, kRead, Owner::kJob},
      {"/idlegrid.v1.RequesterService/ListJobs", tenants, kRead, Owner::kJob, true},
      {"/idlegrid.v1.RequesterService/CancelJob", tenants, kCancel, Owner::kJob},
      {"/idlegrid.v1.RequesterService/ResolveLost", tenants, kCancel, Owner::kJob},
      {"/idlegrid.v1.RequesterService/ListNodes", people, kRead, Owner::kNode, true},
      {"/idlegrid.v1.RequesterService/DrainNode", owners, kDrain, Owner::kNode},
      {"/idlegrid.v1.RequesterService/WatchNodes", people, kRead, Owner::kNode, true},
      // What ran on a machine: its provider's (and operators') to read.
      {"/idlegrid.v1.RequesterService/ListNodeAttempts", owners, kRead, Owner::kNode},
      {"/idlegrid.v1.RequesterService/StreamLogs", tenants, kRead, Owner::kJob},
      {"/idlegrid.v1.RequesterService/UploadArtifact", tenants, kSubmit, Owner::kNone},
      {"/idlegrid.v1.RequesterService/DownloadArtifact", tenants, kRead, Owner::kJob},
      // Per digest, a blob the caller may not download reads as absent.
      {"/idlegrid.v1.RequesterService/StatArtifacts", tenants, kRead, Owner::kNone},
      {"/idlegrid.v1.RequesterService/RegisterImage", tenants, kSubmit, Owner::kNone},
      // Signing vouches for an image: only for one the caller may run.
      {"/idlegrid.v1.RequesterService/AddImageSignature", tenants, kSubmit, Owner::kImage},
      {"/idlegrid.v1.RequesterService/ExplainJob", tenants, kRead, Owner::kJob},
      // A receipt is the job's: its requester (and operators) read it.
      {"/idlegrid.v1.RequesterService/GetReceipt", tenants, kRead, Owner::kJob},
      // Retrying undoes an end the requester could have cancelled: the same rule.
      {"/idlegrid.v1.RequesterService/RetryJob", tenants, kCancel, Owner::kJob},
      {"/idlegrid.v1.RequesterService/GetMarket", people, kRead, Owner::kNone},
      {"/idlegrid.v1.RequesterService/DeleteJob", tenants, kCancel, Owner::kJob},
      // Workflows: a requester's own, like its jobs (each step's job is its too).
      {"/idlegrid.v1.RequesterService/SubmitWorkflow", tenants, kSubmit, Owner::kNone},
      {"/idlegrid.v1.RequesterService/GetWorkflow", tenants, kRead, Owner::kWorkflow},
      {"/idlegrid.v1.RequesterService/ListWorkflows", tenants, kRead, Owner::kWorkflow, true},
      {"/idlegrid.v1.RequesterService/CancelWorkflow", tenants, kCancel, Owner::kWorkflow},
      {"/idlegrid.v1.RequesterService/CreateAccount", operators, kNoScope, Owner::kNone},
      {"/idlegrid.v1.RequesterService/ListAccounts", people, kRead, Owner::kAccount, true},
      // A token mints tokens for its own account only, never with scopes it
      // lacks itself (the coordinator checks the subset).
      {"/idlegrid.v1.RequesterService/CreateToken", people, kNoScope, Owner::kAccount},
      {"/idlegrid.v1.RequesterService/ListTokens", people, kRead, Owner::kAccount},
      {"/idlegrid.v1.RequesterService/RevokeToken", people, kNoScope, Owner::kAccount},
      {"/idlegrid.v1.RequesterService/CreateJoinToken", owners, kNoScope, Owner::kAccount},
      // The ledger: one's own balance and history; money in and out of the
      // grid is the operator's; a provider stakes its own.
      {"/idlegrid.v1.RequesterService/LedgerBalance", people, kRead, Owner::kAccount},
      {"/idlegrid.v1.RequesterService/LedgerHistory", people, kRead, Owner::kAccount},
      {"/idlegrid.v1.RequesterService/LedgerDeposit", operators, kNoScope, Owner::kNone},
      {"/idlegrid.v1.RequesterService/LedgerWithdraw", operators, kNoScope, Owner::kNone},
      {"/idlegrid.v1.RequesterService/LedgerStake", owners, kNoScope, Owner::kAccount},
      // A provider reads its own earnings; operators anyone's.
      {"/idlegrid.v1.RequesterService/ProviderEarnings", owners, kRead, Owner::kAccount},
      // A callback's deliveries are its job's (or workflow's): whoever reads it.
      {"/idlegrid.v1.RequesterService/ListWebhookDeliveries", tenants, kRead, Owner::kJob},
      // Register is the one call made with a join token instead of a node
      // credential; the join token's own check is the rule.
      {"/idlegrid.v1.AgentService/Register", agents, kNoScope, Owner::kNone},
      {"/idlegrid.v1.AgentService/Connect", agents, kNoScope, Owner::kSelf},
      {"/idlegrid.v1.AgentService/Heartbeat", agents, kNoScope, Owner::kSelf},
      {"/idlegrid.v1.AgentService/ReportAttempt", agents, kNoScope, Owner::kAttempt},
      {"/idlegrid.v1.AgentService/AppendLogs", agents, kNoScope, Owner::kAttempt},
      {"/idlegrid.v1.AgentService/UploadArtifact", agents, kNoScope, Owner::kAttempt},
      {"/idlegrid.v1.AgentService/DownloadArtifact", agents, kNoScope, Owner::kAttempt},
      {"/idlegrid.v1.AgentService/StatArtifacts", agents, kNoScope, Owner::kAttempt},
  };
  return r;
}

}  // namespace

const std::vector<Rule>& Rules() {
  static const std::vector<Rule> kRules = BuildRules();
  return kRules;
}

const Rule* RuleFor(std::string_view method) {
  for (const Rule& r : Rules()) {
    if (r.method == method) return &r;
  }
  return nullptr;
}

Status AuthorizeMethod(const Caller& caller, std::string_view method) {
  const Rule* rule = RuleFor(method);
  if (rule == nullptr) return Status::PermissionDenied(std::string(method) + " has no authorization rule");
  if (std::find(rule->roles.begin(), rule->roles.end(), caller.role) == rule->roles.end()) {
    return Status::PermissionDenied("this credential may not call " + std::string(method));
  }
  if ((caller.scopes & rule->scope) != rule->scope) {
    std::string missing;
    for (const std::string& s : ScopeNames(rule->scope & ~caller.scopes)) missing += (missing.empty() ? "" : ",") + s;
    return Status::PermissionDenied("this token lacks the scope " + missing + " that " + std::string(method) +
                                    " needs; use a token with it (idlegrid token create --scope " + missing + ")");
  }
  return Status::Ok();
}

Status Authorize(const Caller& caller, std::string_view method, const Target& target) {
  IG_RETURN_IF_ERROR(AuthorizeMethod(caller, method));
  const Rule* rule = RuleFor(method);
  // Listings are filtered row by row (see Rule::filters_listing).
  if (rule->filters_listing && !target.exists) return Status::Ok();
  // One answer for "missing" and "someone else's": the caller learns nothing.
  const Status not_found = Status::NotFound("no such object for this credential; check the id");
  switch (rule->owner) {
    case Owner::kNone:
      return Status::Ok();
    case Owner::kJob:       // the job's account
    case Owner::kNode:      // the node's provider
    case Owner::kAccount:   // the account itself
    case Owner::kImage:     // an account that may use it (Gate::Image names the caller's when so)
    case Owner::kWorkflow:  // the workflow's account
      if (!target.exists) return not_found;
      if (caller.role == Role::kOperator) return Status::Ok();
      return target.account == caller.account ? Status::Ok() : not_found;
    case Owner::kAttempt:
      if (!target.exists || target.node_id != caller.node_id) return not_found;
      return target.lease_live ? Status::Ok() : Status::FailedPrecondition("the attempt's lease has ended");
    case Owner::kSelf:
      return !caller.node_id.empty() ? Status::Ok() : not_found;
  }
  return not_found;
}

}  // namespace idlegrid::auth
