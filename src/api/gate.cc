#include "api/gate.h"

#include <spdlog/spdlog.h>

#include "idlegrid/v1/idlegrid.grpc.pb.h"
#include "manifest/manifest.h"

namespace idlegrid::api {

std::string RequesterMethod(std::string_view name) {
  return std::string("/") + v1::RequesterService::service_full_name() + "/" + std::string(name);
}

std::string PeerHost(std::string_view peer) {
  for (std::string_view scheme : {"ipv4:", "ipv6:"}) {
    if (peer.substr(0, scheme.size()) == scheme) {
      peer.remove_prefix(scheme.size());
      const size_t colon = peer.rfind(':');
      if (colon != std::string_view::npos) peer = peer.substr(0, colon);
      break;
    }
  }
  return std::string(peer);
}

Result<auth::Caller> Gate::Admit(std::string_view method, const std::string& bearer, const TargetOf& target,
                                 std::string_view peer) {
  auth::RequestRateLimits& limits = c_->rate_limits();
  const int64_t now = c_->clock()->NowMs();
  IG_RETURN_IF_ERROR(limits.CheckPeer(peer, now));
  auto authenticated = c_->tenancy().Authenticate(bearer);
  if (!authenticated.ok()) {
    if (authenticated.status().code() == Code::kUnauthenticated) limits.RecordFailedAuth(peer, now);
    return authenticated.status();
  }
  const auth::Caller& caller = *authenticated;
  IG_RETURN_IF_ERROR(limits.CheckToken(caller.token_id, now));
  // Role and scope first, with no lookup: a refused caller learns nothing
  // about the object and costs no store read.
  IG_RETURN_IF_ERROR(auth::AuthorizeMethod(caller, method));
  IG_RETURN_IF_ERROR(Check(caller, method, target));
  return caller;
}

Status Gate::Check(const auth::Caller& caller, std::string_view method, const TargetOf& target) {
  IG_ASSIGN_OR_RETURN(auth::Target t, target.lookup(caller));
  Status st = auth::Authorize(caller, method, t);
  // Missing and someone else's read the same; naming the caller's own id
  // back tells it nothing new.
  if (st.code() == Code::kNotFound) {
    st = Status::NotFound("no " + target.what.substr(0, 100) + " for this credential; check the id");
  }
  if (!st.ok() && st.code() != Code::kUnauthenticated) {
    spdlog::info("refused {} for account {}: {}", method, caller.account, st.message());
  }
  return st;
}

TargetOf Gate::None() {
  return {"object", [](const auth::Caller&) -> Result<auth::Target> { return auth::Target{}; }};
}

TargetOf Gate::Job(std::string job_id) {
  std::string what = "job " + job_id;
  return {what, [this, id = std::move(job_id)](const auth::Caller&) -> Result<auth::Target> {
            auto account = c_->store()->JobAccount(id);
            if (!account.ok()) return account.status();
            if (!*account) return auth::Target{};
            return auth::Target{true, **account, "", true};
          }};
}

TargetOf Gate::Workflow(std::string workflow_id) {
  std::string what = "workflow " + workflow_id;
  return {what, [this, id = std::move(workflow_id)](const auth::Caller&) -> Result<auth::Target> {
            auto wf = c_->store()->GetWorkflow(id);
            if (!wf.ok()) {
              if (wf.status().code() == Code::kNotFound) return auth::Target{};
              return wf.status();
            }
            return auth::Target{true, wf->account(), "", true};
          }};
}

TargetOf Gate::Node(std::string node_id) {
  std::string what = "node " + node_id;
  return {what, [this, id = std::move(node_id)](const auth::Caller&) -> Result<auth::Target> {
            IG_ASSIGN_OR_RETURN(auto node, c_->store()->GetNode(id));
            if (!node) return auth::Target{};
            return auth::Target{true, node->provider, node->id, true};
          }};
}

TargetOf Gate::Account(std::string name) {
  std::string what = name.empty() ? "account" : "account " + name;
  return {what, [this, name = std::move(name)](const auth::Caller& caller) -> Result<auth::Target> {
            const std::string& who = name.empty() ? caller.account : name;
            IG_ASSIGN_OR_RETURN(auto acc, c_->store()->GetAccount(who));
            if (!acc) return auth::Target{};
            return auth::Target{true, acc->name, "", true};
          }};
}

TargetOf Gate::Token(std::string token_id) {
  std::string what = "token " + token_id;
  return {what, [this, id = std::move(token_id)](const auth::Caller&) -> Result<auth::Target> {
            auto account = c_->tenancy().AccountOfToken(id);
            if (!account.ok()) {
              if (account.status().code() == Code::kNotFound) return auth::Target{};
              return account.status();
            }
            return auth::Target{true, *account, "", true};
          }};
}

TargetOf Gate::Artifact(std::string digest) {
  std::string what = "artifact " + digest;
  return {what, [this, d = std::move(digest)](const auth::Caller& caller) -> Result<auth::Target> {
            IG_ASSIGN_OR_RETURN(store::ArtifactAccess access, c_->store()->ArtifactAccessOf(d));
            if (!access.exists) return auth::Target{};
            // Owned for this purpose when public or held by the caller's account.
            bool mine = access.is_public || access.accounts.count(caller.account) > 0;
            return auth::Target{true, mine ? caller.account : std::string(), "", true};
          }};
}

TargetOf Gate::Image(std::string image) {
  std::string what = "image " + image;
  return {what, [this, ref = std::move(image)](const auth::Caller& caller) -> Result<auth::Target> {
            IG_ASSIGN_OR_RETURN(auto stored, c_->store()->GetImage(manifest::ImageDigestOf(ref)));
            if (!stored) return auth::Target{};
            IG_ASSIGN_OR_RETURN(store::ArtifactAccess access, c_->store()->ArtifactAccessOf(stored->archive_digest));
            // Owned for this purpose when the caller may run it (an operator may run any).
            bool mine = access.is_public || access.accounts.count(caller.account) > 0;
            return auth::Target{true, mine ? caller.account : std::string(), "", true};
          }};
}

}  // namespace idlegrid::api
