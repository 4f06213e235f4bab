// The cross-tenant battery (issue 11): every method of the requester and
// agent services, enumerated from the protobuf descriptors so a new method
// cannot be forgotten, is called over gRPC with another tenant's token, an
// agent's credential, an expired token, a revoked token and no token; the
// HTTP/JSON routes likewise. Each call is refused, or (for the few calls
// anyone may make, such as a listing) answers without a trace of the victim's
// objects; afterwards the victim's objects are unchanged.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "api/grpc_services.h"
#include "api/gate.h"
#include "api/http_api.h"
#include "artifacts/artifact_store.h"
#include "auth/authz.h"
#include "common/clock.h"
#include "common/digest.h"
#include "common/test_support.h"
#include "coordinator/coordinator.h"
#include "pki/pki.h"
#include "sched/pipeline.h"
#include "store/store.h"

namespace idlegrid::api {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::MethodDescriptor;

const std::string kImage = "sha256:" + std::string(64, 'b');
const std::string kArchive = "sha256:" + std::string(64, 'd');
const std::string kAliceBlob = "sha256:" + std::string(64, 'a');
// alice's private image (its archive is her blob): AddImageSignature names it.
const std::string kAliceImage = "sha256:" + std::string(64, 'e');
constexpr char kAgentCredential[] = "iga_provs-node-credential";

struct Credential {
  std::string name;
  std::string token;  // "" = none
  bool agent = false;
};

struct CallResult {
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string message;
  std::string responses;  // every response message, serialized, concatenated
  int messages = 0;
};

class TenancyBatteryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::OpenSqliteStore(dir_.path() + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto artifacts = std::make_unique<artifacts::ArtifactStore>(dir_.path() + "/artifacts");
    ASSERT_TRUE(artifacts->Init().ok());
    ASSERT_TRUE((*store)->RegisterImage({kImage, "sha256:" + std::string(64, 'c'), kArchive}, 1000).ok());
    // The battery sends many bad tokens from one address on purpose; the
    // failed-authentication limit has its own test below.
    coordinator::Options options;
    options.rate_limits.failed_auth_per_peer = {0, 0};
    c_ = std::make_unique<coordinator::Coordinator>(std::move(*store), std::move(artifacts),
                                                    sched::NewPipelineScheduler(), "join-secret", options, &clock_);
    auto& t = c_->tenancy();
    for (auto [name, role] :
         {std::pair{"alice", "requester"}, {"bob", "requester"}, {"prov", "provider"}, {"prov2", "provider"}}) {
      v1::Account a;
      a.set_name(name);
      a.set_role(role);
      ASSERT_TRUE(t.CreateAccount(a).ok()) << name;
    }
    auth::Caller op{auth::Role::kOperator, ~0u, store::kOperatorAccount, ""};
    auto mint = [&](const std::string& account, uint32_t expires_seconds) {
      v1::CreateTokenRequest req;
      req.set_account(account);
      req.set_expires_seconds(expires_seconds);
      auto made = t.CreateToken(op, req);
      EXPECT_TRUE(made.ok()) << made.status().ToString();
      return made.ok() ? *made : v1::CreateTokenResponse();
    };
    auto alice = mint("alice", 0);
    alice_token_ = alice.token();
    alice_token_id_ = alice.info().id();
    operator_token_ = mint(store::kOperatorAccount, 0).token();
    const std::string bob = mint("bob", 0).token();
    const std::string expired = mint("bob", 60).token();
    auto revoked = mint("bob", 0);
    ASSERT_TRUE(t.RevokeToken(revoked.info().id()).ok());
    const std::string prov2 = mint("prov2", 0).token();
    prov_token_ = mint("prov", 0).token();

    // prov's node (the agent credential is its token), and another node
    // holding an attempt of alice's job.
    store::NodeRecord node{"n-prov", "prov-box"};
    node.provider = "prov";
    ASSERT_TRUE(c_->store()->UpsertNode(node, Sha256Digest(kAgentCredential)).ok());
    store::NodeRecord other{"n-other", "other-box"};
    other.provider = "prov";
    ASSERT_TRUE(c_->store()->UpsertNode(other, Sha256Digest("iga_other")).ok());

    // The image is the operator's, public so tenants may run it.
    ASSERT_TRUE(c_->store()->RecordArtifact(kArchive, 10, "image", 1).ok());
    ASSERT_TRUE(c_->store()->SetArtifactPublic(kArchive).ok());
    v1::SubmitJobRequest submit;
    *submit.mutable_spec() = SpecFor("alices-secret-sweep");
    auto job = c_->jobs().Submit(submit, "alice");
    ASSERT_TRUE(job.ok()) << job.status().ToString();
    alice_job_ = job->id();
    auto committed = c_->store()->CommitAssignments({{"att-alice-1", alice_job_, 0, "n-other", clock_.NowMs()}});
    ASSERT_TRUE(committed.ok() && committed->size() == 1u);
    auto flow = c_->workflows().Submit(WorkflowFor("alices-secret-flow"), "alice");
    ASSERT_TRUE(flow.ok()) << flow.status().ToString();
    alice_workflow_ = flow->id();
    ASSERT_TRUE(c_->store()->RecordArtifact(kAliceBlob, 7, "input", 1).ok());
    ASSERT_TRUE(c_->artifact_rights().HoldUpload(kAliceBlob, "alice", false).ok());
    ASSERT_TRUE(c_->store()->RegisterImage({kAliceImage, "sha256:" + std::string(64, 'f'), kAliceBlob}, 1).ok());

    clock_.AdvanceMs(61'000);  // the 60 s token has expired
    creds_ = {{"another tenant", bob},
              {"another provider", prov2},
              {"an agent's credential", kAgentCredential, true},
              {"an expired token", expired},
              {"a revoked token", revoked.token()},
              {"no token", ""}};

    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    requester_ = NewRequesterService(c_.get());
    agent_ = NewAgentService(c_.get());
    builder.RegisterService(requester_.get());
    builder.RegisterService(agent_.get());
    server_ = builder.BuildAndStart();
    ASSERT_TRUE(server_ && port != 0);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());

    ASSERT_TRUE(pki::LoadOrCreate(dir_.path() + "/pki", {}).ok());
    http_ = std::make_unique<HttpApi>(c_.get(), dir_.path() + "/pki/server.crt", dir_.path() + "/pki/server.key");
    auto http_port = http_->Start("127.0.0.1", 0);
    ASSERT_TRUE(http_port.ok());
    http_client_ = std::make_unique<httplib::SSLClient>("127.0.0.1", *http_port);
    http_client_->set_ca_cert_path((dir_.path() + "/pki/ca.crt").c_str());
    http_client_->enable_server_certificate_verification(true);
  }

  void TearDown() override {
    if (http_) http_->Stop();
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
  }

  static v1::JobSpec SpecFor(const std::string& name) {
    v1::JobSpec spec;
    spec.set_api_version("idlegrid/v1");
    spec.set_name(name);
    spec.set_image(kImage);
    spec.add_command("/sim");
    return spec;
  }

  static v1::SubmitWorkflowRequest WorkflowFor(const std::string& name) {
    v1::SubmitWorkflowRequest req;
    req.mutable_spec()->set_api_version("idlegrid/v1");
    req.mutable_spec()->set_name(name);
    v1::WorkflowStepSpec* step = req.mutable_spec()->add_steps();
    step->set_name(name + "-step");
    *step->mutable_job() = SpecFor(name + "-step");
    return req;
  }

  // A request for `method` naming the victim's objects wherever it can.
  std::string RequestFor(const MethodDescriptor* method) {
    std::unique_ptr<Message> m(
        google::protobuf::MessageFactory::generated_factory()->GetPrototype(method->input_type())->New());
    const auto* refl = m->GetReflection();
    const auto* desc = m->GetDescriptor();
    auto set = [&](const char* field, const std::string& value) {
      if (const FieldDescriptor* f = desc->FindFieldByName(field);
          f && f->type() == FieldDescriptor::TYPE_STRING && !f->is_repeated()) {
        refl->SetString(m.get(), f, value);
      }
    };
    set("job_id", alice_job_);
    set("workflow_id", alice_workflow_);
    set("node_id", "n-other");
    set("digest", kAliceBlob);
    set("archive_digest", kAliceBlob);
    set("token_id", alice_token_id_);
    set("account", "alice");
    set("provider", "prov");
    set("attempt_id", "att-alice-1");
    set("join_secret", "not-the-join-secret");
    set("image", kAliceImage);
    set("name", "mallory-box");
    if (auto* req = dynamic_cast<v1::SubmitJobRequest*>(m.get())) *req->mutable_spec() = SpecFor("intruder");
    if (auto* req = dynamic_cast<v1::SubmitWorkflowRequest*>(m.get())) *req = WorkflowFor("intruder");
    if (auto* req = dynamic_cast<v1::CreateAccountRequest*>(m.get())) {
      req->mutable_account()->set_name("mallory");
      req->mutable_account()->set_role("operator");
    }
    if (auto* req = dynamic_cast<v1::ReportAttemptRequest*>(m.get())) req->set_event(v1::EXITED);
    if (auto* req = dynamic_cast<v1::AppendLogsRequest*>(m.get())) {
      auto* chunk = req->add_chunks();
      chunk->set_attempt_id("att-alice-1");
      chunk->set_data("forged output");
    }
    if (auto* req = dynamic_cast<v1::StatArtifactsRequest*>(m.get())) req->add_digests(kAliceBlob);
    if (auto* chunk = dynamic_cast<v1::ArtifactChunk*>(m.get())) {
      chunk->set_data("x");
      chunk->set_size(1);
      chunk->set_digest(Sha256Digest("x"));
    }
    return m->SerializeAsString();
  }

  // Any method over the wire as a stream (unary calls are one message each
  // way); reads at most `max_reads` responses (watches never end by themselves).
  CallResult Call(const std::string& method, const std::string& request, const std::string& token, int max_reads = 3) {
    grpc::GenericStub stub(channel_);
    grpc::CompletionQueue cq;
    grpc::ClientContext ctx;
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    auto call = stub.PrepareCall(&ctx, method, &cq);
    void* tag = nullptr;
    bool ok = false;
    call->StartCall(reinterpret_cast<void*>(1));
    cq.Next(&tag, &ok);
    grpc::Slice slice(request);
    grpc::ByteBuffer buffer(&slice, 1);
    call->WriteLast(buffer, grpc::WriteOptions(), reinterpret_cast<void*>(2));
    cq.Next(&tag, &ok);
    CallResult out;
    bool ended = false;
    for (int i = 0; i < max_reads && !ended; ++i) {
      grpc::ByteBuffer response;
      call->Read(&response, reinterpret_cast<void*>(3));
      cq.Next(&tag, &ok);
      if (!ok) {
        ended = true;
        break;
      }
      ++out.messages;
      std::vector<grpc::Slice> slices;
      (void)response.Dump(&slices);
      for (const auto& s : slices) out.responses.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
    // A watch still streaming is cut off (it then ends CANCELLED; its
    // answers so far were read).
    if (!ended) ctx.TryCancel();
    grpc::Status status;
    call->Finish(&status, reinterpret_cast<void*>(4));
    cq.Next(&tag, &ok);
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
    out.code = status.error_code();
    out.message = status.error_message();
    return out;
  }

  // Something of alice's in `text` that the caller did not itself send in
  // `request` (echoing the caller's own id back tells it nothing).
  std::string Leak(const std::string& text, const std::string& request = "") const {
    for (const std::string& secret : {alice_job_, std::string("alices-secret-sweep"), kAliceBlob, alice_token_id_,
                                      std::string("att-alice-1"), std::string("n-other")}) {
      if (request.find(secret) != std::string::npos) continue;
      if (text.find(secret) != std::string::npos) return secret;
    }
    return "";
  }

  idlegrid::testing::TempDir dir_{"igbattery"};
  ManualClock clock_;
  std::unique_ptr<coordinator::Coordinator> c_;
  std::unique_ptr<v1::RequesterService::Service> requester_;
  std::unique_ptr<v1::AgentService::Service> agent_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<HttpApi> http_;
  std::unique_ptr<httplib::SSLClient> http_client_;
  std::vector<Credential> creds_;
  std::string alice_workflow_;
  std::string alice_job_, alice_token_, alice_token_id_, operator_token_, prov_token_;
};

// Calls a tenant may make whatever objects exist, because they name none of
// anyone else's: they must then answer without the victim's data.
const std::set<std::string> kOpenToTenants = {"SubmitJob",      "ListJobs",       "ListNodes",     "WatchNodes",
                                              "GetMarket",      "UploadArtifact", "StatArtifacts", "ListAccounts",
                                              "SubmitWorkflow", "ListWorkflows"};
// An agent acting as itself (its own stream and heartbeat).
const std::set<std::string> kOpenToAgents = {"Connect", "Heartbeat"};

bool Refused(grpc::StatusCode code) {
  return code == grpc::StatusCode::NOT_FOUND || code == grpc::StatusCode::PERMISSION_DENIED ||
         code == grpc::StatusCode::UNAUTHENTICATED;
}

TEST_F(TenancyBatteryTest, EveryMethodRefusesEveryoneButTheOwnerOverGrpc) {
  int calls = 0;
  const auto* pool = google::protobuf::DescriptorPool::generated_pool();
  const auto* agent_service = pool->FindServiceByName("idlegrid.v1.AgentService");
  for (const auto* service : {pool->FindServiceByName("idlegrid.v1.RequesterService"), agent_service}) {
    ASSERT_NE(service, nullptr);
    for (int i = 0; i < service->method_count(); ++i) {
      const MethodDescriptor* method = service->method(i);
      const std::string full = "/" + service->full_name() + "/" + method->name();
      ASSERT_NE(auth::RuleFor(full), nullptr) << full << " has no authorization rule";
      const bool agent_call = service == agent_service;
      for (const Credential& cred : creds_) {
        if (agent_call && cred.agent && kOpenToAgents.count(method->name())) continue;
        const std::string request = RequestFor(method);
        CallResult r = Call(full, request, cred.token, method->server_streaming() ? 1 : 3);
        ++calls;
        const bool tenant_may = !agent_call && !cred.agent && kOpenToTenants.count(method->name()) &&
                                (cred.name == "another tenant" || cred.name == "another provider");
        const bool answered =
            r.code == grpc::StatusCode::OK || (r.code == grpc::StatusCode::CANCELLED && r.messages > 0);
        if (tenant_may && answered) {
          EXPECT_EQ(Leak(r.responses, request), "") << full << " with " << cred.name << " answered with alice's data";
          continue;
        }
        EXPECT_TRUE(Refused(r.code)) << full << " with " << cred.name << " was not refused: " << r.code << " "
                                     << r.message;
        EXPECT_EQ(Leak(r.message, request), "")
            << full << " with " << cred.name << " leaked in its error: " << r.message;
      }
    }
  }
  EXPECT_GT(calls, 100);

  // Nothing of alice's was touched, and no account was made.
  auto job = c_->jobs().Get(alice_job_);
  ASSERT_TRUE(job.ok());
  ASSERT_EQ(job->tasks_size(), 1);
  EXPECT_EQ(job->tasks(0).state(), v1::ASSIGNED) << "the battery must not cancel, delete or report on alice's job";
  auto tokens = c_->tenancy().ListTokens("alice");
  ASSERT_TRUE(tokens.ok());
  for (const auto& tok : tokens->tokens()) EXPECT_FALSE(tok.revoked());
  EXPECT_FALSE(c_->store()->GetAccount("mallory")->has_value());
  auto node = c_->store()->GetNode("n-other");
  ASSERT_TRUE(node.ok() && node->has_value());
  EXPECT_FALSE((*node)->draining);
  auto logs = c_->jobs().ReadLogs(alice_job_, 0, 0);
  ASSERT_TRUE(logs.ok());
  EXPECT_TRUE(logs->empty()) << "a forged log line was stored";
  EXPECT_TRUE(c_->images().SignaturesOf(kAliceImage).empty()) << "a signature was added to alice's image";
  auto flow = c_->workflows().Get(alice_workflow_);
  ASSERT_TRUE(flow.ok());
  EXPECT_EQ(flow->state(), "running") << "the battery must not cancel alice's workflow";
}

// The owner's own calls pass the same gate (the battery above would pass if
// every call were refused).
TEST_F(TenancyBatteryTest, TheOwnerAndTheOperatorGetThroughOverGrpc) {
  const std::string get = "/idlegrid.v1.RequesterService/GetJob";
  v1::GetJobRequest req;
  req.set_job_id(alice_job_);
  for (const std::string& token : {alice_token_, operator_token_}) {
    CallResult r = Call(get, req.SerializeAsString(), token);
    EXPECT_EQ(r.code, grpc::StatusCode::OK) << r.message;
    v1::Job job;
    ASSERT_TRUE(job.ParseFromString(r.responses));
    EXPECT_EQ(job.id(), alice_job_);
    EXPECT_EQ(job.account(), "alice");
  }
  // alice's listing holds her job; the other tenant's does not.
  CallResult mine = Call("/idlegrid.v1.RequesterService/ListJobs", "", alice_token_);
  ASSERT_EQ(mine.code, grpc::StatusCode::OK);
  EXPECT_NE(mine.responses.find(alice_job_), std::string::npos);
}

// What ran on a node is its provider's to read, without what is the
// requester's (the attempt's message and outputs); operators read it whole.
TEST_F(TenancyBatteryTest, ANodesProviderReadsItsHistoryWithoutTheRequestersOutputs) {
  v1::ReportAttemptRequest started;
  started.set_attempt_id("att-alice-1");
  started.set_event(v1::STARTED);
  ASSERT_TRUE(c_->store()->ApplyAttemptReport("n-other", started, clock_.NowMs()).ok());
  v1::ReportAttemptRequest exited = started;
  exited.set_event(v1::EXITED);
  exited.set_exit_code(3);
  exited.set_message("alices-secret-message");
  v1::OutputFile* out = exited.add_outputs();
  out->set_path("alices-secret-output.txt");
  out->set_digest(kAliceBlob);
  out->set_size(7);
  ASSERT_TRUE(c_->store()->ApplyAttemptReport("n-other", exited, clock_.NowMs() + 5000).ok());

  v1::ListNodeAttemptsRequest req;
  req.set_node_id("n-other");
  const std::string method = "/idlegrid.v1.RequesterService/ListNodeAttempts";
  for (const std::string& token : {prov_token_, operator_token_}) {
    CallResult r = Call(method, req.SerializeAsString(), token);
    ASSERT_EQ(r.code, grpc::StatusCode::OK) << r.message;
    v1::ListNodeAttemptsResponse page;
    ASSERT_TRUE(page.ParseFromString(r.responses));
    ASSERT_EQ(page.attempts_size(), 1) << page.DebugString();
    const v1::NodeAttempt& a = page.attempts(0);
    EXPECT_EQ(a.job_id(), alice_job_);
    EXPECT_EQ(a.attempt().id(), "att-alice-1");
    EXPECT_EQ(a.attempt().exit_code(), 3);
    EXPECT_EQ(a.attempt().finished_at_ms() - a.attempt().started_at_ms(), 5000);
    EXPECT_TRUE(page.next_page_token().empty()) << "one attempt is the last page";
    const bool op = token == operator_token_;
    EXPECT_EQ(a.attempt().message(), op ? "alices-secret-message" : "");
    EXPECT_EQ(a.attempt().outputs_size(), op ? 1 : 0);
  }
  // A full page names the next; following it past the last attempt is an
  // empty page that names none.
  req.set_limit(1);
  v1::ListNodeAttemptsResponse first, second;
  CallResult r1 = Call(method, req.SerializeAsString(), prov_token_);
  ASSERT_EQ(r1.code, grpc::StatusCode::OK) << r1.message;
  ASSERT_TRUE(first.ParseFromString(r1.responses));
  ASSERT_EQ(first.attempts_size(), 1);
  ASSERT_FALSE(first.next_page_token().empty());
  req.set_page_token(first.next_page_token());
  CallResult r2 = Call(method, req.SerializeAsString(), prov_token_);
  ASSERT_EQ(r2.code, grpc::StatusCode::OK) << r2.message;
  ASSERT_TRUE(second.ParseFromString(r2.responses));
  EXPECT_EQ(second.attempts_size(), 0);
  EXPECT_TRUE(second.next_page_token().empty());
  req.clear_page_token();
  req.clear_limit();
  // alice's own token is a requester's: no node is hers to look into.
  EXPECT_EQ(Call(method, req.SerializeAsString(), alice_token_).code, grpc::StatusCode::PERMISSION_DENIED);
  // Malformed paging is the caller's error, named.
  req.set_page_token("yesterday");
  CallResult bad = Call(method, req.SerializeAsString(), prov_token_);
  EXPECT_EQ(bad.code, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(bad.message.find("page_token"), std::string::npos) << bad.message;
  // Over HTTPS the same page, as JSON.
  auto res = http_client_->Get("/v1/nodes/n-other/attempts?limit=10",
                               httplib::Headers{{"Authorization", "Bearer " + prov_token_}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_NE(res->body.find("att-alice-1"), std::string::npos) << res->body;
  EXPECT_EQ(res->body.find("alices-secret"), std::string::npos) << res->body;
  res = http_client_->Get("/v1/nodes/n-other/attempts?limit=501",
                          httplib::Headers{{"Authorization", "Bearer " + prov_token_}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
}

struct Route {
  const char* method;
  std::string path;
};

TEST_F(TenancyBatteryTest, EveryRouteRefusesEveryoneButTheOwnerOverHttp) {
  const std::vector<Route> routes = {
      {"GET", "/v1/jobs/" + alice_job_},
      {"DELETE", "/v1/jobs/" + alice_job_},
      {"POST", "/v1/jobs/" + alice_job_ + "/cancel"},
      {"GET", "/v1/jobs/" + alice_job_ + "/explain"},
      {"GET", "/v1/jobs"},
      {"GET", "/v1/nodes"},
      {"GET", "/v1/market"},
      {"GET", "/metrics"},
      {"GET", "/v1/accounts"},
      {"POST", "/v1/jobs"},
      {"GET", "/v1/jobs/" + alice_job_ + "/logs"},
      {"GET", "/v1/history"},
      {"POST", "/v1/jobs/" + alice_job_ + "/retry"},
      {"GET", "/v1/jobs/" + alice_job_ + "/receipt?task=0"},
      {"GET", "/v1/workflows/" + alice_workflow_},
      {"POST", "/v1/workflows/" + alice_workflow_ + "/cancel"},
      {"GET", "/v1/workflows"},
      {"POST", "/v1/workflows"},
      {"GET", "/v1/jobs/" + alice_job_ + "?state=assigned&limit=5"},
      {"GET", "/v1/jobs/" + alice_job_ + "/logs?task=0&stream=stderr"},
      {"GET", "/v1/jobs/" + alice_job_ + "/webhooks"},
      {"GET", "/v1/workflows/" + alice_workflow_ + "/webhooks"},
      {"POST", "/v1/nodes/n-other/drain"},
      {"GET", "/v1/nodes/n-other/attempts"},
      {"GET", "/v1/ledger/balance?account=alice"},
      {"GET", "/v1/ledger/history?account=alice"},
      {"GET", "/v1/earnings?provider=prov"},
      {"POST", "/v1/images"},
  };
  // Routes any tenant may call (answered, or refused for a malformed body).
  const std::set<std::string> open = {"/v1/jobs",    "/v1/nodes",     "/v1/market", "/v1/accounts",
                                      "/v1/history", "/v1/workflows", "/v1/images"};
  for (const Route& r : routes) {
    for (const Credential& cred : creds_) {
      httplib::Headers headers;
      if (!cred.token.empty()) headers.emplace("Authorization", "Bearer " + cred.token);
      httplib::Result res = std::string(r.method) == "POST"
                                ? http_client_->Post(r.path, headers, R"({"spec": {"name": "x"}})", "application/json")
                            : std::string(r.method) == "DELETE" ? http_client_->Delete(r.path, headers)
                                                                : http_client_->Get(r.path, headers);
      ASSERT_TRUE(res) << r.path;
      EXPECT_EQ(Leak(res->body, r.path), "") << r.method << " " << r.path << " with " << cred.name << ": " << res->body;
      const bool tenant = cred.name == "another tenant" || cred.name == "another provider";
      if (tenant && open.count(r.path) && (res->status == 200 || res->status == 400)) continue;
      EXPECT_TRUE(res->status == 401 || res->status == 403 || res->status == 404)
          << r.method << " " << r.path << " with " << cred.name << ": " << res->status << " " << res->body;
    }
  }
  EXPECT_EQ(c_->jobs().Get(alice_job_)->tasks(0).state(), v1::ASSIGNED);
  EXPECT_NE(c_->workflows().Get(alice_workflow_)->state(), "cancelled");
}

}  // namespace
}  // namespace idlegrid::api

namespace idlegrid::api {
namespace {

// A flood of bad tokens from one address, or of calls with one token, is
// answered ResourceExhausted; other callers keep being served.
TEST(RateLimitTest, FloodsAreAnsweredCheaplyAndOthersKeepBeingServed) {
  idlegrid::testing::TempDir dir("igrate");
  auto store = store::OpenSqliteStore(dir.path() + "/state.db");
  ASSERT_TRUE(store.ok());
  auto artifacts = std::make_unique<artifacts::ArtifactStore>(dir.path() + "/artifacts");
  ASSERT_TRUE(artifacts->Init().ok());
  ManualClock clock;
  coordinator::Options options;
  options.rate_limits.per_token = {10, 20};
  options.rate_limits.failed_auth_per_peer = {5, 10};
  coordinator::Coordinator c(std::move(*store), std::move(artifacts), sched::NewPipelineScheduler(), "join", options,
                             &clock);
  auto flooder = c.tenancy().CreateOperatorToken("flooder");
  auto other = c.tenancy().CreateOperatorToken("other");
  ASSERT_TRUE(flooder.ok() && other.ok());
  Gate gate(&c);
  const std::string method = RequesterMethod("ListJobs");
  int admitted = 0;
  Status last;
  for (int i = 0; i < 100; ++i) {
    auto r = gate.Admit(method, "Bearer " + *flooder, Gate::None(), "10.0.0.1");
    if (r.ok())
      ++admitted;
    else
      last = r.status();
  }
  EXPECT_EQ(admitted, 20) << "the burst, then nothing in the same instant";
  EXPECT_EQ(last.code(), Code::kResourceExhausted);
  EXPECT_NE(last.message().find("retry in"), std::string::npos) << last.message();
  EXPECT_TRUE(gate.Admit(method, "Bearer " + *other, Gate::None(), "10.0.0.1").ok()) << "another token is served";
  clock.AdvanceMs(1000);
  EXPECT_TRUE(gate.Admit(method, "Bearer " + *flooder, Gate::None(), "10.0.0.1").ok()) << "refilled a second later";

  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(gate.Admit(method, "Bearer igt_guess" + std::to_string(i), Gate::None(), "10.6.6.6").status().code(),
              Code::kUnauthenticated);
  }
  auto blocked = gate.Admit(method, "Bearer igt_guess-more", Gate::None(), "10.6.6.6");
  EXPECT_EQ(blocked.status().code(), Code::kResourceExhausted) << "a guesser is stopped before any lookup";
  EXPECT_TRUE(gate.Admit(method, "Bearer " + *other, Gate::None(), "10.0.0.2").ok()) << "other addresses are served";
  EXPECT_EQ(PeerHost("ipv4:127.0.0.1:5555"), "127.0.0.1");
  EXPECT_EQ(PeerHost("ipv6:[::1]:5555"), "[::1]");
  EXPECT_EQ(PeerHost("10.1.2.3"), "10.1.2.3");
}

}  // namespace
}  // namespace idlegrid::api
