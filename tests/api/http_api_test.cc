// The HTTPS/JSON front door (api/http_api.h) over a real coordinator: every
// route refuses a missing or wrong token, errors are JSON naming the problem,
// and a submission takes the coordinator's own path. TLS is the coordinator's
// own PKI; the client verifies the server against its CA.
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <string>
#include <vector>

#include "api/http_api.h"
#include "artifacts/artifact_store.h"
#include "common/clock.h"
#include "common/digest.h"
#include "common/fs.h"
#include "common/test_support.h"
#include "coordinator/coordinator.h"
#include "pki/pki.h"
#include "receipt/receipt_json.h"
#include "sched/pipeline.h"
#include "store/store.h"

namespace idlegrid::api {
namespace {

const std::string kImage = "sha256:" + std::string(64, 'b');

struct Route {
  const char* method;
  const char* path;
};

// Every route HttpApi serves (kept by hand: httplib cannot list its routes).
const std::vector<Route> kRoutes = {
    {"POST", "/v1/jobs"},
    {"GET", "/v1/jobs"},
    {"GET", "/v1/jobs/j-1"},
    {"GET", "/v1/nodes"},
    {"POST", "/v1/jobs/j-1/cancel"},
    {"GET", "/v1/jobs/j-1/explain"},
    {"GET", "/metrics"},
    {"GET", "/v1/market"},
    {"DELETE", "/v1/jobs/j-1"},
    {"GET", "/v1/accounts"},
    {"POST", "/v1/jobs/j-1/retry"},
    {"GET", "/v1/jobs/j-1/receipt?task=0"},
    {"POST", "/v1/workflows"},
    {"GET", "/v1/workflows"},
    {"GET", "/v1/workflows/w-1"},
    {"POST", "/v1/workflows/w-1/cancel"},
    {"GET", "/v1/workflows/w-1/webhooks"},
    {"GET", "/v1/jobs/j-1/webhooks"},
    {"POST", "/v1/nodes/n-1/drain"},
    {"GET", "/v1/ledger/balance"},
    {"GET", "/v1/ledger/history"},
    {"GET", "/v1/earnings"},
    {"POST", "/v1/images"},
    {"GET", "/v1/artifacts/sha256:0000000000000000000000000000000000000000000000000000000000000000"},
    {"PUT", "/v1/artifacts/sha256:0000000000000000000000000000000000000000000000000000000000000000"},
    {"GET", "/v1/artifacts/sha256:0000000000000000000000000000000000000000000000000000000000000000/stat"},
};

// A response body as JSON (google.protobuf.Struct); fails the test if it is not.
google::protobuf::Struct Json(const std::string& body) {
  google::protobuf::Struct out;
  auto st = google::protobuf::util::JsonStringToMessage(body, &out);
  EXPECT_TRUE(st.ok()) << "not JSON: " << body;
  return out;
}

std::string Field(const google::protobuf::Struct& s, const std::string& name) {
  auto it = s.fields().find(name);
  return it == s.fields().end() ? "" : it->second.string_value();
}

// Every route is called with bad tokens on purpose: the failed-authentication
// limit per address is off here (tenancy_battery_test checks it).
coordinator::Options Options() {
  coordinator::Options o;
  o.rate_limits.failed_auth_per_peer = {0, 0};
  return o;
}

class HttpApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::OpenSqliteStore(dir_.path() + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    auto artifacts = std::make_unique<artifacts::ArtifactStore>(dir_.path() + "/artifacts");
    ASSERT_TRUE(artifacts->Init().ok());
    ASSERT_TRUE((*store)
                    ->RegisterImage({kImage, "sha256:" + std::string(64, 'c'), "sha256:" + std::string(64, 'd')}, 1000)
                    .ok());
    coordinator_ = std::make_unique<coordinator::Coordinator>(
        std::move(*store), std::move(artifacts), sched::NewPipelineScheduler(), "join-secret", Options(), &clock_);
    auto token = coordinator_->tenancy().CreateOperatorToken("test");
    ASSERT_TRUE(token.ok()) << token.status().ToString();
    token_ = *token;
    auto pki = pki::LoadOrCreate(dir_.path() + "/pki", {});
    ASSERT_TRUE(pki.ok()) << pki.status().ToString();
    http_ =
        std::make_unique<HttpApi>(coordinator_.get(), dir_.path() + "/pki/server.crt", dir_.path() + "/pki/server.key");
    auto port = http_->Start("127.0.0.1", 0);
    ASSERT_TRUE(port.ok()) << port.status().ToString();
    client_ = std::make_unique<httplib::SSLClient>("127.0.0.1", *port);
    client_->set_ca_cert_path((dir_.path() + "/pki/ca.crt").c_str());
    client_->enable_server_certificate_verification(true);
  }

  void TearDown() override {
    if (http_) http_->Stop();
  }

  httplib::Result Call(const std::string& method, const std::string& path, const std::string& body = "",
                       const std::string& token = "<admin>") {
    httplib::Headers headers;
    const std::string t = token == "<admin>" ? token_ : token;
    if (!t.empty()) headers.emplace("Authorization", "Bearer " + t);
    if (method == "POST") return client_->Post(path, headers, body, "application/json");
    if (method == "DELETE") return client_->Delete(path, headers);
    if (method == "PUT") return client_->Put(path, headers, body, "application/octet-stream");
    return client_->Get(path, headers);
  }

  std::string SubmitBody(const std::string& name, const std::string& image = kImage) {
    return R"({"spec": {"apiVersion": "idlegrid/v1", "name": ")" + name + R"(", "image": ")" + image +
           R"(", "command": ["/sim"]}})";
  }

  idlegrid::testing::TempDir dir_{"igapi"};
  ManualClock clock_;
  std::unique_ptr<coordinator::Coordinator> coordinator_;
  std::string token_;
  std::unique_ptr<HttpApi> http_;
  std::unique_ptr<httplib::SSLClient> client_;
};

TEST_F(HttpApiTest, EveryRouteRefusesAMissingOrWrongTokenWithAJsonError) {
  for (const Route& r : kRoutes) {
    for (const std::string& token : {std::string(), std::string("igt_not-a-token")}) {
      auto res = Call(r.method, r.path, SubmitBody("x"), token);
      ASSERT_TRUE(res) << r.method << " " << r.path << ": " << httplib::to_string(res.error());
      EXPECT_EQ(res->status, 401) << r.method << " " << r.path << " token '" << token << "': " << res->body;
      EXPECT_EQ(Field(Json(res->body), "code"), "Unauthenticated") << r.path;
    }
  }
  auto jobs = coordinator_->jobs().List("");
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->jobs_size(), 0) << "a refused submission must create nothing";
}

// Health probes need no token and say nothing but whether this process serves.
TEST_F(HttpApiTest, HealthzAnswersAtOnceAndReadyzOnlyWhileTheCoordinatorIsReady) {
  auto health = Call("GET", "/healthz", "", "");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok\n");

  auto starting = Call("GET", "/readyz", "", "");
  ASSERT_TRUE(starting);
  EXPECT_EQ(starting->status, 503) << "not marked ready yet: " << starting->body;
  EXPECT_NE(starting->body.find("starting"), std::string::npos) << starting->body;

  http_->SetReady(true);
  auto ready = Call("GET", "/readyz", "", "");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200) << ready->body;
  EXPECT_EQ(ready->body, "ready\n");

  http_->SetReady(false);  // shutting down
  auto stopping = Call("GET", "/readyz", "", "");
  ASSERT_TRUE(stopping);
  EXPECT_EQ(stopping->status, 503) << stopping->body;
}

TEST_F(HttpApiTest, SubmissionTakesTheCoordinatorsPathAndTheJobCanBeReadListedAndCancelled) {
  auto res = Call("POST", "/v1/jobs", SubmitBody("viahttp"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  v1::SubmitJobResponse submitted;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(res->body, &submitted).ok()) << res->body;
  const std::string id = submitted.job().id();
  ASSERT_FALSE(id.empty());
  auto stored = coordinator_->jobs().Get(id);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->spec().name(), "viahttp");

  auto got = Call("GET", "/v1/jobs/" + id);
  ASSERT_TRUE(got);
  ASSERT_EQ(got->status, 200) << got->body;
  v1::Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(got->body, &job).ok()) << got->body;
  EXPECT_EQ(job.id(), id);
  EXPECT_EQ(job.state(), v1::QUEUED);

  auto listed = Call("GET", "/v1/jobs");
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->status, 200) << listed->body;
  v1::ListJobsResponse list;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(listed->body, &list).ok()) << listed->body;
  ASSERT_EQ(list.jobs_size(), 1);
  EXPECT_EQ(list.jobs(0).id(), id);

  auto cancelled = Call("POST", "/v1/jobs/" + id + "/cancel");
  ASSERT_TRUE(cancelled);
  ASSERT_EQ(cancelled->status, 200) << cancelled->body;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(cancelled->body, &job).ok()) << cancelled->body;
  EXPECT_EQ(job.state(), v1::CANCELLED);
  EXPECT_EQ(coordinator_->jobs().Get(id)->state(), v1::CANCELLED);
}

TEST_F(HttpApiTest, AWorkflowIsSubmittedReadListedAndCancelledOverHttp) {
  const std::string step =
      R"({"apiVersion": "idlegrid/v1", "name": "s", "image": ")" + kImage + R"(", "command": ["/sim"]})";
  const std::string body = R"({"spec": {"apiVersion": "idlegrid/v1", "name": "pipe", "steps": [)"
                           R"({"name": "a", "job": )" +
                           step +
                           R"(},)"
                           R"({"name": "b", "dependsOn": ["a"], "job": )" +
                           step + R"(}]}})";
  auto res = Call("POST", "/v1/workflows", body);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  v1::Workflow submitted;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(res->body, &submitted).ok()) << res->body;
  ASSERT_FALSE(submitted.id().empty());
  ASSERT_EQ(submitted.steps_size(), 2);
  auto stored = coordinator_->workflows().Get(submitted.id());
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(stored->spec().name(), "pipe");

  auto got = Call("GET", "/v1/workflows/" + submitted.id());
  ASSERT_TRUE(got);
  ASSERT_EQ(got->status, 200) << got->body;
  v1::Workflow read;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(got->body, &read).ok()) << got->body;
  EXPECT_EQ(read.id(), submitted.id());
  EXPECT_EQ(read.state(), "running");

  auto listed = Call("GET", "/v1/workflows");
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->status, 200) << listed->body;
  v1::ListWorkflowsResponse list;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(listed->body, &list).ok()) << listed->body;
  ASSERT_EQ(list.workflows_size(), 1);
  EXPECT_EQ(list.workflows(0).id(), submitted.id());

  auto cancelled = Call("POST", "/v1/workflows/" + submitted.id() + "/cancel");
  ASSERT_TRUE(cancelled);
  ASSERT_EQ(cancelled->status, 200) << cancelled->body;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(cancelled->body, &read).ok()) << cancelled->body;
  EXPECT_EQ(read.state(), "cancelled");
  EXPECT_EQ(coordinator_->workflows().Get(submitted.id())->state(), "cancelled");

  // A malformed workflow is refused with what is wrong, and nothing is kept.
  auto bad = Call("POST", "/v1/workflows",
                  R"({"spec": {"apiVersion": "idlegrid/v1", "name": "bad", "steps": [{"name": "a", )"
                  R"("dependsOn": ["nope"], "job": )" +
                      step + R"(}]}})");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
  EXPECT_NE(bad->body.find("nope"), std::string::npos) << bad->body;
  EXPECT_EQ(coordinator_->workflows().List("")->workflows_size(), 1);
  auto missing = Call("GET", "/v1/workflows/w-missing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404) << missing->body;
}

// The dashboard's cancel and retry buttons: a body picks tasks; an empty
// cancel body still cancels the whole job (above).
TEST_F(HttpApiTest, CancelTakesTaskIndicesOrStatesAndRetryRunsCancelledTasksAgain) {
  auto res = Call("POST", "/v1/jobs",
                  R"({"spec": {"apiVersion": "idlegrid/v1", "name": "arr", "image": ")" + kImage +
                      R"(", "command": ["/sim"], "arrayCount": 4}})");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  v1::SubmitJobResponse submitted;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(res->body, &submitted).ok()) << res->body;
  const std::string id = submitted.job().id();
  const auto states = [&](const std::string& body) {
    v1::Job job;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(body, &job).ok()) << body;
    std::string out;
    for (const auto& t : job.tasks()) out += std::string(out.empty() ? "" : ",") + v1::TaskState_Name(t.state());
    return out;
  };

  auto by_index = Call("POST", "/v1/jobs/" + id + "/cancel", R"({"taskIndices": [1, 2]})");
  ASSERT_TRUE(by_index);
  ASSERT_EQ(by_index->status, 200) << by_index->body;
  EXPECT_EQ(states(by_index->body), "QUEUED,CANCELLED,CANCELLED,QUEUED");

  auto retried = Call("POST", "/v1/jobs/" + id + "/retry", R"({"taskIndices": [2]})");
  ASSERT_TRUE(retried);
  ASSERT_EQ(retried->status, 200) << retried->body;
  EXPECT_EQ(states(retried->body), "QUEUED,CANCELLED,QUEUED,QUEUED");

  auto by_state = Call("POST", "/v1/jobs/" + id + "/cancel", R"({"states": ["QUEUED"]})");
  ASSERT_TRUE(by_state);
  ASSERT_EQ(by_state->status, 200) << by_state->body;
  EXPECT_EQ(states(by_state->body), "CANCELLED,CANCELLED,CANCELLED,CANCELLED");

  struct Case {
    const char* what;
    std::string path, body;
    int status;
    const char* names;
  };
  const std::vector<Case> cases = {
      {"no failed task", "/v1/jobs/" + id + "/retry", R"({"failed": true})", 409, "no failed tasks"},
      {"nothing selected", "/v1/jobs/" + id + "/retry", "", 400, "no tasks selected"},
      {"unknown index", "/v1/jobs/" + id + "/cancel", R"({"taskIndices": [9]})", 400, "has no task 9"},
      {"another job in the body", "/v1/jobs/" + id + "/cancel", R"({"jobId": "j-other"})", 400, "j-other"},
      {"not a request", "/v1/jobs/" + id + "/retry", R"({"spec": {}})", 400, "RetryJobRequest"},
  };
  for (const Case& c : cases) {
    auto r = Call("POST", c.path, c.body);
    ASSERT_TRUE(r) << c.what;
    EXPECT_EQ(r->status, c.status) << c.what << ": " << r->body;
    EXPECT_NE(Field(Json(r->body), "message").find(c.names), std::string::npos) << c.what << ": " << r->body;
  }
}

// GET /v1/jobs/ID/receipt?task=N: the receipt `idlegrid receipt JOB --task N
// --json` prints, byte for byte (one function writes both), or a JSON error.
TEST_F(HttpApiTest, AReceiptIsServedAsTheCliPrintsIt) {
  auto res = Call("POST", "/v1/jobs", SubmitBody("metered"));
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 201) << res->body;
  v1::SubmitJobResponse submitted;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(res->body, &submitted).ok()) << res->body;
  const std::string id = submitted.job().id();

  auto none = Call("GET", "/v1/jobs/" + id + "/receipt?task=0");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 404) << none->body;
  EXPECT_NE(Field(Json(none->body), "message").find("has no receipt"), std::string::npos) << none->body;

  store::Store* store = coordinator_->store();
  store::NodeRecord node;
  node.id = "n1";
  node.name = "n1";
  ASSERT_TRUE(store->UpsertNode(node, "tok-n1").ok());
  auto assigned = store->CommitAssignments({{"a-1", id, 0, "n1", 1000}});
  ASSERT_TRUE(assigned.ok()) << assigned.status().ToString();
  ASSERT_EQ(assigned->size(), 1u);
  v1::Receipt receipt;
  receipt.set_version(1);
  receipt.set_provider("alice");
  receipt.set_charge_micro(1234);
  receipt.mutable_statement()->set_job_id(id);
  receipt.mutable_statement()->set_attempt_id("a-1");
  receipt.mutable_statement()->mutable_metering()->set_cpu_millis(42);
  receipt.mutable_statement()->mutable_metering()->set_cpu_source("rusage");
  ASSERT_TRUE(store->PutReceipt("a-1", receipt).ok());

  for (const std::string& query : {std::string("?task=0"), std::string(""), std::string("?attempt=a-1")}) {
    auto got = Call("GET", "/v1/jobs/" + id + "/receipt" + query);
    ASSERT_TRUE(got);
    ASSERT_EQ(got->status, 200) << query << ": " << got->body;
    EXPECT_EQ(got->body, receipt::ReceiptJson(receipt)) << query;
    EXPECT_NE(got->body.find("\"cpu_source\": \"rusage\""), std::string::npos) << "proto field names: " << got->body;
  }
  auto other_task = Call("GET", "/v1/jobs/" + id + "/receipt?task=1");
  ASSERT_TRUE(other_task);
  EXPECT_EQ(other_task->status, 404) << other_task->body;
  for (const char* bad : {"x", "-1", "", "99999999999"}) {
    auto refused = Call("GET", "/v1/jobs/" + id + "/receipt?task=" + bad);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 400) << bad << ": " << refused->body;
    EXPECT_EQ(Field(Json(refused->body), "code"), "InvalidArgument") << bad;
  }
}

// An artifact over HTTPS, whole or from an offset (a resumed download), to
// those who may read it; a requester with no claim on it is refused.
TEST_F(HttpApiTest, AnArtifactIsServedWholeOrFromAByteRange) {
  std::string data;
  for (int i = 0; i < 300'000; ++i) data += static_cast<char>('a' + i % 26);
  const std::string digest = Sha256Digest(data);
  auto writer = coordinator_->artifact_store()->NewWriter(digest, data.size());
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE((*writer)->Append(data.data(), data.size()).ok());
  ASSERT_TRUE((*writer)->Commit().ok());
  ASSERT_TRUE(coordinator_->store()->RecordArtifact(digest, data.size(), "output", 1000).ok());

  auto whole = Call("GET", "/v1/artifacts/" + digest);
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  EXPECT_EQ(whole->body, data);
  EXPECT_EQ(whole->get_header_value("ETag"), "\"" + digest + "\"");

  httplib::Headers headers{{"Authorization", "Bearer " + token_}, {"Range", "bytes=123456-"}};
  auto rest = client_->Get("/v1/artifacts/" + digest, headers);
  ASSERT_TRUE(rest);
  ASSERT_EQ(rest->status, 206) << rest->body.substr(0, 200);
  EXPECT_EQ(rest->body, data.substr(123456));
  EXPECT_EQ(rest->get_header_value("Content-Range"), "bytes 123456-299999/300000");

  auto missing = Call("GET", "/v1/artifacts/sha256:" + std::string(64, '0'));
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404) << missing->body;

  v1::Account bob;
  bob.set_name("bob");
  bob.set_role("requester");
  ASSERT_TRUE(coordinator_->tenancy().CreateAccount(bob).ok());
  v1::CreateTokenRequest mint;
  mint.set_account("bob");
  auto bob_token =
      coordinator_->tenancy().CreateToken({auth::Role::kOperator, ~0u, store::kOperatorAccount, "", ""}, mint);
  ASSERT_TRUE(bob_token.ok()) << bob_token.status().ToString();
  auto refused = Call("GET", "/v1/artifacts/" + digest, "", bob_token->token());
  ASSERT_TRUE(refused);
  EXPECT_TRUE(refused->status == 403 || refused->status == 404) << refused->status << " " << refused->body;
  EXPECT_EQ(refused->body.find(data.substr(0, 100)), std::string::npos) << "no byte of the blob";
}

// An upload in pieces over HTTPS: each PUT carries its Content-Range, what
// arrived is kept (stat says how much), a piece that does not start there is
// refused, and the last one answers with the blob, which its uploader then
// reads back; bytes that do not hash to the digest are kept nowhere.
TEST_F(HttpApiTest, AnArtifactIsUploadedInPiecesAndResumedWhereItStopped) {
  std::string data;
  for (int i = 0; i < 250'000; ++i) data += static_cast<char>('A' + i % 23);
  const std::string digest = Sha256Digest(data);
  auto put = [&](size_t from, size_t to) {
    httplib::Headers headers{{"Authorization", "Bearer " + token_},
                             {"Content-Range", "bytes " + std::to_string(from) + "-" + std::to_string(to - 1) + "/" +
                                                   std::to_string(data.size())}};
    return client_->Put("/v1/artifacts/" + digest, headers, data.substr(from, to - from), "application/octet-stream");
  };
  auto first = put(0, 100'000);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 202) << first->body;
  auto stat = Call("GET", "/v1/artifacts/" + digest + "/stat");
  ASSERT_TRUE(stat);
  ASSERT_EQ(stat->status, 200) << stat->body;
  v1::ArtifactStat held;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(stat->body, &held).ok()) << stat->body;
  EXPECT_EQ(held.partial_bytes(), 100'000u);
  EXPECT_FALSE(held.present());

  auto gap = put(150'000, 200'000);  // not where the kept bytes end
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->status, 409) << gap->body;

  ASSERT_EQ(put(100'000, 200'000)->status, 202);
  auto last = put(200'000, data.size());
  ASSERT_TRUE(last);
  ASSERT_EQ(last->status, 201) << last->body;
  v1::ArtifactRef ref;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(last->body, &ref).ok()) << last->body;
  EXPECT_EQ(ref.digest(), digest);
  EXPECT_EQ(ref.size(), data.size());
  auto back = Call("GET", "/v1/artifacts/" + digest);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->status, 200) << back->body.substr(0, 200);
  EXPECT_EQ(back->body, data);

  // Whole in one PUT (no Content-Range), but not the digest's bytes: refused, nothing kept.
  const std::string wrong = "sha256:" + std::string(64, 'e');
  auto bad = Call("PUT", "/v1/artifacts/" + wrong, "these bytes hash to something else");
  ASSERT_TRUE(bad);
  EXPECT_EQ(Field(Json(bad->body), "code"), "DataLoss") << bad->body;
  auto after = Call("GET", "/v1/artifacts/" + wrong + "/stat");
  ASSERT_TRUE(after);
  v1::ArtifactStat none;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(after->body, &none).ok()) << after->body;
  EXPECT_FALSE(none.present());
  EXPECT_EQ(none.partial_bytes(), 0u);

  httplib::Headers lying{{"Authorization", "Bearer " + token_}, {"Content-Range", "bytes 0-99/250000"}};
  auto mismatched = client_->Put("/v1/artifacts/" + wrong, lying, std::string(10, 'x'), "application/octet-stream");
  ASSERT_TRUE(mismatched);
  EXPECT_EQ(mismatched->status, 400) << mismatched->body;
  EXPECT_NE(Field(Json(mismatched->body), "message").find("Content-Range"), std::string::npos) << mismatched->body;
}

// An image pushed over HTTPS by layer, as a curl user (or an SDK) would:
// each blob PUT, then the manifest registered; a manifest naming a blob
// that was never uploaded is refused, naming it, and nothing is registered.
TEST_F(HttpApiTest, AnImageIsRegisteredFromItsUploadedBlobs) {
  auto put = [&](const std::string& bytes) {
    const std::string digest = Sha256Digest(bytes);
    auto res = Call("PUT", "/v1/artifacts/" + digest + "?kind=image", bytes);
    EXPECT_TRUE(res && res->status == 201) << (res ? res->body : httplib::to_string(res.error()));
    return digest;
  };
  const std::string config_bytes = R"({"architecture":"amd64","os":"linux"})";
  const std::string config = put(config_bytes);
  const std::string layer = put("layer bytes");
  auto manifest = [&](const std::string& layer_digest) {
    return R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",)"
           R"("config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":")" +
           config + R"(","size":)" + std::to_string(config_bytes.size()) +
           R"(},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":")" + layer_digest +
           R"(","size":11}]})";
  };
  const std::string missing = Sha256Digest("never uploaded");
  const std::string lacking = put(manifest(missing));
  auto refused = Call("POST", "/v1/images", R"({"manifestDigest": ")" + lacking + R"("})");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 409) << refused->body;
  EXPECT_NE(refused->body.find("layer"), std::string::npos) << refused->body;

  const std::string good = put(manifest(layer));
  auto registered = Call("POST", "/v1/images", R"({"manifestDigest": ")" + good + R"("})");
  ASSERT_TRUE(registered);
  ASSERT_EQ(registered->status, 201) << registered->body;
  EXPECT_EQ(Field(Json(registered->body), "image"), good);
  auto job = Call("POST", "/v1/jobs", SubmitBody("pushed-over-https", good));
  ASSERT_TRUE(job);
  EXPECT_EQ(job->status, 201) << "a job may name the image: " << job->body;
  auto bad = Call("POST", "/v1/images", "not json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
}

TEST_F(HttpApiTest, ErrorsAreJsonWithTheCodeAndWhatIsWrong) {
  struct Case {
    const char* what;
    std::string method, path, body;
    int status;
    const char* code;
    const char* names;  // the message mentions this
  };
  const std::vector<Case> cases = {
      {"unknown job", "GET", "/v1/jobs/j-nosuch", "", 404, "NotFound", "j-nosuch"},
      {"unknown job's cancel", "POST", "/v1/jobs/j-nosuch/cancel", "", 404, "NotFound", "j-nosuch"},
      {"body not JSON", "POST", "/v1/jobs", "{not json", 400, "InvalidArgument", "SubmitJobRequest"},
      {"unknown field", "POST", "/v1/jobs", R"({"spec": {"nmae": "x"}})", 400, "InvalidArgument", "SubmitJobRequest"},
      {"invalid spec", "POST", "/v1/jobs", R"({"spec": {"apiVersion": "idlegrid/v0", "name": "x"}})", 400,
       "InvalidArgument", "spec.api_version"},
      {"image not pushed", "POST", "/v1/jobs", SubmitBody("x", "sha256:" + std::string(64, 'e')), 409,
       "FailedPrecondition", "push it first"},
      {"coordinator-only field", "POST", "/v1/jobs", R"({"spec": {"readiness": true}})", 400, "InvalidArgument",
       "readiness"},
  };
  for (const Case& c : cases) {
    auto res = Call(c.method, c.path, c.body);
    ASSERT_TRUE(res) << c.what;
    EXPECT_EQ(res->status, c.status) << c.what << ": " << res->body;
    google::protobuf::Struct body = Json(res->body);
    EXPECT_EQ(Field(body, "code"), c.code) << c.what << ": " << res->body;
    EXPECT_NE(Field(body, "message").find(c.names), std::string::npos) << c.what << ": " << res->body;
  }
  EXPECT_EQ(coordinator_->jobs().List("")->jobs_size(), 0) << "no refused submission may create a job";
}

// A message quoting the user's own value (with quotes, backslashes and a
// newline) must still be one valid JSON document.
TEST_F(HttpApiTest, AnErrorQuotingHostileInputIsStillValidJson) {
  const std::string hostile = R"(a"b\c
d)";  // JSON escapes: the name holds a quote, a backslash, a newline
  auto res = Call("POST", "/v1/jobs",
                  R"({"spec": {"apiVersion": "idlegrid/v1", "name": "x", "image": ")" + hostile + R"("}})");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  google::protobuf::Struct body = Json(res->body);
  EXPECT_EQ(Field(body, "code"), "InvalidArgument") << res->body;
  EXPECT_NE(Field(body, "message").find("image"), std::string::npos) << res->body;
}

TEST_F(HttpApiTest, ReadOnlyRoutesAnswerWithTheirDocuments) {
  auto nodes = Call("GET", "/v1/nodes");
  ASSERT_TRUE(nodes);
  EXPECT_EQ(nodes->status, 200) << nodes->body;
  v1::ListNodesResponse listed;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(nodes->body, &listed).ok()) << nodes->body;
  auto market = Call("GET", "/v1/market");
  ASSERT_TRUE(market);
  EXPECT_EQ(market->status, 200) << market->body;
  v1::MarketResponse book;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(market->body, &book).ok()) << market->body;
  auto metrics = Call("GET", "/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->get_header_value("Content-Type").find("text/plain"), std::string::npos);
  EXPECT_NE(metrics->body.find("# TYPE"), std::string::npos) << metrics->body.substr(0, 400);
}

}  // namespace
}  // namespace idlegrid::api
