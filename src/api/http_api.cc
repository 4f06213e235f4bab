#include "api/http_api.h"

#include <google/protobuf/util/json_util.h>
#include <httplib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <vector>

#include "api/artifact_transfer.h"
#include "api/dashboard.h"
#include "api/http_queries.h"
#include "api/image_registration.h"
#include "api/visibility.h"
#include "metrics/load_history.h"
#include "receipt/receipt_json.h"
#include "common/digest.h"
#include "common/grpc_status.h"

namespace idlegrid::api {

namespace {

using google::protobuf::Message;

void SendError(httplib::Response& res, const Status& st) {
  res.status = ToHttp(st.code());
  // {"code": "NotFound", "message": "..."}
  std::string escaped;
  for (char ch : st.message()) {
    if (ch == '"' || ch == '\\') escaped.push_back('\\');
    if (static_cast<unsigned char>(ch) < 0x20) continue;
    escaped.push_back(ch);
  }
  res.set_content(std::string("{\"code\":\"") + CodeName(st.code()) + "\",\"message\":\"" + escaped + "\"}\n",
                  "application/json");
}

void SendMessage(httplib::Response& res, const Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.preserve_proto_field_names = false;
  auto st = google::protobuf::util::MessageToJsonString(m, &out, opts);
  if (!st.ok()) return SendError(res, Status::Internal("cannot encode response"));
  res.set_content(out, "application/json");
}

// The chunks after a cursor that `filter` shows, as {"chunks": [LogChunk...],
// "next": N}: N is the cursor for the next read (the last chunk read, shown
// or not, or `after` when none was).
void SendLogChunks(httplib::Response& res, const std::vector<v1::LogChunk>& chunks, int64_t after,
                   const LogFilter& filter) {
  google::protobuf::util::JsonPrintOptions opts;
  std::string out = "{\"chunks\":[";
  bool first = true;
  for (const v1::LogChunk& chunk : chunks) {
    after = chunk.seq();
    if (!filter.Shows(chunk)) continue;
    std::string one;
    if (!google::protobuf::util::MessageToJsonString(chunk, &one, opts).ok()) {
      return SendError(res, Status::Internal("cannot encode log chunk"));
    }
    if (!first) out += ",";
    first = false;
    out += one;
  }
  out += "],\"next\":" + std::to_string(after) + "}\n";
  res.set_content(out, "application/json");
}

template <typename T>
void SendResult(httplib::Response& res, const Result<T>& r) {
  if (!r.ok()) return SendError(res, r.status());
  SendMessage(res, r.value());
}

// A request from its JSON body; InvalidArgument naming the message expected.
template <typename Request>
Result<Request> ParseBody(const std::string& body) {
  Request out;
  auto parsed = google::protobuf::util::JsonStringToMessage(body, &out);
  if (!parsed.ok()) {
    return Status::InvalidArgument("request body is not a " + std::string(Request::descriptor()->name()) + ": " +
                                   std::string(parsed.message()));
  }
  return out;
}

// A request about the object in the path (`what` `id`), from an optional
// JSON body (empty: only the id). A body naming another one is
// InvalidArgument; `id_field` is the request's mutable id accessor.
template <typename Request>
Result<Request> PathBody(const std::string& body, const std::string& what, const std::string& id,
                         std::string* (Request::*id_field)()) {
  Request out;
  if (!body.empty()) {
    IG_ASSIGN_OR_RETURN(out, ParseBody<Request>(body));
  }
  std::string* named = (out.*id_field)();
  if (!named->empty() && *named != id) {
    return Status::InvalidArgument("the body names " + what + " " + *named + ", the path " + id);
  }
  *named = id;
  return out;
}

template <typename Request>
Result<Request> JobBody(const std::string& body, const std::string& job_id) {
  return PathBody<Request>(body, "job", job_id, &Request::mutable_job_id);
}

// A JSON answer to a GET carries a strong ETag of its body, and a request
// whose If-None-Match names it is answered 304 with no body: a dashboard
// polling a page that did not change moves a few hundred bytes, not the page.
// The answer is still computed (the ETag is of what would be sent).
void Revalidate(const httplib::Request& req, httplib::Response& res) {
  if (req.method != "GET" || res.status != 200 || res.body.empty()) return;
  if (res.get_header_value("Content-Type").rfind("application/json", 0) != 0) return;
  const std::string etag = "\"" + Sha256Digest(res.body).substr(7, 32) + "\"";
  res.set_header("ETag", etag);
  res.set_header("Cache-Control", "no-cache");  // may be kept, but revalidated every time
  if (req.get_header_value("If-None-Match") != etag) return;
  res.status = 304;
  res.body.clear();
  res.headers.erase("Content-Length");
  res.headers.erase("Content-Type");
}

}  // namespace

HttpApi::HttpApi(coordinator::Coordinator* c, const std::string& cert_file, const std::string& key_file)
    : c_(c), gate_(c), server_(std::make_unique<httplib::SSLServer>(cert_file.c_str(), key_file.c_str())) {
  // Once, before any connection: every handshake then asks identity_ first
  // (it serves the files' certificate until SetCertificate is called).
  if (server_->is_valid()) identity_.Install(server_->ssl_context());
  Routes();
  server_->set_post_routing_handler(Revalidate);
}

HttpApi::~HttpApi() { Stop(); }

Status HttpApi::SetCertificate(const std::string& chain_pem, const std::string& key_pem) {
  return identity_.Set(chain_pem, key_pem);
}

void HttpApi::Routes() {
  JobRoutes();
  NodeRoutes();
  JobDetailRoutes();
  WorkflowRoutes();
  HistoryRoutes();
  ServeDashboard(*server_);
  MetricsRoutes();
  HealthRoutes();
  MarketAndAccountRoutes();
  LedgerRoutes();
  ArtifactRoutes();
  server_->set_payload_max_length(16 << 20);
}

std::optional<auth::Caller> HttpApi::Admit(const httplib::Request& req, httplib::Response& res, std::string_view method,
                                           const TargetOf& target) {
  auto caller =
      gate_.Admit(RequesterMethod(method), req.get_header_value("Authorization"), target, PeerHost(req.remote_addr));
  if (!caller.ok()) {
    SendError(res, caller.status());
    return std::nullopt;
  }
  return *caller;
}

// Submit, list, read, delete, cancel and retry jobs.
void HttpApi::JobRoutes() {
  server_->Post("/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) {
    auto caller = Admit(req, res, "SubmitJob", Gate::None());
    if (!caller) return;
    auto body = ParseBody<v1::SubmitJobRequest>(req.body);
    if (!body.ok()) return SendError(res, body.status());
    auto job = c_->jobs().Submit(*body, caller->account);
    if (!job.ok()) return SendError(res, job.status());
    v1::SubmitJobResponse out;
    *out.mutable_job() = std::move(job).value();
    res.status = 201;
    SendMessage(res, out);
  });
  server_->Get("/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) {
    auto caller = Admit(req, res, "ListJobs", Gate::None());
    if (!caller) return;
    SendResult(res, c_->jobs().List(ListingAccount(*caller)));
  });
  server_->Get(R"(/v1/jobs/([A-Za-z0-9-]+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, "GetJob", gate_.Job(req.matches[1]))) return;
    auto query = JobQuery(req, req.matches[1]);  // ?state=, ?tasks=, ?offset=, ?limit=: one page of a large job
    if (!query.ok()) return SendError(res, query.status());
    SendResult(res, c_->jobs().Get(*query));
  });
  server_->Delete(R"(/v1/jobs/([A-Za-z0-9-]+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, "DeleteJob", gate_.Job(req.matches[1]))) return;
    SendResult(res, c_->jobs().Delete(req.matches[1]));
  });
  server_->Post(R"(/v1/jobs/([A-Za-z0-9-]+)/cancel)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, "CancelJob", gate_.Job(req.matches[1]))) return;
    // An empty body cancels the whole job; {taskIndices, states} only those tasks.
    auto body = JobBody<v1::CancelJobRequest>(req.body, req.matches[1]);
    if (!body.ok()) return SendError(res, body.status());
    SendResult(res, c_->jobs().Cancel(*body));
  });
  server_->Post(R"(/v1/jobs/([A-Za-z0-9-]+)/retry)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, "RetryJob", gate_.Job(req.matches[1]))) return;
    auto body = JobBody<v1::RetryJobRequest>(req.body, req.matches[1]);
    if (!body.ok()) return SendError(res, body.status());
    SendResult(res, c_->jobs().Retry(*body));
  });
}

void HttpApi::NodeRoutes() {
  server_->Get("/v1/nodes", [this](const httplib::Request& req, httplib::Response& res) {
    auto caller = Admit(req, res, "ListNodes", Gate::None());
    if (!caller) return;
    auto nodes = c_->nodes().List();
    if (!nodes.ok()) return SendError(res, nodes.status());
    SendMessage(res, VisibleNodes(*caller, std::move(nodes).value()));
  });
  // Drain (or with {"undo": true}, take work again); {"deadlineSeconds": N}
  // bounds how long running work may finish. DrainNode's rule: the node's owner.
  server_->Post(R"(/v1/nodes/([A-Za-z0-9-]+)/drain)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, "DrainNode", gate_.Node(req.matches[1]))) return;
    auto body =
        PathBody<v1::DrainNodeRequest>(req.body, "node", req.matches[1], &v1::DrainNodeRequest::mutable_node_id);
    if (!body.ok()) return SendError(res, body.status());
    SendResult(res, c_->nodes().Drain(*body));
  });
  // The node's attempts, newest first: ?limit=N (50; at most 500) and
  // ?page_token= from the previous page's nextPageToken.
  server_->Get(R"(/v1/nodes/([A-Za-z0-9-]+)/attempts)", [this](const httplib::Request& req, httplib::Response& res) {
    auto caller = Admit(req, res, "ListNodeAttempts", gate_.Node(req.matches[1]));
    if (!caller) return;
    auto limit = PageLimit(req);
    if (!limit.ok()) return SendError(res, limit.status());
    v1::ListNodeAttemptsRequest query;
    query.set_node_id(req.matches[1]);
    query.set_limit(*limit);
    query.set_page_token(req.get_param_value("page_token"));
    auto page = c_->nodes().Attempts(query);
    if (!page.ok()) return SendError(res, page.status());
    SendMessage(res, VisibleNodeAttempts(*caller, std::move(page).value()));
  });
}

// An account's money: ledger balance and history (?account=, "" the
// caller's own), and a provider's earnings (?provider=).
void HttpApi::LedgerRoutes() {
  server_->Get("/v1/ledger/balance", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string account = req.get_param_value("account");
    auto caller = Admit(req, res, "LedgerBalance", gate_.Account(account));
    if (!caller) return;
    SendResult(res, c_->ledger_requests().Balance(account.empty() ? caller->account : account));
  });
  server_->Get("/v1/ledger/history", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string account = req.get_param_value("account");
    auto caller = Admit(req, res, "LedgerHistory", gate_.Account(account));
    if (!caller) return;
    auto after = LogCursor(req);  // ?after=SEQ, as for logs
    if (!after.ok()) return SendError(res, after.status());
    auto limit = PageLimit(req);
    if (!limit.ok()) return SendError(res, limit.status());
    SendResult(res, c_->ledger_requests().History(account.empty() ? caller->account : account, *after, *limit));
  });
  server_->Get("/v1/earnings", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string provider = req.get_param_value("provider");
    auto caller = Admit(req, res, "ProviderEarnings", gate_.Account(provider));
    if (!caller) return;
    SendResult(res, c_->reports().ProviderEarnings(provider.empty() ? caller->account : provider));
  });
}

// What a job did and why: its scheduling explanation, logs and receipt.
void HttpApi::JobDetailRoutes() {
  server_->Get(R"(/v1/jobs/([A-Za-z0-9-]+)/explain)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, "ExplainJob", gate_.Job(req.matches[1]))) return;
    SendResult(res, c_->dispatcher().Explain(req.matches[1]));
  });
  // Log chunks after ?after=SEQ (default 0), at most a few hundred read per
  // call, of ?task=N and ?stream=stdout|stderr when given: the dashboard
  // polls with the returned cursor (gRPC's StreamLogs follows).
  server_->Get(R"(/v1/jobs/([A-Za-z0-9-]+)/logs)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, "StreamLogs", gate_.Job(req.matches[1]))) return;
    auto after = LogCursor(req);
    if (!after.ok()) return SendError(res, after.status());
    auto filter = LogFilterOf(req);
    if (!filter.ok()) return SendError(res, filter.status());
    auto chunks = c_->jobs().ReadLogs(req.matches[1], *after, 0);
    if (!chunks.ok()) return SendError(res, chunks.status());
    SendLogChunks(res, *chunks, *after, *filter);
  });
  // How the job's callback was delivered (docs/webhooks.md).
  server_->Get(R"(/v1/jobs/([A-Za-z0-9-]+)/webhooks)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, "ListWebhookDeliveries", gate_.Job(req.matches[1]))) return;
    SendResult(res, c_->webhooks().List("job", req.matches[1]));
  });
  // The receipt of the job's latest attempt that has one (?task=N and
  // ?attempt=ID narrow it), as `idlegrid receipt JOB --json` prints it: the
  // file `receipt verify` checks offline. GetReceipt's rule: the job's owner.
  server_->Get(R"(/v1/jobs/([A-Za-z0-9-]+)/receipt)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, "GetReceipt", gate_.Job(req.matches[1]))) return;
    auto query = ReceiptQuery(req);
    if (!query.ok()) return SendError(res, query.status());
    auto receipt = c_->receipts().Get(*query);
    if (!receipt.ok()) return SendError(res, receipt.status());
    res.set_content(receipt::ReceiptJson(*receipt), "application/json");
  });
}

// Workflows (docs/workflows.md): what gRPC's SubmitWorkflow, GetWorkflow,
// ListWorkflows and CancelWorkflow do, under the same rules.
void HttpApi::WorkflowRoutes() {
  server_->Post("/v1/workflows", [this](const httplib::Request& req, httplib::Response& res) {
    auto caller = Admit(req, res, "SubmitWorkflow", Gate::None());
    if (!caller) return;
    auto body = ParseBody<v1::SubmitWorkflowRequest>(req.body);
    if (!body.ok()) return SendError(res, body.status());
    auto workflow = c_->workflows().Submit(*body, caller->account);
    if (!workflow.ok()) return SendError(res, workflow.status());
    res.status = 201;
    SendMessage(res, *workflow);
  });
  server_->Get("/v1/workflows", [this](const httplib::Request& req, httplib::Response& res) {
    auto caller = Admit(req, res, "ListWorkflows", Gate::None());
    if (!caller) return;
    SendResult(res, c_->workflows().List(ListingAccount(*caller)));
  });
  server_->Get(R"(/v1/workflows/([A-Za-z0-9-]+))", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, "GetWorkflow", gate_.Workflow(req.matches[1]))) return;
    SendResult(res, c_->workflows().Get(req.matches[1]));
  });
  server_->Get(R"(/v1/workflows/([A-Za-z0-9-]+)/webhooks)",
               [this](const httplib::Request& req, httplib::Response& res) {
                 if (!Admit(req, res, "ListWebhookDeliveries", gate_.Workflow(req.matches[1]))) return;
                 SendResult(res, c_->webhooks().List("workflow", req.matches[1]));
               });
  server_->Post(R"(/v1/workflows/([A-Za-z0-9-]+)/cancel)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, "CancelWorkflow", gate_.Workflow(req.matches[1]))) return;
    SendResult(res, c_->workflows().Cancel(req.matches[1]));
  });
}

// The fleet's load over the last hour (queued/running tasks, GPUs
// allocated): aggregate counts, so anyone who may list nodes may see it.
void HttpApi::HistoryRoutes() {
  server_->Get("/v1/history", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, "ListNodes", Gate::None())) return;
    res.set_content(
        metrics::LoadHistoryJson(c_->reports().LoadSamples(), coordinator::FleetReports::kLoadSamplePeriodMs),
        "application/json");
  });
}

// Fleet-wide counts: operators only (ListAccounts' rule would let anyone
// see their own; metrics are everyone's).
void HttpApi::MetricsRoutes() {
  server_->Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    auto caller = Admit(req, res, "ListNodes", Gate::None());
    if (!caller) return;
    if (caller->role != auth::Role::kOperator) {
      return SendError(res, Status::PermissionDenied("/metrics is for operator tokens"));
    }
    auto text = c_->reports().Metrics();
    if (!text.ok()) return SendError(res, text.status());
    res.set_content(*text, "text/plain; version=0.0.4");
  });
}

// For load balancers, systemd and orchestrators: no token, and nothing in
// the answer but whether this process serves. /healthz: the HTTP thread
// answers. /readyz: the coordinator runs its loops and its store answers a
// read (a keyed lookup of a node that cannot exist: one index probe, which
// on PostgreSQL also takes a pooled connection, reconnecting if it must).
void HttpApi::HealthRoutes() {
  server_->Get("/healthz",
               [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  server_->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    if (!ready_.load()) {
      res.status = 503;
      return res.set_content("not ready: starting or shutting down\n", "text/plain");
    }
    auto probe = c_->store()->GetNode("readyz-probe");
    if (!probe.ok()) {
      res.status = 503;
      return res.set_content("not ready: the store does not answer: " + probe.status().message() + "\n", "text/plain");
    }
    res.set_content("ready\n", "text/plain");
  });
}

void HttpApi::MarketAndAccountRoutes() {
  server_->Get("/v1/market", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, "GetMarket", Gate::None())) return;
    SendResult(res, c_->dispatcher().Market());
  });
  server_->Get("/v1/accounts", [this](const httplib::Request& req, httplib::Response& res) {
    auto caller = Admit(req, res, "ListAccounts", Gate::None());
    if (!caller) return;
    SendResult(res, c_->tenancy().ListAccounts(*caller));
  });
}

Result<int> HttpApi::Start(const std::string& host, int port) {
  if (!server_->is_valid()) return Status::Internal("HTTPS server could not load its certificate");
  int bound = port == 0 ? server_->bind_to_any_port(host) : (server_->bind_to_port(host, port) ? port : -1);
  if (bound < 0) return Status::Unavailable("cannot listen on " + host + ":" + std::to_string(port));
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  return bound;
}

void HttpApi::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

namespace {

// `Content-Range: bytes START-END/TOTAL` of an upload's piece; none: the
// body is the whole blob.
Result<UploadPiece> PieceOf(const httplib::Request& req, const std::string& digest) {
  UploadPiece piece;
  piece.digest = digest;
  piece.kind = req.get_param_value("kind");
  piece.make_public = req.get_param_value("public") == "true";
  const std::string range = req.get_header_value("Content-Range");
  if (range.empty()) {
    piece.total = req.body.size();
    return piece;
  }
  unsigned long long start = 0, end = 0, total = 0;
  char tail = 0;
  if (std::sscanf(range.c_str(), "bytes %llu-%llu/%llu%c", &start, &end, &total, &tail) != 3 || end < start ||
      end - start + 1 != req.body.size()) {
    return Status::InvalidArgument("Content-Range '" + range.substr(0, 80) + "' must be 'bytes START-END/TOTAL' " +
                                   "naming the body's " + std::to_string(req.body.size()) + " bytes");
  }
  piece.offset = start;
  piece.total = total;
  return piece;
}

}  // namespace

// Artifacts by digest (a job's outputs, inputs, images), under DownloadArtifact's
// rule: whoever may read the blob. The whole blob, or one byte range
// (`Range: bytes=N-` resumes a download; httplib answers 206 with
// Content-Range). The digest is the name: clients hash what they received.
void HttpApi::ArtifactRoutes() {
  server_->Get(R"(/v1/artifacts/(sha256:[0-9a-f]{64}))", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string digest = req.matches[1];
    if (!Admit(req, res, "DownloadArtifact", gate_.Artifact(digest))) return;
    auto size = c_->artifact_store()->SizeOf(digest);
    if (!size.ok()) return SendError(res, size.status());
    auto file = std::make_shared<std::ifstream>(c_->artifact_store()->PathOf(digest), std::ios::binary);
    if (!*file) return SendError(res, Status::NotFound("artifact " + digest + " cannot be opened"));
    res.set_header("ETag", "\"" + digest + "\"");
    res.set_header("Accept-Ranges", "bytes");
    res.set_content_provider(static_cast<size_t>(*size), "application/octet-stream",
                             [this, file](size_t offset, size_t length, httplib::DataSink& sink) {
                               std::vector<char> buf(std::min<size_t>(length, 1 << 20));
                               file->clear();
                               file->seekg(static_cast<std::streamoff>(offset));
                               file->read(buf.data(), static_cast<std::streamsize>(buf.size()));
                               const auto n = static_cast<size_t>(file->gcount());
                               if (n == 0 || !sink.write(buf.data(), n)) return false;
                               c_->CountArtifactBytes(false, n);
                               return true;
                             });
  });
  // Uploads in pieces of at most 16 MiB (the API's request limit), each
  // `PUT` with its Content-Range; what arrived is kept for this account, so
  // an interrupted upload goes on from `GET .../stat`'s partialBytes. The
  // last piece answers 201 with the ArtifactRef, the others 202.
  server_->Put(R"(/v1/artifacts/(sha256:[0-9a-f]{64}))", [this](const httplib::Request& req, httplib::Response& res) {
    auto caller = Admit(req, res, "UploadArtifact", Gate::None());
    if (!caller) return;
    auto piece = PieceOf(req, req.matches[1]);
    if (!piece.ok()) return SendError(res, piece.status());
    auto done = ReceivePiece(c_, *piece, req.body, caller->account, "account " + caller->account);
    if (!done.ok()) return SendError(res, done.status());
    if (!*done) {
      res.status = 202;
      v1::ArtifactStat kept;
      kept.set_digest(piece->digest);
      kept.set_partial_bytes(piece->offset + req.body.size());
      return SendMessage(res, kept);
    }
    res.status = 201;
    SendMessage(res, **done);
  });
  // An image from blobs already PUT above: {"archiveDigest"} a whole OCI
  // archive (kind=image), or {"manifestDigest"} a manifest whose config and
  // layers are each stored, as `idlegrid image push` registers them.
  server_->Post("/v1/images", [this](const httplib::Request& req, httplib::Response& res) {
    auto caller = Admit(req, res, "RegisterImage", Gate::None());  // who, before reading what
    if (!caller) return;
    auto body = ParseBody<v1::RegisterImageRequest>(req.body);
    if (!body.ok()) return SendError(res, body.status());
    if (Status may = gate_.Check(*caller, RequesterMethod("RegisterImage"), RegisterImageTarget(gate_, *body));
        !may.ok()) {
      return SendError(res, may);
    }
    auto image = RegisterImage(c_, gate_, *caller, *body);
    if (!image.ok()) return SendError(res, image.status());
    res.status = 201;
    SendMessage(res, *image);
  });
  server_->Get(R"(/v1/artifacts/(sha256:[0-9a-f]{64})/stat)",
               [this](const httplib::Request& req, httplib::Response& res) {
                 auto caller = Admit(req, res, "StatArtifacts", Gate::None());
                 if (!caller) return;
                 const std::string download = RequesterMethod("DownloadArtifact");
                 auto may_read = [&](const std::string& digest) -> Result<bool> {
                   IG_ASSIGN_OR_RETURN(auth::Target target, gate_.Artifact(digest).lookup(*caller));
                   return auth::Authorize(*caller, download, target).ok();
                 };
                 SendResult(res, StatArtifact(c_, req.matches[1], "account " + caller->account, may_read));
               });
}

}  // namespace idlegrid::api
