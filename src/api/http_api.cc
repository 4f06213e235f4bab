#include "api/http_api.h"

#include <google/protobuf/util/json_util.h>
#include <httplib.h>

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

template <typename T>
void SendResult(httplib::Response& res, const Result<T>& r) {
  if (!r.ok()) return SendError(res, r.status());
  SendMessage(res, r.value());
}

}  // namespace

HttpApi::HttpApi(coordinator::Coordinator* c, const std::string& cert_file, const std::string& key_file)
    : c_(c), server_(std::make_unique<httplib::SSLServer>(cert_file.c_str(), key_file.c_str())) {
  Routes();
}

HttpApi::~HttpApi() { Stop(); }

void HttpApi::Routes() {
  auto authed = [this](const httplib::Request& req, httplib::Response& res) {
    Status st = c_->AuthenticateRequester(req.get_header_value("Authorization"));
    if (!st.ok()) SendError(res, st);
    return st.ok();
  };
  server_->Post("/v1/jobs", [this, authed](const httplib::Request& req, httplib::Response& res) {
    if (!authed(req, res)) return;
    v1::SubmitJobRequest body;
    auto parsed = google::protobuf::util::JsonStringToMessage(req.body, &body);
    if (!parsed.ok()) {
      return SendError(res, Status::InvalidArgument("request body is not a SubmitJobRequest: " +
                                                    std::string(parsed.message())));
    }
    auto job = c_->SubmitJob(body);
    if (!job.ok()) return SendError(res, job.status());
    v1::SubmitJobResponse out;
    *out.mutable_job() = std::move(job).value();
    res.status = 201;
    SendMessage(res, out);
  });
  server_->Get("/v1/jobs", [this, authed](const httplib::Request& req, httplib::Response& res) {
    if (!authed(req, res)) return;
    SendResult(res, c_->ListJobs());
  });
  server_->Get(R"(/v1/jobs/([A-Za-z0-9-]+))", [this, authed](const httplib::Request& req, httplib::Response& res) {
    if (!authed(req, res)) return;
    SendResult(res, c_->GetJob(req.matches[1]));
  });
  server_->Post(R"(/v1/jobs/([A-Za-z0-9-]+)/cancel)",
                [this, authed](const httplib::Request& req, httplib::Response& res) {
                  if (!authed(req, res)) return;
                  SendResult(res, c_->CancelJob(req.matches[1]));
                });
  server_->Get("/v1/nodes", [this, authed](const httplib::Request& req, httplib::Response& res) {
    if (!authed(req, res)) return;
    SendResult(res, c_->ListNodes());
  });
  server_->Get(R"(/v1/jobs/([A-Za-z0-9-]+)/explain)",
               [this, authed](const httplib::Request& req, httplib::Response& res) {
                 if (!authed(req, res)) return;
                 SendResult(res, c_->ExplainJob(req.matches[1]));
               });
  server_->Get("/metrics", [this, authed](const httplib::Request& req, httplib::Response& res) {
    if (!authed(req, res)) return;
    auto text = c_->Metrics();
    if (!text.ok()) return SendError(res, text.status());
    res.set_content(*text, "text/plain; version=0.0.4");
  });
  server_->Get("/v1/market", [this, authed](const httplib::Request& req, httplib::Response& res) {
    if (!authed(req, res)) return;
    SendResult(res, c_->Market());
  });
  server_->set_payload_max_length(16 << 20);
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

}  // namespace idlegrid::api
