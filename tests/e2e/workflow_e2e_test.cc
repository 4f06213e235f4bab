// Workflows through a real coordinator and agent (docs/workflows.md): a
// diamond a -> (b, c) -> d whose d joins b's and c's outputs, wired by digest;
// a failing branch under both failure policies; a resubmission that reuses
// every succeeded step (no new job, no new attempt), and one whose changed
// step reruns with its dependants only.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/fs.h"
#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

class WorkflowE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(grid_->StartCoordinator().ok());
    Status started = grid_->StartAgent(1);
    ASSERT_TRUE(started.ok()) << started.message();
    image_ = grid_->PushTestImage();
    ASSERT_FALSE(image_.empty());
  }

  std::string StepYaml(const std::string& name, const std::string& args, const std::string& inputs) {
    return "  - name: " + name + "\n    image: igtest@" + image_ + "\n    command: [\"/sim\"]\n    args: " + args +
           "\n    resources: {cpu: 1, memory: 256Mi, pids: 64}\n" +
           (inputs.empty() ? "" : "    inputs: " + inputs + "\n");
  }

  // a writes hello.txt; b and c each join a's file after their own line; d
  // joins b's and c's.
  std::string Diamond(const std::string& file, const std::string& on_failure, const std::string& b_args,
                      const std::string& c_args, const std::string& a_args = "[write, A]") {
    const std::string from_a = "[{fromStep: a, output: hello.txt, path: /in/a.txt}]";
    return grid_->WriteFile(file, "apiVersion: idlegrid/v1\nkind: Workflow\nname: diamond\nonFailure: " + on_failure +
                                      "\nsteps:\n" + StepYaml("a", a_args, "") + StepYaml("b", b_args, from_a) +
                                      StepYaml("c", c_args, from_a) +
                                      StepYaml("d", "[cat, D, /in/b.txt, /in/c.txt]",
                                               "[{fromStep: b, output: cat.txt, path: /in/b.txt}, "
                                               "{fromStep: c, output: cat.txt, path: /in/c.txt}]"));
  }

  // Submits and waits for every step to be done; the CLI's exit says whether it succeeded.
  v1::Workflow Run(const std::string& manifest, int want_exit) {
    auto r = grid_->Cli({"submit", manifest, "--wait", "--json"});
    EXPECT_EQ(r.exit_code, want_exit) << r.out << r.err;
    return ParseJson<v1::Workflow>(r.out);
  }

  static std::map<std::string, v1::WorkflowStep> Steps(const v1::Workflow& wf) {
    std::map<std::string, v1::WorkflowStep> out;
    for (const auto& s : wf.steps()) out[s.name()] = s;
    return out;
  }

  v1::Job Job(const std::string& id) {
    auto r = grid_->Cli({"status", id, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return ParseJson<v1::Job>(r.out);
  }

  size_t JobCount() {
    auto r = grid_->Cli({"jobs", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return static_cast<size_t>(ParseJson<v1::ListJobsResponse>(r.out).jobs_size());
  }

  std::string Fetched(const std::string& job_id, const std::string& file) {
    const std::string dir = grid_->root + "/fetched-" + job_id;
    auto f = grid_->Cli({"fetch", job_id, dir});
    EXPECT_EQ(f.exit_code, 0) << f.err;
    auto text = ReadFile(dir + "/task-0/" + file);
    EXPECT_TRUE(text.ok()) << dir;
    return text.ok() ? *text : "";
  }

  std::unique_ptr<Grid> grid_;
  std::string image_;
};

TEST_F(WorkflowE2E, ADiamondJoinsItsBranchesOutputsAndAResubmissionReusesEveryStep) {
  const std::string manifest = Diamond("diamond.yaml", "stop", "[cat, B, /in/a.txt]", "[cat, C, /in/a.txt]");
  const v1::Workflow first = Run(manifest, 0);
  ASSERT_EQ(first.state(), "succeeded") << first.DebugString();
  auto steps = Steps(first);
  ASSERT_EQ(steps.size(), 4u);
  for (const auto& [name, s] : steps) {
    EXPECT_EQ(s.state(), "succeeded") << name;
    EXPECT_FALSE(s.cached()) << name;
    EXPECT_FALSE(s.job_id().empty()) << name;
  }
  // d read b's and c's files, which read a's: content-addressed wiring end to end.
  EXPECT_EQ(Fetched(steps["d"].job_id(), "cat.txt"), "D\nB\nA from task 0\nC\nA from task 0\n");
  const v1::Job d = Job(steps["d"].job_id());
  ASSERT_EQ(d.spec().inputs_size(), 2);
  const v1::Job b = Job(steps["b"].job_id());
  ASSERT_EQ(b.tasks(0).attempts(0).outputs_size(), 1);
  EXPECT_EQ(d.spec().inputs(0).artifact(), b.tasks(0).attempts(0).outputs(0).digest()) << "no copy: the same blob";

  // The tree shows every step with its job.
  auto tree = grid_->Cli({"status", first.id()});
  ASSERT_EQ(tree.exit_code, 0) << tree.err;
  EXPECT_NE(tree.out.find("workflow " + first.id() + " diamond: succeeded"), std::string::npos) << tree.out;
  EXPECT_NE(tree.out.find("├─ b  succeeded  " + steps["b"].job_id()), std::string::npos) << tree.out;
  EXPECT_NE(tree.out.find("│  └─ d  succeeded  " + steps["d"].job_id()), std::string::npos) << tree.out;

  // The same workflow again: every step reused, nothing runs.
  const size_t jobs_before = JobCount();
  const v1::Workflow again = Run(manifest, 0);
  ASSERT_EQ(again.state(), "succeeded");
  EXPECT_NE(again.id(), first.id());
  for (const auto& [name, s] : Steps(again)) {
    EXPECT_TRUE(s.cached()) << name;
    EXPECT_EQ(s.job_id(), steps[name].job_id()) << name << " reuses the first run's job";
    EXPECT_EQ(s.cache_key(), steps[name].cache_key()) << name;
    EXPECT_EQ(Job(s.job_id()).tasks(0).attempts_size(), 1) << name << ": no new attempt";
  }
  EXPECT_EQ(JobCount(), jobs_before) << "no new job";
  auto cached_tree = grid_->Cli({"status", again.id()});
  EXPECT_NE(cached_tree.out.find("(cached)"), std::string::npos) << cached_tree.out;

  // c's args change: c reruns, and d (its input changed); a and b are reused.
  const std::string changed = Diamond("changed.yaml", "stop", "[cat, B, /in/a.txt]", "[cat, C2, /in/a.txt]");
  const v1::Workflow third = Run(changed, 0);
  ASSERT_EQ(third.state(), "succeeded");
  auto third_steps = Steps(third);
  EXPECT_TRUE(third_steps["a"].cached());
  EXPECT_TRUE(third_steps["b"].cached());
  EXPECT_FALSE(third_steps["c"].cached());
  EXPECT_FALSE(third_steps["d"].cached());
  EXPECT_NE(third_steps["c"].job_id(), steps["c"].job_id());
  EXPECT_NE(third_steps["d"].job_id(), steps["d"].job_id());
  EXPECT_EQ(JobCount(), jobs_before + 2) << "exactly c and d ran again";
  EXPECT_EQ(Fetched(third_steps["d"].job_id(), "cat.txt"), "D\nB\nA from task 0\nC2\nA from task 0\n");
}

TEST_F(WorkflowE2E, UnderStopAFailingBranchSkipsTheJoinAndFailsTheWorkflow) {
  // b takes a while, so c's failure usually finds it running (then it is cancelled).
  const v1::Workflow wf = Run(Diamond("stop.yaml", "stop", "[write, B, \"6000\"]", "[exit, \"3\"]"), 1);
  EXPECT_EQ(wf.state(), "failed");
  auto steps = Steps(wf);
  EXPECT_EQ(steps["a"].state(), "succeeded");
  EXPECT_EQ(steps["c"].state(), "failed");
  EXPECT_NE(steps["c"].message().find("nonzero_exit"), std::string::npos) << steps["c"].message();
  EXPECT_EQ(steps["d"].state(), "skipped");
  EXPECT_TRUE(steps["d"].job_id().empty()) << "d never ran";
  const std::set<std::string> b_ends = {"succeeded", "cancelled"};
  EXPECT_TRUE(b_ends.contains(steps["b"].state())) << steps["b"].state();
  if (steps["b"].state() == "cancelled") EXPECT_EQ(Job(steps["b"].job_id()).state(), v1::CANCELLED);
}

TEST_F(WorkflowE2E, UnderContinueTheOtherBranchCompletesAndOnlyTheJoinIsSkipped) {
  const v1::Workflow wf = Run(Diamond("continue.yaml", "continue", "[write, B, \"3000\"]", "[exit, \"3\"]"), 1);
  EXPECT_EQ(wf.state(), "failed");
  auto steps = Steps(wf);
  EXPECT_EQ(steps["b"].state(), "succeeded") << "an independent branch runs on";
  EXPECT_EQ(Job(steps["b"].job_id()).state(), v1::SUCCEEDED);
  EXPECT_EQ(steps["c"].state(), "failed");
  EXPECT_EQ(steps["d"].state(), "skipped");
  EXPECT_EQ(steps["d"].message(), "upstream step c failed");
  auto tree = grid_->Cli({"status", wf.id()});
  EXPECT_NE(tree.out.find("d  skipped: upstream step c failed"), std::string::npos) << tree.out;
}

TEST_F(WorkflowE2E, ARestartedCoordinatorFinishesTheWorkflowWithoutRunningAStepTwice) {
  const std::string manifest =
      Diamond("crash.yaml", "stop", "[cat, B, /in/a.txt]", "[cat, C, /in/a.txt]", "[write, A, \"3000\"]");
  auto submitted = grid_->Cli({"submit", manifest, "--json"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const v1::Workflow wf = ParseJson<v1::Workflow>(submitted.out);
  const std::string a_job = Steps(wf)["a"].job_id();
  ASSERT_FALSE(a_job.empty()) << "the root step is submitted with the workflow";
  auto running = grid_->WaitJob(a_job, [](const v1::Job& j) { return j.state() == v1::RUNNING; });
  ASSERT_TRUE(running.ok());

  // A crash while a runs; the agent finds the coordinator again at the same address.
  grid_->listen_port = std::stoi(grid_->grpc_addr.substr(grid_->grpc_addr.rfind(':') + 1));
  grid_->StopCoordinator(SIGKILL);
  ASSERT_TRUE(grid_->StartCoordinator().ok());
  auto r = grid_->Cli({"status", wf.id(), "--wait", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const v1::Workflow done = ParseJson<v1::Workflow>(r.out);
  EXPECT_EQ(done.state(), "succeeded");
  EXPECT_EQ(Steps(done)["a"].job_id(), a_job);
  EXPECT_EQ(Fetched(Steps(done)["d"].job_id(), "cat.txt"), "D\nB\nA from task 0\nC\nA from task 0\n");
  // One job per step, whatever the crash interrupted.
  auto list = grid_->Cli({"jobs", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::map<std::string, int> per_step;
  const auto jobs = ParseJson<v1::ListJobsResponse>(list.out);  // kept: the loop reads into it
  for (const auto& j : jobs.jobs()) ++per_step[j.spec().name()];
  for (const char* step : {"a", "b", "c", "d"}) EXPECT_EQ(per_step[step], 1) << step;
}

TEST_F(WorkflowE2E, AWorkflowWithAnUnknownStepIsRefusedNamingTheLine) {
  const std::string bad = grid_->WriteFile("bad.yaml", "apiVersion: idlegrid/v1\nkind: Workflow\nname: bad\nsteps:\n" +
                                                           StepYaml("a", "[write, A]", "") + "    dependsOn: [nope]\n");
  auto r = grid_->Cli({"submit", bad});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("bad.yaml:10:17: steps[0].dependsOn[0]: no step named \"nope\""), std::string::npos) << r.err;
  auto list = grid_->Cli({"workflows", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(ParseJson<v1::ListWorkflowsResponse>(list.out).workflows_size(), 0) << "nothing stored";
}

}  // namespace
}  // namespace idlegrid::testing
