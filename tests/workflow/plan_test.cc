// The workflow core on plain data: a diamond a -> (b, c) -> d under both
// failure policies, wiring of upstream outputs (fan-in included), cache keys
// and a cancelled workflow.
#include <gtest/gtest.h>

#include "manifest/workflow.h"
#include "workflow/plan.h"

namespace idlegrid::workflow {
namespace {

const std::string kImage = "sha256:" + std::string(64, 'a');

v1::WorkflowStepSpec Step(const std::string& name, std::vector<std::string> deps = {}) {
  v1::WorkflowStepSpec s;
  s.set_name(name);
  for (const auto& d : deps) s.add_depends_on(d);
  v1::JobSpec* job = s.mutable_job();
  job->set_api_version("idlegrid/v1");
  job->set_name(name);
  job->set_image(kImage);
  job->add_args(name);
  manifest::ApplyDefaults(job);
  return s;
}

void From(v1::WorkflowStepSpec* s, const std::string& step, const std::string& output, const std::string& path) {
  v1::StepInput* in = s->add_from_steps();
  in->set_step(step);
  in->set_output(output);
  in->set_path(path);
}

// a -> (b, c) -> d; d reads b's and c's result.txt.
v1::Workflow Diamond(const std::string& on_failure) {
  v1::Workflow wf;
  wf.set_id("w-1");
  wf.set_state(kRunning);
  v1::WorkflowSpec* spec = wf.mutable_spec();
  spec->set_api_version("idlegrid/v1");
  spec->set_name("diamond");
  spec->set_on_failure(on_failure);
  *spec->add_steps() = Step("a");
  *spec->add_steps() = Step("b", {"a"});
  *spec->add_steps() = Step("c", {"a"});
  v1::WorkflowStepSpec d = Step("d");
  From(&d, "b", "result.txt", "/in/b");
  From(&d, "c", "result.txt", "/in/c");
  *spec->add_steps() = d;
  return wf;
}

v1::WorkflowStep* Row(v1::Workflow* wf, const std::string& name, const std::string& state, const std::string& job) {
  v1::WorkflowStep* r = wf->add_steps();
  r->set_name(name);
  r->set_state(state);
  r->set_job_id(job);
  return r;
}

// A job of `tasks` tasks in `state`; succeeded tasks' runs wrote `file` with a digest per task.
v1::Job Job(const std::string& id, v1::TaskState state, int tasks = 1, const std::string& file = "result.txt") {
  v1::Job j;
  j.set_id(id);
  j.set_state(state);
  j.mutable_spec()->set_array_count(static_cast<uint32_t>(tasks));
  for (int i = 0; i < tasks; ++i) {
    v1::Task* t = j.add_tasks();
    t->set_index(static_cast<uint32_t>(i));
    t->set_state(state);
    v1::Attempt* a = t->add_attempts();
    a->set_state(state);
    if (state == v1::FAILED) t->set_failure_reason(v1::NONZERO_EXIT);
    if (state == v1::SUCCEEDED) {
      v1::OutputFile* f = a->add_outputs();
      f->set_path(file);
      f->set_digest("sha256:" + std::string(63, 'b') + std::to_string(i));
    }
  }
  return j;
}

std::map<std::string, std::string> States(const Plan& p) {
  std::map<std::string, std::string> out;
  for (const auto& s : p.steps) out[s.name()] = s.state();
  return out;
}

std::vector<std::string> Names(const Plan& p) {
  std::vector<std::string> out;
  for (const auto& s : p.submit) out.push_back(s.name);
  return out;
}

TEST(PlanAdvance, ANewWorkflowSubmitsItsRootsOnly) {
  const Plan p = PlanAdvance(Diamond("stop"), {});
  EXPECT_EQ(Names(p), std::vector<std::string>{"a"});
  EXPECT_EQ(States(p),
            (std::map<std::string, std::string>{{"a", kWaiting}, {"b", kWaiting}, {"c", kWaiting}, {"d", kWaiting}}));
  EXPECT_EQ(p.state, kRunning);
}

TEST(PlanAdvance, StepsWhoseDependenciesSucceededAreSubmittedTogether) {
  v1::Workflow wf = Diamond("stop");
  Row(&wf, "a", kRunning, "j-a");
  const Plan p = PlanAdvance(wf, {{"j-a", Job("j-a", v1::SUCCEEDED)}});
  EXPECT_EQ(Names(p), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(States(p).at("a"), kSucceeded);
}

TEST(PlanAdvance, AClaimedStepWhoseJobIsNotStoredYetIsSubmittedAgainUnderItsId) {
  v1::Workflow wf = Diamond("stop");
  Row(&wf, "a", kWaiting, "j-a");  // the coordinator stopped between claim and submit
  const Plan p = PlanAdvance(wf, {});
  ASSERT_EQ(Names(p), std::vector<std::string>{"a"});
  EXPECT_EQ(p.submit[0].job_id, "j-a");
}

TEST(PlanAdvance, DownstreamInputsAreTheUpstreamOutputsByDigest) {
  v1::Workflow wf = Diamond("stop");
  Row(&wf, "a", kSucceeded, "j-a");
  Row(&wf, "b", kRunning, "j-b");
  Row(&wf, "c", kRunning, "j-c");
  v1::Job c = Job("j-c", v1::SUCCEEDED);
  c.mutable_tasks(0)->mutable_attempts(0)->mutable_outputs(0)->set_digest("sha256:" + std::string(64, 'c'));
  const Plan p = PlanAdvance(wf, {{"j-a", Job("j-a", v1::SUCCEEDED)}, {"j-b", Job("j-b", v1::SUCCEEDED)}, {"j-c", c}});
  ASSERT_EQ(Names(p), std::vector<std::string>{"d"});
  const v1::JobSpec& d = p.submit[0].spec;
  ASSERT_EQ(d.inputs_size(), 2);
  EXPECT_EQ(d.inputs(0).path(), "/in/b");
  EXPECT_EQ(d.inputs(0).artifact(), "sha256:" + std::string(63, 'b') + "0");
  EXPECT_EQ(d.inputs(1).path(), "/in/c");
  EXPECT_EQ(d.inputs(1).artifact(), "sha256:" + std::string(64, 'c'));
}

TEST(PlanAdvance, FanInGivesOneInputPerUpstreamTask) {
  v1::Workflow wf = Diamond("stop");
  Row(&wf, "a", kSucceeded, "j-a");
  Row(&wf, "b", kSucceeded, "j-b");
  Row(&wf, "c", kSucceeded, "j-c");
  const Plan p = PlanAdvance(
      wf,
      {{"j-a", Job("j-a", v1::SUCCEEDED)}, {"j-b", Job("j-b", v1::SUCCEEDED, 3)}, {"j-c", Job("j-c", v1::SUCCEEDED)}});
  ASSERT_EQ(Names(p), std::vector<std::string>{"d"});
  const v1::JobSpec& d = p.submit[0].spec;
  ASSERT_EQ(d.inputs_size(), 4);
  EXPECT_EQ(d.inputs(0).path(), "/in/b/0");
  EXPECT_EQ(d.inputs(2).path(), "/in/b/2");
  EXPECT_EQ(d.inputs(2).artifact(), "sha256:" + std::string(63, 'b') + "2");
  EXPECT_EQ(d.inputs(3).path(), "/in/c");
}

TEST(PlanAdvance, AMissingUpstreamOutputFailsTheStepNamingIt) {
  v1::Workflow wf = Diamond("continue");
  Row(&wf, "a", kSucceeded, "j-a");
  Row(&wf, "b", kSucceeded, "j-b");
  Row(&wf, "c", kSucceeded, "j-c");
  const Plan p = PlanAdvance(wf, {{"j-a", Job("j-a", v1::SUCCEEDED)},
                                  {"j-b", Job("j-b", v1::SUCCEEDED, 1, "other.txt")},
                                  {"j-c", Job("j-c", v1::SUCCEEDED)}});
  EXPECT_TRUE(p.submit.empty());
  EXPECT_EQ(States(p).at("d"), kFailed);
  EXPECT_NE(p.steps[3].message().find("has no output result.txt"), std::string::npos) << p.steps[3].message();
  EXPECT_EQ(p.state, kFailed);
}

TEST(PlanAdvance, UnderStopAFailedBranchSkipsEverythingLeftAndCancelsRunningSteps) {
  v1::Workflow wf = Diamond("stop");
  Row(&wf, "a", kSucceeded, "j-a");
  Row(&wf, "b", kRunning, "j-b");
  Row(&wf, "c", kRunning, "j-c");
  Plan p = PlanAdvance(
      wf, {{"j-a", Job("j-a", v1::SUCCEEDED)}, {"j-b", Job("j-b", v1::RUNNING)}, {"j-c", Job("j-c", v1::FAILED)}});
  EXPECT_EQ(States(p),
            (std::map<std::string, std::string>{{"a", kSucceeded}, {"b", kRunning}, {"c", kFailed}, {"d", kSkipped}}));
  EXPECT_EQ(p.cancel_jobs, std::vector<std::string>{"j-b"});
  EXPECT_TRUE(p.submit.empty());
  EXPECT_EQ(p.state, kRunning) << "b's job is still being stopped";
  EXPECT_NE(p.steps[2].message().find("nonzero_exit"), std::string::npos) << p.steps[2].message();

  *wf.mutable_steps() = {p.steps.begin(), p.steps.end()};
  p = PlanAdvance(
      wf, {{"j-a", Job("j-a", v1::SUCCEEDED)}, {"j-b", Job("j-b", v1::CANCELLED)}, {"j-c", Job("j-c", v1::FAILED)}});
  EXPECT_EQ(States(p).at("b"), kCancelled);
  EXPECT_EQ(p.state, kFailed);
}

TEST(PlanAdvance, UnderStopNoOtherRootStartsAfterAFailure) {
  v1::Workflow wf = Diamond("stop");
  *wf.mutable_spec()->add_steps() = Step("e");  // independent of everything
  Row(&wf, "a", kFailed, "j-a");
  const Plan p = PlanAdvance(wf, {{"j-a", Job("j-a", v1::FAILED)}});
  EXPECT_TRUE(p.submit.empty());
  EXPECT_EQ(States(p).at("e"), kSkipped);
  EXPECT_EQ(p.state, kFailed);
}

TEST(PlanAdvance, UnderContinueOnlyTheFailedStepsDependantsAreSkipped) {
  v1::Workflow wf = Diamond("continue");
  *wf.mutable_spec()->add_steps() = Step("e", {"b"});
  Row(&wf, "a", kSucceeded, "j-a");
  Row(&wf, "b", kRunning, "j-b");
  Row(&wf, "c", kRunning, "j-c");
  Plan p = PlanAdvance(
      wf, {{"j-a", Job("j-a", v1::SUCCEEDED)}, {"j-b", Job("j-b", v1::RUNNING)}, {"j-c", Job("j-c", v1::FAILED)}});
  EXPECT_EQ(States(p).at("d"), kSkipped);
  EXPECT_EQ(p.steps[3].message(), "upstream step c failed");
  EXPECT_EQ(States(p).at("e"), kWaiting);
  EXPECT_TRUE(p.cancel_jobs.empty());
  EXPECT_EQ(p.state, kRunning);

  *wf.mutable_steps() = {p.steps.begin(), p.steps.end()};
  p = PlanAdvance(
      wf, {{"j-a", Job("j-a", v1::SUCCEEDED)}, {"j-b", Job("j-b", v1::SUCCEEDED)}, {"j-c", Job("j-c", v1::FAILED)}});
  EXPECT_EQ(Names(p), std::vector<std::string>{"e"}) << "the independent branch goes on";
  EXPECT_EQ(p.state, kRunning);
}

TEST(PlanAdvance, ACancelledWorkflowCancelsItsRunningJobsAndWaitingSteps) {
  v1::Workflow wf = Diamond("continue");
  wf.set_state(kCancelled);
  Row(&wf, "a", kSucceeded, "j-a");
  Row(&wf, "b", kRunning, "j-b");
  const Plan p = PlanAdvance(wf, {{"j-a", Job("j-a", v1::SUCCEEDED)}, {"j-b", Job("j-b", v1::RUNNING)}});
  EXPECT_EQ(p.cancel_jobs, std::vector<std::string>{"j-b"});
  EXPECT_EQ(States(p).at("c"), kCancelled);
  EXPECT_EQ(States(p).at("d"), kCancelled);
  EXPECT_TRUE(p.submit.empty());
  EXPECT_EQ(p.state, kCancelled);
}

TEST(CacheKey, DependsOnWhatDecidesTheResultOnly) {
  v1::JobSpec s = Step("x").job();
  s.set_image("label@" + kImage);
  v1::InputSpec* in1 = s.add_inputs();
  in1->set_artifact("sha256:" + std::string(64, '1'));
  in1->set_path("/in/1");
  v1::InputSpec* in2 = s.add_inputs();
  in2->set_artifact("sha256:" + std::string(64, '2'));
  in2->set_path("/in/2");
  const std::string key = CacheKey(s);

  v1::JobSpec same = s;
  same.set_image(kImage);
  same.set_name("other-name");
  same.set_retries(3);
  same.set_queue_timeout_seconds(5);
  std::swap(*same.mutable_inputs(0), *same.mutable_inputs(1));
  EXPECT_EQ(CacheKey(same), key);

  v1::JobSpec args = s;
  args.add_args("more");
  EXPECT_NE(CacheKey(args), key);
  v1::JobSpec input = s;
  input.mutable_inputs(0)->set_artifact("sha256:" + std::string(64, '3'));
  EXPECT_NE(CacheKey(input), key);
  v1::JobSpec env = s;
  (*env.mutable_env())["SEED"] = "1";
  EXPECT_NE(CacheKey(env), key);
  v1::JobSpec memory = s;
  memory.mutable_resources()->set_memory_bytes(1ull << 30);
  EXPECT_NE(CacheKey(memory), key);
}

}  // namespace
}  // namespace idlegrid::workflow
