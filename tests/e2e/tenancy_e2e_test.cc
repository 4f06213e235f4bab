// End to end through the CLI (issue 11): an operator makes accounts and
// scoped tokens; a tenant pushes its own image, runs a job and reads it; a
// second tenant can neither see nor touch it; scopes, quotas, revocation and
// deletion answer with clear messages and exit codes.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

class TenancyE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>("Tenancy");
    ASSERT_TRUE(grid_->StartCoordinator({"--max-queued-tasks", "3"}).ok());
    Status st = grid_->StartAgent(1);
    ASSERT_TRUE(st.ok()) << st.message();
  }

  // Mints a token as the operator; returns the secret (stdout's one line).
  std::string Token(const std::string& account, const std::string& scopes) {
    auto r = grid_->Cli({"token", "create", "--account", account, "--scope", scopes, "--expires", "1h"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    std::string t = r.out;
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    return t;
  }

  // The CLI as the holder of `token` (flags win over the config file's admin token).
  CmdResult As(const std::string& token, std::vector<std::string> args) {
    args.push_back("--token");
    args.push_back(token);
    return grid_->Cli(args);
  }

  std::unique_ptr<Grid> grid_;
};

TEST_F(TenancyE2E, TenantsSeeAndTouchOnlyTheirOwnJobs) {
  for (const char* name : {"alice", "bob"}) {
    auto r = grid_->Cli({"account", "create", name, "--role", "requester"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  const std::string alice = Token("alice", "submit,read");
  const std::string bob = Token("bob", "submit,read,cancel");
  ASSERT_EQ(alice.rfind("igt_", 0), 0u) << alice;

  // The operator's image is not alice's: she pushes it herself (same bytes).
  const std::string manifest = grid_->Manifest("mine", {"write", "alice-result"});
  auto refused = As(alice, {"submit", manifest});
  EXPECT_NE(refused.exit_code, 0) << "another account's private image must not run for alice";
  const std::string archive = "/tmp/igtest-image-" + std::to_string(::getpid()) + ".tar";
  auto push = As(alice, {"image", "push", archive});
  ASSERT_EQ(push.exit_code, 0) << push.out << push.err;

  auto run = As(alice, {"submit", manifest, "--wait", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  v1::Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &job).ok()) << run.out;
  EXPECT_EQ(job.state(), v1::SUCCEEDED);
  EXPECT_EQ(job.account(), "alice");
  EXPECT_EQ(As(alice, {"status", job.id()}).exit_code, 0);
  auto fetched = As(alice, {"fetch", job.id(), grid_->root + "/alice-out"});
  EXPECT_EQ(fetched.exit_code, 0) << fetched.err;

  // bob: everything about alice's job reads as missing.
  for (std::vector<std::string> cmd : {std::vector<std::string>{"status", job.id()},
                                       {"logs", job.id()},
                                       {"cancel", job.id()},
                                       {"delete", job.id()},
                                       {"fetch", job.id(), grid_->root + "/bob-out"}}) {
    auto r = As(bob, cmd);
    EXPECT_EQ(r.exit_code, 1) << cmd[0] << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("no job " + job.id()), std::string::npos) << cmd[0] << ": " << r.err;
  }
  auto bobs_list = As(bob, {"jobs"});
  EXPECT_EQ(bobs_list.exit_code, 0) << bobs_list.err;
  EXPECT_EQ(bobs_list.out.find(job.id()), std::string::npos) << "bob's listing shows alice's job";
  EXPECT_NE(As(alice, {"jobs"}).out.find(job.id()), std::string::npos);

  // alice's token has no cancel scope.
  auto cancel = As(alice, {"cancel", job.id()});
  EXPECT_EQ(cancel.exit_code, 1);
  EXPECT_NE(cancel.err.find("lacks the scope"), std::string::npos) << cancel.err;

  // The queued-task quota (3): an array of 4 is refused, exit code 3.
  const std::string big = grid_->Manifest("big", {"write", "x"}, "array:\n  count: 4\n");
  auto over = As(alice, {"submit", big});
  EXPECT_EQ(over.exit_code, 3) << over.out << over.err;
  EXPECT_NE(over.err.find("over quota"), std::string::npos) << over.err;

  // Revoked: alice's next call is refused as such.
  auto list = grid_->Cli({"token", "list", "--account", "alice", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  v1::ListTokensResponse tokens;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(list.out, &tokens).ok()) << list.out;
  ASSERT_EQ(tokens.tokens_size(), 1);
  EXPECT_EQ(list.out.find(alice), std::string::npos) << "a token list must not show secrets";
  ASSERT_EQ(grid_->Cli({"token", "revoke", tokens.tokens(0).id()}).exit_code, 0);
  auto after = As(alice, {"jobs"});
  EXPECT_EQ(after.exit_code, 1);
  EXPECT_NE(after.err.find("revoked"), std::string::npos) << after.err;

  // The operator deletes the job; it is gone.
  auto del = grid_->Cli({"delete", job.id()});
  EXPECT_EQ(del.exit_code, 0) << del.out << del.err;
  EXPECT_EQ(grid_->Cli({"status", job.id()}).exit_code, 1);
}

}  // namespace
}  // namespace idlegrid::testing
