// `idlegrid status WF`: steps under their dependencies, states, job ids,
// the cached marker, and a fan-in step drawn once in full.
#include "cli/workflow_tree.h"

#include <gtest/gtest.h>

namespace idlegrid::cli {
namespace {

v1::Workflow Diamond() {
  v1::Workflow wf;
  wf.set_id("w-1");
  wf.set_state("failed");
  wf.mutable_spec()->set_name("diamond");
  wf.mutable_spec()->set_on_failure("continue");
  auto add = [&wf](const std::string& name, std::vector<std::string> deps, const std::string& state,
                   const std::string& job, bool cached, const std::string& message) {
    v1::WorkflowStepSpec* s = wf.mutable_spec()->add_steps();
    s->set_name(name);
    for (const auto& d : deps) s->add_depends_on(d);
    v1::WorkflowStep* r = wf.add_steps();
    r->set_name(name);
    r->set_state(state);
    r->set_job_id(job);
    r->set_cached(cached);
    r->set_message(message);
  };
  add("a", {}, "succeeded", "j-a", true, "reused job j-a (same cache key)");
  add("b", {"a"}, "succeeded", "j-b", false, "");
  add("c", {"a"}, "failed", "j-c", false, "job j-c task 0 nonzero_exit");
  add("d", {"b", "c"}, "skipped", "", false, "upstream step c failed");
  return wf;
}

TEST(WorkflowTree, DrawsEachStepUnderItsDependencies) {
  EXPECT_EQ(WorkflowTree(Diamond()),
            "workflow w-1 diamond: failed (onFailure: continue)\n"
            "a  succeeded  j-a (cached)\n"
            "├─ b  succeeded  j-b\n"
            "│  └─ d  skipped: upstream step c failed\n"
            "└─ c  failed  j-c: job j-c task 0 nonzero_exit\n"
            "   └─ d  (above)\n");
}

TEST(WorkflowTree, AStepInputImpliesItsDependency) {
  v1::Workflow wf = Diamond();
  v1::WorkflowStepSpec* d = wf.mutable_spec()->mutable_steps(3);
  d->clear_depends_on();
  d->add_from_steps()->set_step("c");
  const std::string tree = WorkflowTree(wf);
  EXPECT_NE(tree.find("└─ c  failed  j-c: job j-c task 0 nonzero_exit\n   └─ d  skipped"), std::string::npos) << tree;
  EXPECT_EQ(tree.find("(above)"), std::string::npos) << tree;
}

}  // namespace
}  // namespace idlegrid::cli
