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
#include "api/visibility.h"
#include "metrics/load_history.h"
#include "receipt/receipt_json.h"
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

// The chunks after a cursor, as {"chunks": [LogChunk...], "next": N}: N is
// the cursor for the next read (the last chunk's seq, or `after` when none).
void SendLogChunks(httplib::Response& res, const std::vector<v1::LogChunk>& chunks, int64_t after) {
  google::protobuf::util::JsonPrintOptions opts;
  std::string out = "{\"chunks\":[";
  for (size_t i = 0; i < chunks.size(); ++i) {
    std::string one;
    if (!google::protobuf::util::MessageToJsonString(chunks[i], &one, opts).ok()) {
      return SendError(res, Status::Internal("cannot encode log chunk"));
    }
    if (i) out += ",";
    out += one;
    after = chunks[i].seq();
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

// A request about the job in the path, from an optional JSON body (empty:
// only the job id). A body naming another job is InvalidArgument.
template <typename Request>
Result<Request> JobBody(const std::string& body, const std::string& job_id) {
  Request out;
  if (!body.empty()) {
    IG_ASSIGN_OR_RETURN(out, ParseBody<Request>(body));
  }
  if (!out.job_id().empty() && out.job_id() != job_id) {
    return Status::InvalidArgument("the body names job " + out.job_id() + ", the path " + job_id);
  }
  out.set_job_id(job_id);
  return out;
}

// The log cursor of a logs request: ?after=SEQ, 0 when absent.
Result<int64_t> LogCursor(const httplib::Request& req) {
  int64_t after = 0;
  if (req.has_param("after")) {
    const std::string text = req.get_param_value("after");
    char* end = nullptr;
    after = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || after < 0) {
      return Status::InvalidArgument("after: not a log sequence number: " + text);
    }
  }
  return after;
}

// GetReceipt's request from a receipt request's path and ?task=N&attempt=ID.
Result<v1::GetReceiptRequest> ReceiptQuery(const httplib::Request& req) {
  v1::GetReceiptRequest query;
  query.set_job_id(std::string(req.matches[1]));
  if (req.has_param("task")) {
    const std::string text = req.get_param_value("task");
    char* end = nullptr;
    const unsigned long long index = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || text[0] == '-' || *end != '\0' || index > UINT32_MAX) {
      return Status::InvalidArgument("task: not a task index: " + text);
    }
    query.set_task_index(static_cast<uint32_t>(index));
  }
  if (req.has_param("attempt")) query.set_attempt_id(req.get_param_value("attempt"));
  return query;
}

}  // namespace

HttpApi::HttpApi(coordinator::Coordinator* c, const std::string& cert_file, const std::string& key_file)
    : c_(c), gate_(c), server_(std::make_unique<httplib::SSLServer>(cert_file.c_str(), key_file.c_str())) {
  Routes();
}

HttpApi::~HttpApi() { Stop(); }

void HttpApi::Routes() {
  JobRoutes();
  NodeRoutes();
  JobDetailRoutes();
  WorkflowRoutes();
  HistoryRoutes();
  ServeDashboard(*server_);
  MetricsRoutes();
  MarketAndAccountRoutes();
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
    SendResult(res, c_->jobs().Get(req.matches[1]));
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
}

// What a job did and why: its scheduling explanation, logs and receipt.
void HttpApi::JobDetailRoutes() {
  server_->Get(R"(/v1/jobs/([A-Za-z0-9-]+)/explain)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, "ExplainJob", gate_.Job(req.matches[1]))) return;
    SendResult(res, c_->dispatcher().Explain(req.matches[1]));
  });
  // Log chunks after ?after=SEQ (default 0), at most a few hundred per call:
  // the dashboard polls with the returned cursor (gRPC's StreamLogs follows).
  server_->Get(R"(/v1/jobs/([A-Za-z0-9-]+)/logs)", [this](const httplib::Request& req, httplib::Response& res) {
    if (!Admit(req, res, "StreamLogs", gate_.Job(req.matches[1]))) return;
    auto after = LogCursor(req);
    if (!after.ok()) return SendError(res, after.status());
    auto chunks = c_->jobs().ReadLogs(req.matches[1], *after, 0);
    if (!chunks.ok()) return SendError(res, chunks.status());
    SendLogChunks(res, *chunks, *after);
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
