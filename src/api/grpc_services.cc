#include "api/grpc_services.h"

#include <optional>

#include "api/artifact_transfer.h"
#include "api/gate.h"
#include "api/image_registration.h"
#include "api/visibility.h"
#include "common/grpc_status.h"
#include "common/version.h"
#include "jobs/task_state.h"

namespace idlegrid::api {

namespace {

std::string Metadata(grpc::ServerContextBase* ctx, const char* key) {
  auto it = ctx->client_metadata().find(key);
  return it == ctx->client_metadata().end() ? "" : std::string(it->second.data(), it->second.size());
}

template <typename T>
grpc::Status Reply(Result<T> r, T* out) {
  if (!r.ok()) return ToGrpc(r.status());
  *out = std::move(r).value();
  return grpc::Status::OK;
}

// One StatArtifacts call answers for at most this many blobs (an image's
// layers, a sweep's inputs), so one call cannot hold a handler for long.
constexpr int kMaxStatDigests = 1000;

Status TooManyDigests(int n) {
  return Status::InvalidArgument("StatArtifacts asks about " + std::to_string(n) + " digests; at most " +
                                 std::to_string(kMaxStatDigests) + " per call");
}

// Admits the call through the gate (one rule table for both front doors) or
// returns its refusal from the handler.
#define IG_ADMIT(name, target)                                                                                         \
  auto admitted = gate_.Admit(RequesterMethod(name), Metadata(ctx, "authorization"), (target), PeerHost(ctx->peer())); \
  if (!admitted.ok()) return ToGrpc(admitted.status());                                                                \
  const auth::Caller& caller = *admitted;                                                                              \
  (void)caller

class RequesterServiceImpl : public v1::RequesterService::Service {
 public:
  explicit RequesterServiceImpl(coordinator::Coordinator* c) : c_(c), gate_(c) {}

  grpc::Status SubmitJob(grpc::ServerContext* ctx, const v1::SubmitJobRequest* req,
                         v1::SubmitJobResponse* out) override {
    IG_ADMIT("SubmitJob", Gate::None());
    auto job = c_->jobs().Submit(*req, caller.account);
    if (!job.ok()) return ToGrpc(job.status());
    *out->mutable_job() = std::move(job).value();
    return grpc::Status::OK;
  }

  grpc::Status GetJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req, v1::Job* out) override {
    IG_ADMIT("GetJob", gate_.Job(req->job_id()));
    return Reply(c_->jobs().Get(*req), out);
  }

  grpc::Status WatchJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req,
                        grpc::ServerWriter<v1::Job>* writer) override {
    IG_ADMIT("WatchJob", gate_.Job(req->job_id()));
    std::string last;
    while (!ctx->IsCancelled()) {
      uint64_t version = c_->changes().version();
      auto job = c_->jobs().Get(*req);  // paged as the request asks
      if (!job.ok()) return ToGrpc(job.status());
      // The rate and ETA move with the clock alone: an update is sent when
      // something else changed.
      v1::Job compared = *job;
      compared.mutable_summary()->clear_tasks_per_minute();
      compared.mutable_summary()->clear_eta_ms();
      std::string bytes = compared.SerializeAsString();
      if (bytes != last) {
        if (!writer->Write(*job)) return grpc::Status::OK;
        last = std::move(bytes);
      }
      if (job->settled()) return grpc::Status::OK;
      c_->changes().WaitForChange(version, 1000);
    }
    return grpc::Status::OK;
  }

  grpc::Status ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest*, v1::ListJobsResponse* out) override {
    IG_ADMIT("ListJobs", Gate::None());
    return Reply(c_->jobs().List(ListingAccount(caller)), out);
  }

  grpc::Status CancelJob(grpc::ServerContext* ctx, const v1::CancelJobRequest* req, v1::Job* out) override {
    IG_ADMIT("CancelJob", gate_.Job(req->job_id()));
    return Reply(c_->jobs().Cancel(*req), out);
  }
  grpc::Status RetryJob(grpc::ServerContext* ctx, const v1::RetryJobRequest* req, v1::Job* out) override {
    IG_ADMIT("RetryJob", gate_.Job(req->job_id()));
    return Reply(c_->jobs().Retry(*req), out);
  }

  grpc::Status DeleteJob(grpc::ServerContext* ctx, const v1::DeleteJobRequest* req,
                         v1::DeleteJobResponse* out) override {
    IG_ADMIT("DeleteJob", gate_.Job(req->job_id()));
    return Reply(c_->jobs().Delete(req->job_id()), out);
  }

  grpc::Status SubmitWorkflow(grpc::ServerContext* ctx, const v1::SubmitWorkflowRequest* req,
                              v1::Workflow* out) override {
    IG_ADMIT("SubmitWorkflow", Gate::None());
    return Reply(c_->workflows().Submit(*req, caller.account), out);
  }
  grpc::Status GetWorkflow(grpc::ServerContext* ctx, const v1::GetWorkflowRequest* req, v1::Workflow* out) override {
    IG_ADMIT("GetWorkflow", gate_.Workflow(req->workflow_id()));
    return Reply(c_->workflows().Get(req->workflow_id()), out);
  }
  grpc::Status ListWorkflows(grpc::ServerContext* ctx, const v1::ListWorkflowsRequest*,
                             v1::ListWorkflowsResponse* out) override {
    IG_ADMIT("ListWorkflows", Gate::None());
    return Reply(c_->workflows().List(ListingAccount(caller)), out);
  }
  grpc::Status CancelWorkflow(grpc::ServerContext* ctx, const v1::GetWorkflowRequest* req, v1::Workflow* out) override {
    IG_ADMIT("CancelWorkflow", gate_.Workflow(req->workflow_id()));
    return Reply(c_->workflows().Cancel(req->workflow_id()), out);
  }

  grpc::Status ListNodes(grpc::ServerContext* ctx, const v1::ListNodesRequest*, v1::ListNodesResponse* out) override {
    IG_ADMIT("ListNodes", Gate::None());
    auto nodes = c_->nodes().List();
    if (!nodes.ok()) return ToGrpc(nodes.status());
    *out = VisibleNodes(caller, std::move(nodes).value());
    return grpc::Status::OK;
  }

  grpc::Status ExplainJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req,
                          v1::ExplainJobResponse* out) override {
    IG_ADMIT("ExplainJob", gate_.Job(req->job_id()));
    return Reply(c_->dispatcher().Explain(req->job_id()), out);
  }

  grpc::Status GetReceipt(grpc::ServerContext* ctx, const v1::GetReceiptRequest* req, v1::Receipt* out) override {
    IG_ADMIT("GetReceipt", gate_.Job(req->job_id()));
    return Reply(c_->receipts().Get(*req), out);
  }

  grpc::Status GetMarket(grpc::ServerContext* ctx, const v1::GetMarketRequest*, v1::MarketResponse* out) override {
    IG_ADMIT("GetMarket", Gate::None());
    return Reply(c_->dispatcher().Market(), out);
  }

  grpc::Status ResolveLost(grpc::ServerContext* ctx, const v1::ResolveLostRequest* req, v1::Job* out) override {
    IG_ADMIT("ResolveLost", gate_.Job(req->job_id()));
    return Reply(c_->jobs().ResolveLost(*req), out);
  }

  grpc::Status DrainNode(grpc::ServerContext* ctx, const v1::DrainNodeRequest* req, v1::Node* out) override {
    IG_ADMIT("DrainNode", gate_.Node(req->node_id()));
    return Reply(c_->nodes().Drain(*req), out);
  }

  grpc::Status ListNodeAttempts(grpc::ServerContext* ctx, const v1::ListNodeAttemptsRequest* req,
                                v1::ListNodeAttemptsResponse* out) override {
    IG_ADMIT("ListNodeAttempts", gate_.Node(req->node_id()));
    auto page = c_->nodes().Attempts(*req);
    if (!page.ok()) return ToGrpc(page.status());
    *out = VisibleNodeAttempts(caller, std::move(page).value());
    return grpc::Status::OK;
  }

  grpc::Status WatchNodes(grpc::ServerContext* ctx, const v1::ListNodesRequest*,
                          grpc::ServerWriter<v1::ListNodesResponse>* writer) override {
    IG_ADMIT("WatchNodes", Gate::None());
    // An empty list serializes to nothing: track the first send apart.
    std::optional<std::string> last;
    while (!ctx->IsCancelled()) {
      uint64_t version = c_->changes().version();
      auto nodes = c_->nodes().List();
      if (!nodes.ok()) return ToGrpc(nodes.status());
      v1::ListNodesResponse visible = VisibleNodes(caller, std::move(nodes).value());
      // Heartbeats alone do not wake watchers (no Notify), so a node list
      // whose only change is heartbeat times goes out at most once a second.
      std::string bytes = visible.SerializeAsString();
      if (!last || bytes != *last) {
        if (!writer->Write(visible)) return grpc::Status::OK;
        last = std::move(bytes);
      }
      c_->changes().WaitForChange(version, 1000);
    }
    return grpc::Status::OK;
  }

  grpc::Status StreamLogs(grpc::ServerContext* ctx, const v1::StreamLogsRequest* req,
                          grpc::ServerWriter<v1::LogChunk>* writer) override {
    IG_ADMIT("StreamLogs", gate_.Job(req->job_id()));
    auto first = c_->jobs().Get(req->job_id());
    if (!first.ok()) return ToGrpc(first.status());
    int64_t after = req->after_seq();
    while (!ctx->IsCancelled()) {
      uint64_t version = c_->changes().version();
      auto chunks = c_->jobs().ReadLogs(req->job_id(), after, 0);
      if (!chunks.ok()) return ToGrpc(chunks.status());
      for (const auto& ch : *chunks) {
        if (!writer->Write(ch)) return grpc::Status::OK;
        after = ch.seq();
      }
      if (!chunks->empty()) continue;
      if (!req->follow()) return grpc::Status::OK;
      auto job = c_->jobs().Get(req->job_id());
      if (job.ok() && jobs::IsTerminal(job->state())) {
        // Drain what arrived between the read and the state check.
        auto rest = c_->jobs().ReadLogs(req->job_id(), after, 0);
        if (rest.ok() && !rest->empty()) continue;
        return grpc::Status::OK;
      }
      c_->changes().WaitForChange(version, 1000);
    }
    return grpc::Status::OK;
  }

  grpc::Status UploadArtifact(grpc::ServerContext* ctx, grpc::ServerReader<v1::ArtifactChunk>* reader,
                              v1::ArtifactRef* out) override {
    IG_ADMIT("UploadArtifact", Gate::None());
    return ReceiveArtifact(c_, reader, out, caller.account, "account " + caller.account);
  }

  grpc::Status DownloadArtifact(grpc::ServerContext* ctx, const v1::DownloadArtifactRequest* req,
                                grpc::ServerWriter<v1::ArtifactChunk>* writer) override {
    IG_ADMIT("DownloadArtifact", gate_.Artifact(req->digest()));
    return SendArtifact(c_, *req, writer, "account " + caller.account);
  }

  // A blob is present only if the caller could download it: the same rule as
  // DownloadArtifact, asked per digest without a refusal per absent one.
  grpc::Status StatArtifacts(grpc::ServerContext* ctx, const v1::StatArtifactsRequest* req,
                             v1::StatArtifactsResponse* out) override {
    IG_ADMIT("StatArtifacts", Gate::None());
    if (req->digests_size() > kMaxStatDigests) return ToGrpc(TooManyDigests(req->digests_size()));
    const std::string download = RequesterMethod("DownloadArtifact");
    auto may_read = [&](const std::string& digest) -> Result<bool> {
      IG_ASSIGN_OR_RETURN(auth::Target target, gate_.Artifact(digest).lookup(caller));
      return auth::Authorize(caller, download, target).ok();
    };
    for (const std::string& digest : req->digests()) {
      auto stat = StatArtifact(c_, digest, "account " + caller.account, may_read);
      if (!stat.ok()) return ToGrpc(stat.status());
      *out->add_stats() = std::move(stat).value();
    }
    return grpc::Status::OK;
  }

  grpc::Status RegisterImage(grpc::ServerContext* ctx, const v1::RegisterImageRequest* req,
                             v1::PushImageResponse* out) override {
    IG_ADMIT("RegisterImage", RegisterImageTarget(gate_, *req));
    return Reply(api::RegisterImage(c_, gate_, caller, *req), out);
  }

  grpc::Status AddImageSignature(grpc::ServerContext* ctx, const v1::AddImageSignatureRequest* req,
                                 v1::ImageSignature* out) override {
    IG_ADMIT("AddImageSignature", gate_.Image(req->image()));
    return Reply(c_->images().AddSignature(*req, caller.account), out);
  }

  grpc::Status CreateAccount(grpc::ServerContext* ctx, const v1::CreateAccountRequest* req, v1::Account* out) override {
    IG_ADMIT("CreateAccount", Gate::None());
    return Reply(c_->tenancy().CreateAccount(req->account()), out);
  }

  grpc::Status ListAccounts(grpc::ServerContext* ctx, const v1::ListAccountsRequest*,
                            v1::ListAccountsResponse* out) override {
    IG_ADMIT("ListAccounts", Gate::None());
    return Reply(c_->tenancy().ListAccounts(caller), out);
  }

  grpc::Status CreateToken(grpc::ServerContext* ctx, const v1::CreateTokenRequest* req,
                           v1::CreateTokenResponse* out) override {
    IG_ADMIT("CreateToken", gate_.Account(req->account()));
    return Reply(c_->tenancy().CreateToken(caller, *req), out);
  }

  grpc::Status ListTokens(grpc::ServerContext* ctx, const v1::ListTokensRequest* req,
                          v1::ListTokensResponse* out) override {
    IG_ADMIT("ListTokens", gate_.Account(req->account()));
    // An operator naming no account sees every account's tokens.
    std::string account = req->account();
    if (account.empty() && caller.role != auth::Role::kOperator) account = caller.account;
    return Reply(c_->tenancy().ListTokens(account), out);
  }

  grpc::Status RevokeToken(grpc::ServerContext* ctx, const v1::RevokeTokenRequest* req, v1::TokenInfo* out) override {
    IG_ADMIT("RevokeToken", gate_.Token(req->token_id()));
    return Reply(c_->tenancy().RevokeToken(req->token_id()), out);
  }

  grpc::Status CreateJoinToken(grpc::ServerContext* ctx, const v1::CreateJoinTokenRequest* req,
                               v1::CreateJoinTokenResponse* out) override {
    IG_ADMIT("CreateJoinToken", gate_.Account(req->provider()));
    return Reply(c_->tenancy().CreateJoinToken(caller, *req), out);
  }

  // The ledger. An empty account is the caller's own.
  grpc::Status LedgerBalance(grpc::ServerContext* ctx, const v1::LedgerAccountRequest* req,
                             v1::LedgerBalanceResponse* out) override {
    IG_ADMIT("LedgerBalance", gate_.Account(req->account()));
    return Reply(c_->ledger_requests().Balance(req->account().empty() ? caller.account : req->account()), out);
  }

  grpc::Status LedgerHistory(grpc::ServerContext* ctx, const v1::LedgerHistoryRequest* req,
                             v1::LedgerHistoryResponse* out) override {
    IG_ADMIT("LedgerHistory", gate_.Account(req->account()));
    return Reply(c_->ledger_requests().History(req->account().empty() ? caller.account : req->account(),
                                               req->after_seq(), req->limit()),
                 out);
  }

  grpc::Status LedgerDeposit(grpc::ServerContext* ctx, const v1::LedgerTransferRequest* req,
                             v1::LedgerBalanceResponse* out) override {
    IG_ADMIT("LedgerDeposit", Gate::None());
    return Reply(c_->ledger_requests().Transfer(*req, /*deposit=*/true), out);
  }

  grpc::Status LedgerWithdraw(grpc::ServerContext* ctx, const v1::LedgerTransferRequest* req,
                              v1::LedgerBalanceResponse* out) override {
    IG_ADMIT("LedgerWithdraw", Gate::None());
    return Reply(c_->ledger_requests().Transfer(*req, /*deposit=*/false), out);
  }

  grpc::Status LedgerStake(grpc::ServerContext* ctx, const v1::LedgerStakeRequest* req,
                           v1::LedgerBalanceResponse* out) override {
    IG_ADMIT("LedgerStake", gate_.Account(req->account()));
    v1::LedgerStakeRequest own = *req;
    if (own.account().empty()) own.set_account(caller.account);
    return Reply(c_->ledger_requests().Stake(own), out);
  }

  grpc::Status ListWebhookDeliveries(grpc::ServerContext* ctx, const v1::ListWebhookDeliveriesRequest* req,
                                     v1::ListWebhookDeliveriesResponse* out) override {
    const bool job = !req->job_id().empty();
    IG_ADMIT("ListWebhookDeliveries", job ? gate_.Job(req->job_id()) : gate_.Workflow(req->workflow_id()));
    if (job == !req->workflow_id().empty()) {  // checked once admitted: a stranger learns nothing
      return ToGrpc(Status::InvalidArgument("name one of job_id and workflow_id"));
    }
    return Reply(c_->webhooks().List(job ? "job" : "workflow", job ? req->job_id() : req->workflow_id()), out);
  }

  grpc::Status ProviderEarnings(grpc::ServerContext* ctx, const v1::ProviderEarningsRequest* req,
                                v1::ProviderEarningsResponse* out) override {
    IG_ADMIT("ProviderEarnings", gate_.Account(req->provider()));
    return Reply(c_->reports().ProviderEarnings(req->provider().empty() ? caller.account : req->provider()), out);
  }

 private:
  coordinator::Coordinator* c_;
  Gate gate_;
};

// Heartbeats are the hot path (a whole fleet every few seconds): they are
// served on gRPC's callback threads, without a hand-off to a worker thread
// per call. The handler touches memory only (the store only for an attached
// advertisement or an attempt it does not know).
class AgentServiceImpl : public v1::AgentService::WithCallbackMethod_Heartbeat<v1::AgentService::Service> {
 public:
  explicit AgentServiceImpl(coordinator::Coordinator* c) : c_(c) {}

  grpc::Status Register(grpc::ServerContext* ctx, const v1::RegisterRequest* req, v1::RegisterResponse* out) override {
    return Reply(c_->nodes().Register(*req, ctx->peer()), out);
  }

  grpc::Status Connect(grpc::ServerContext* ctx, const v1::ConnectRequest* req,
                       grpc::ServerWriter<v1::Command>* writer) override {
    auto node = Auth(ctx);
    if (!node.ok()) return ToGrpc(node.status());
    // An enrolled agent upgraded past its coordinator is turned away here
    // (Register checks new ones); it retries, and connects once both match.
    if (Status skew = CheckAgentSkew(req->info().agent_version(), BuildVersionParts()); !skew.ok()) {
      return ToGrpc(skew);
    }
    auto session = c_->nodes().OpenSession(*node, req->info(), ctx->peer());
    // Headers go out now so the agent knows the stream is live before any
    // command; the marker tells an accepted stream from a refused one.
    ctx->AddInitialMetadata("idlegrid-session", "open");
    writer->SendInitialMetadata();
    while (!ctx->IsCancelled() && !session->closed()) {
      auto cmd = session->Next(1000);
      if (!cmd) continue;
      if (!writer->Write(*cmd)) break;
    }
    c_->nodes().CloseSession(*node, session);
    return grpc::Status::OK;
  }

  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* ctx, const v1::HeartbeatRequest* req,
                                      v1::HeartbeatResponse* out) override {
    auto* reactor = ctx->DefaultReactor();
    auto node = c_->nodes().Authenticate(Metadata(ctx, "authorization"));
    reactor->Finish(node.ok() ? Reply(c_->nodes().Heartbeat(*node, *req), out) : ToGrpc(node.status()));
    return reactor;
  }

  grpc::Status ReportAttempt(grpc::ServerContext* ctx, const v1::ReportAttemptRequest* req,
                             v1::ReportAttemptResponse*) override {
    auto node = Auth(ctx);
    if (!node.ok()) return ToGrpc(node.status());
    return ToGrpc(c_->attempts().Report(*node, *req));
  }

  grpc::Status AppendLogs(grpc::ServerContext* ctx, const v1::AppendLogsRequest* req,
                          v1::AppendLogsResponse*) override {
    auto node = Auth(ctx);
    if (!node.ok()) return ToGrpc(node.status());
    return ToGrpc(c_->attempts().AppendLogs(*node, *req));
  }

  grpc::Status UploadArtifact(grpc::ServerContext* ctx, grpc::ServerReader<v1::ArtifactChunk>* reader,
                              v1::ArtifactRef* out) override {
    auto node = Auth(ctx);
    if (!node.ok()) return ToGrpc(node.status());
    // The first chunk names the attempt the upload is for.
    return ReceiveArtifact(c_, reader, out, "", "node " + *node, [&](const v1::ArtifactChunk& first) {
      return c_->artifact_rights().NodeMayWrite(*node, first.attempt_id(), first.attempt_token());
    });
  }

  grpc::Status DownloadArtifact(grpc::ServerContext* ctx, const v1::DownloadArtifactRequest* req,
                                grpc::ServerWriter<v1::ArtifactChunk>* writer) override {
    auto node = Auth(ctx);
    if (!node.ok()) return ToGrpc(node.status());
    if (Status st = c_->artifact_rights().NodeMayRead(*node, req->attempt_id(), req->attempt_token(), req->digest());
        !st.ok()) {
      return ToGrpc(st);
    }
    return SendArtifact(c_, *req, writer, "node " + *node);
  }

  // The attempt must be this node's and live (as for an upload); a blob is
  // present only if the attempt may download it (NodeMayRead).
  grpc::Status StatArtifacts(grpc::ServerContext* ctx, const v1::StatArtifactsRequest* req,
                             v1::StatArtifactsResponse* out) override {
    auto node = Auth(ctx);
    if (!node.ok()) return ToGrpc(node.status());
    if (Status st = c_->artifact_rights().NodeMayWrite(*node, req->attempt_id(), req->attempt_token()); !st.ok())
      return ToGrpc(st);
    if (req->digests_size() > kMaxStatDigests) return ToGrpc(TooManyDigests(req->digests_size()));
    auto may_read = [&](const std::string& digest) -> Result<bool> {
      Status st = c_->artifact_rights().NodeMayRead(*node, req->attempt_id(), req->attempt_token(), digest);
      if (st.code() == Code::kNotFound) return false;
      IG_RETURN_IF_ERROR(st);
      return true;
    };
    for (const std::string& digest : req->digests()) {
      auto stat = StatArtifact(c_, digest, "node " + *node, may_read);
      if (!stat.ok()) return ToGrpc(stat.status());
      *out->add_stats() = std::move(stat).value();
    }
    return grpc::Status::OK;
  }

 private:
  Result<std::string> Auth(grpc::ServerContext* ctx) {
    return c_->nodes().Authenticate(Metadata(ctx, "authorization"));
  }
  coordinator::Coordinator* c_;
};

}  // namespace

std::unique_ptr<v1::RequesterService::Service> NewRequesterService(coordinator::Coordinator* c) {
  return std::make_unique<RequesterServiceImpl>(c);
}

std::unique_ptr<v1::AgentService::Service> NewAgentService(coordinator::Coordinator* c) {
  return std::make_unique<AgentServiceImpl>(c);
}

}  // namespace idlegrid::api
