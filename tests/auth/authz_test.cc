// The authorization table (auth/authz.h) against the API definition: every
// method of the requester and agent services has exactly one rule, and the
// decisions keep tenants, providers and agents apart without leaking which
// objects exist.
#include "auth/authz.h"

#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "idlegrid/v1/idlegrid.grpc.pb.h"

namespace idlegrid::auth {
namespace {

// Every method the API definition declares, as gRPC names them.
std::set<std::string> DeclaredMethods() {
  std::set<std::string> out;
  for (const char* service : {"idlegrid.v1.RequesterService", "idlegrid.v1.AgentService"}) {
    const auto* desc = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service);
    EXPECT_NE(desc, nullptr) << service;
    if (desc == nullptr) continue;
    for (int i = 0; i < desc->method_count(); ++i)
      out.insert("/" + std::string(service) + "/" + desc->method(i)->name());
  }
  return out;
}

TEST(AuthzTableTest, EveryDeclaredMethodHasOneRuleAndEveryRuleADeclaredMethod) {
  const std::set<std::string> declared = DeclaredMethods();
  ASSERT_GE(declared.size(), 20u) << "the descriptors list too few methods to be the whole API";
  for (const std::string& m : declared) EXPECT_NE(RuleFor(m), nullptr) << m << " has no authorization rule";
  std::set<std::string> ruled;
  for (const Rule& r : Rules()) {
    EXPECT_TRUE(ruled.insert(std::string(r.method)).second) << r.method << " has two rules";
    EXPECT_TRUE(declared.count(std::string(r.method))) << r.method << " is not in the API definition";
  }
}

TEST(AuthzTableTest, AMethodWithoutARuleIsRefused) {
  Caller op{Role::kOperator, ~0u, "ops", ""};
  EXPECT_EQ(Authorize(op, "/idlegrid.v1.RequesterService/DeleteEverything", {true}).code(), Code::kPermissionDenied);
}

constexpr char kGetJobMethod[] = "/idlegrid.v1.RequesterService/GetJob";
constexpr char kSubmitMethod[] = "/idlegrid.v1.RequesterService/SubmitJob";
constexpr char kDrainMethod[] = "/idlegrid.v1.RequesterService/DrainNode";
constexpr char kReportMethod[] = "/idlegrid.v1.AgentService/ReportAttempt";

const Caller kAlice{Role::kRequester, kSubmit | kRead | kCancel, "alice", ""};
const Caller kBob{Role::kRequester, kSubmit | kRead | kCancel, "bob", ""};
const Caller kOps{Role::kOperator, kSubmit | kRead | kCancel | kDrain, "ops", ""};
const Caller kCarol{Role::kProvider, kRead | kDrain, "carol", ""};
const Caller kNodeA{Role::kAgent, kNoScope, "carol", "node-a"};

TEST(AuthorizeTest, ATenantSeesItsOwnJobAndAnotherTenantsJobIsNotFound) {
  const Target alices_job{true, "alice"};
  EXPECT_TRUE(Authorize(kAlice, kGetJobMethod, alices_job).ok());
  const Status bob = Authorize(kBob, kGetJobMethod, alices_job);
  EXPECT_EQ(bob.code(), Code::kNotFound);
  // Someone else's job and no job at all read the same: no existence leak.
  EXPECT_EQ(bob.message(), Authorize(kBob, kGetJobMethod, Target{}).message());
  EXPECT_TRUE(Authorize(kOps, kGetJobMethod, alices_job).ok());
}

TEST(AuthorizeTest, ScopesAndRolesLimitWhatATokenMayCall) {
  const Caller read_only{Role::kRequester, kRead, "alice", ""};
  EXPECT_EQ(Authorize(read_only, kSubmitMethod, {}).code(), Code::kPermissionDenied);
  EXPECT_TRUE(Authorize(read_only, kGetJobMethod, {true, "alice"}).ok());
  EXPECT_EQ(Authorize(kAlice, kDrainMethod, {true, "carol"}).code(), Code::kPermissionDenied)
      << "tenants drain nothing";
  EXPECT_TRUE(Authorize(kCarol, kDrainMethod, {true, "carol"}).ok());
  EXPECT_EQ(Authorize(kCarol, kDrainMethod, {true, "dave"}).code(), Code::kNotFound) << "another provider's node";
  EXPECT_EQ(Authorize(kCarol, kSubmitMethod, {}).code(), Code::kPermissionDenied) << "providers do not submit";
}

// Signing an image vouches for it: only an account that may run it (the
// gate names the caller as the owner then), with the submit scope.
TEST(AuthorizeTest, OnlyAnAccountThatMayUseAnImageAddsASignatureToIt) {
  constexpr char kSign[] = "/idlegrid.v1.RequesterService/AddImageSignature";
  EXPECT_TRUE(Authorize(kAlice, kSign, {true, "alice"}).ok());
  EXPECT_EQ(Authorize(kBob, kSign, {true, ""}).code(), Code::kNotFound) << "alice's private image";
  EXPECT_EQ(Authorize(kBob, kSign, {true, ""}).message(), Authorize(kBob, kSign, Target{}).message());
  EXPECT_TRUE(Authorize(kOps, kSign, {true, ""}).ok());
  EXPECT_EQ(Authorize(Caller{Role::kRequester, kRead, "alice", ""}, kSign, {true, "alice"}).code(),
            Code::kPermissionDenied);
  EXPECT_EQ(Authorize(kCarol, kSign, {true, "carol"}).code(), Code::kPermissionDenied) << "providers push no images";
}

TEST(AuthorizeTest, AgentsActOnlyAsThemselvesAndOnlyOnTheirLiveAttempts) {
  EXPECT_TRUE(Authorize(kNodeA, kReportMethod, {true, "", "node-a", true}).ok());
  EXPECT_EQ(Authorize(kNodeA, kReportMethod, {true, "", "node-b", true}).code(), Code::kNotFound) << "another node's";
  EXPECT_EQ(Authorize(kNodeA, kReportMethod, {true, "", "node-a", false}).code(), Code::kFailedPrecondition);
  EXPECT_EQ(Authorize(kNodeA, kGetJobMethod, {true, "carol"}).code(), Code::kPermissionDenied)
      << "a node credential is no requester";
  EXPECT_EQ(Authorize(kOps, kReportMethod, {true, "", "node-a", true}).code(), Code::kPermissionDenied)
      << "not even an operator reports as a node";
}

TEST(AuthorizeTest, EveryRequesterMethodRefusesAnAgentAndEveryAgentMethodARequester) {
  for (const Rule& r : Rules()) {
    const bool agent_method = r.method.find("AgentService") != std::string_view::npos;
    const Target owned{true, "alice", "node-a", true};
    const Status as_requester = Authorize(kAlice, r.method, owned);
    const Status as_agent = Authorize(kNodeA, r.method, owned);
    if (agent_method) {
      EXPECT_EQ(as_requester.code(), Code::kPermissionDenied) << r.method;
    } else {
      EXPECT_EQ(as_agent.code(), Code::kPermissionDenied) << r.method;
    }
  }
}

}  // namespace
}  // namespace idlegrid::auth
