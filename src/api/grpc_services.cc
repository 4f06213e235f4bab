#include "api/grpc_services.h"

#include "api/artifact_transfer.h"
#include "common/grpc_status.h"
#include "jobs/task_state.h"

namespace idlegrid::api {

namespace {

std::string Metadata(grpc::ServerContextBase* ctx, const char* key) {
  auto it = ctx->client_metadata().find(key);
  return it == ctx->client_metadata().end() ? "" : std::string(it->second.data(), it->second.size());
}

#define IG_AUTH_REQUESTER()                                                    \
  do {                                                                         \
    Status _a = c_->AuthenticateRequester(Metadata(ctx, "authorization"));     \
    if (!_a.ok()) return ToGrpc(_a);                                           \
  } while (0)

template <typename T>
grpc::Status Reply(Result<T> r, T* out) {
  if (!r.ok()) return ToGrpc(r.status());
  *out = std::move(r).value();
  return grpc::Status::OK;
}

class RequesterServiceImpl : public v1::RequesterService::Service {
 public:
  explicit RequesterServiceImpl(coordinator::Coordinator* c) : c_(c) {}

  grpc::Status SubmitJob(grpc::ServerContext* ctx, const v1::SubmitJobRequest* req,
                         v1::SubmitJobResponse* out) override {
    IG_AUTH_REQUESTER();
    auto job = c_->SubmitJob(*req);
    if (!job.ok()) return ToGrpc(job.status());
    *out->mutable_job() = std::move(job).value();
    return grpc::Status::OK;
  }

  grpc::Status GetJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req, v1::Job* out) override {
    IG_AUTH_REQUESTER();
    return Reply(c_->GetJob(req->job_id()), out);
  }

  grpc::Status WatchJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req,
                        grpc::ServerWriter<v1::Job>* writer) override {
    IG_AUTH_REQUESTER();
    std::string last;
    while (!ctx->IsCancelled()) {
      uint64_t version = c_->version();
      auto job = c_->GetJob(req->job_id());
      if (!job.ok()) return ToGrpc(job.status());
      std::string bytes = job->SerializeAsString();
      if (bytes != last) {
        if (!writer->Write(*job)) return grpc::Status::OK;
        last = std::move(bytes);
      }
      if (jobs::IsSettled(*job)) return grpc::Status::OK;
      c_->WaitForChange(version, 1000);
    }
    return grpc::Status::OK;
  }

  grpc::Status ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest*, v1::ListJobsResponse* out) override {
    IG_AUTH_REQUESTER();
    return Reply(c_->ListJobs(), out);
  }

  grpc::Status CancelJob(grpc::ServerContext* ctx, const v1::CancelJobRequest* req, v1::Job* out) override {
    IG_AUTH_REQUESTER();
    return Reply(c_->CancelJob(req->job_id()), out);
  }

  grpc::Status ListNodes(grpc::ServerContext* ctx, const v1::ListNodesRequest*, v1::ListNodesResponse* out) override {
    IG_AUTH_REQUESTER();
    return Reply(c_->ListNodes(), out);
  }

  grpc::Status ExplainJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req,
                          v1::ExplainJobResponse* out) override {
    IG_AUTH_REQUESTER();
    return Reply(c_->ExplainJob(req->job_id()), out);
  }

  grpc::Status GetMarket(grpc::ServerContext* ctx, const v1::GetMarketRequest*, v1::MarketResponse* out) override {
    IG_AUTH_REQUESTER();
    return Reply(c_->Market(), out);
  }

  grpc::Status ResolveLost(grpc::ServerContext* ctx, const v1::ResolveLostRequest* req, v1::Job* out) override {
    IG_AUTH_REQUESTER();
    return Reply(c_->ResolveLost(*req), out);
  }

  grpc::Status DrainNode(grpc::ServerContext* ctx, const v1::DrainNodeRequest* req, v1::Node* out) override {
    IG_AUTH_REQUESTER();
    return Reply(c_->DrainNode(*req), out);
  }

  grpc::Status WatchNodes(grpc::ServerContext* ctx, const v1::ListNodesRequest*,
                          grpc::ServerWriter<v1::ListNodesResponse>* writer) override {
    IG_AUTH_REQUESTER();
    std::string last;
    while (!ctx->IsCancelled()) {
      uint64_t version = c_->version();
      auto nodes = c_->ListNodes();
      if (!nodes.ok()) return ToGrpc(nodes.status());
      // Heartbeats alone do not wake watchers (no Notify), so a node list
      // whose only change is heartbeat times goes out at most once a second.
      std::string bytes = nodes->SerializeAsString();
      if (bytes != last) {
        if (!writer->Write(*nodes)) return grpc::Status::OK;
        last = std::move(bytes);
      }
      c_->WaitForChange(version, 1000);
    }
    return grpc::Status::OK;
  }

  grpc::Status StreamLogs(grpc::ServerContext* ctx, const v1::StreamLogsRequest* req,
                          grpc::ServerWriter<v1::LogChunk>* writer) override {
    IG_AUTH_REQUESTER();
    auto first = c_->GetJob(req->job_id());
    if (!first.ok()) return ToGrpc(first.status());
    int64_t after = req->after_seq();
    while (!ctx->IsCancelled()) {
      uint64_t version = c_->version();
      auto chunks = c_->ReadLogs(req->job_id(), after, 0);
      if (!chunks.ok()) return ToGrpc(chunks.status());
      for (const auto& ch : *chunks) {
        if (!writer->Write(ch)) return grpc::Status::OK;
        after = ch.seq();
      }
      if (!chunks->empty()) continue;
      if (!req->follow()) return grpc::Status::OK;
      auto job = c_->GetJob(req->job_id());
      if (job.ok() && jobs::IsTerminal(job->state())) {
        // Drain what arrived between the read and the state check.
        auto rest = c_->ReadLogs(req->job_id(), after, 0);
        if (rest.ok() && !rest->empty()) continue;
        return grpc::Status::OK;
      }
      c_->WaitForChange(version, 1000);
    }
    return grpc::Status::OK;
  }

  grpc::Status UploadArtifact(grpc::ServerContext* ctx, grpc::ServerReader<v1::ArtifactChunk>* reader,
                              v1::ArtifactRef* out) override {
    IG_AUTH_REQUESTER();
    return ReceiveArtifact(c_, reader, out, "requester");
  }

  grpc::Status DownloadArtifact(grpc::ServerContext* ctx, const v1::DownloadArtifactRequest* req,
                                grpc::ServerWriter<v1::ArtifactChunk>* writer) override {
    IG_AUTH_REQUESTER();
    return SendArtifact(c_, *req, writer, "requester");
  }

  grpc::Status RegisterImage(grpc::ServerContext* ctx, const v1::RegisterImageRequest* req,
                             v1::PushImageResponse* out) override {
    IG_AUTH_REQUESTER();
    return Reply(c_->RegisterImage(req->archive_digest()), out);
  }

 private:
  coordinator::Coordinator* c_;
};

// Heartbeats are the hot path (a whole fleet every few seconds): they are
// served on gRPC's callback threads, without a hand-off to a worker thread
// per call. The handler touches memory only (the store only for an attached
// advertisement or an attempt it does not know).
class AgentServiceImpl : public v1::AgentService::WithCallbackMethod_Heartbeat<v1::AgentService::Service> {
 public:
  explicit AgentServiceImpl(coordinator::Coordinator* c) : c_(c) {}

  grpc::Status Register(grpc::ServerContext* ctx, const v1::RegisterRequest* req, v1::RegisterResponse* out) override {
    return Reply(c_->RegisterNode(*req, ctx->peer()), out);
  }

  grpc::Status Connect(grpc::ServerContext* ctx, const v1::ConnectRequest* req,
                       grpc::ServerWriter<v1::Command>* writer) override {
    auto node = Auth(ctx);
    if (!node.ok()) return ToGrpc(node.status());
    auto session = c_->OpenSession(*node, req->info(), ctx->peer());
    // Headers go out now so the agent knows the stream is live before any command.
    writer->SendInitialMetadata();
    while (!ctx->IsCancelled() && !session->closed()) {
      auto cmd = session->Next(1000);
      if (!cmd) continue;
      if (!writer->Write(*cmd)) break;
    }
    c_->CloseSession(*node, session);
    return grpc::Status::OK;
  }

  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* ctx, const v1::HeartbeatRequest* req,
                                      v1::HeartbeatResponse* out) override {
    auto* reactor = ctx->DefaultReactor();
    auto node = c_->AuthenticateAgent(Metadata(ctx, "authorization"));
    reactor->Finish(node.ok() ? Reply(c_->Heartbeat(*node, *req), out) : ToGrpc(node.status()));
    return reactor;
  }

  grpc::Status ReportAttempt(grpc::ServerContext* ctx, const v1::ReportAttemptRequest* req,
                             v1::ReportAttemptResponse*) override {
    auto node = Auth(ctx);
    if (!node.ok()) return ToGrpc(node.status());
    return ToGrpc(c_->ReportAttempt(*node, *req));
  }

  grpc::Status AppendLogs(grpc::ServerContext* ctx, const v1::AppendLogsRequest* req,
                          v1::AppendLogsResponse*) override {
    auto node = Auth(ctx);
    if (!node.ok()) return ToGrpc(node.status());
    return ToGrpc(c_->AppendLogs(*node, *req));
  }

  grpc::Status UploadArtifact(grpc::ServerContext* ctx, grpc::ServerReader<v1::ArtifactChunk>* reader,
                              v1::ArtifactRef* out) override {
    auto node = Auth(ctx);
    if (!node.ok()) return ToGrpc(node.status());
    return ReceiveArtifact(c_, reader, out, "node " + *node);
  }

  grpc::Status DownloadArtifact(grpc::ServerContext* ctx, const v1::DownloadArtifactRequest* req,
                                grpc::ServerWriter<v1::ArtifactChunk>* writer) override {
    auto node = Auth(ctx);
    if (!node.ok()) return ToGrpc(node.status());
    return SendArtifact(c_, *req, writer, "node " + *node);
  }

 private:
  Result<std::string> Auth(grpc::ServerContext* ctx) {
    return c_->AuthenticateAgent(Metadata(ctx, "authorization"));
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
