// Workflow manifests: steps parsed with the job manifest's rules, upstream
// inputs, and the graph's errors (unknown step, duplicate, cycle) pointing at
// file:line:column.
#include <gtest/gtest.h>

#include "manifest/workflow.h"

namespace idlegrid::manifest {
namespace {

const std::string kImage = "sim@sha256:" + std::string(64, 'a');

std::string Diamond(const std::string& d_extra = "", const std::string& on_failure = "continue") {
  return "apiVersion: idlegrid/v1\n"
         "kind: Workflow\n"
         "name: diamond\n"
         "onFailure: " +
         on_failure +
         "\n"
         "steps:\n"
         "  - name: a\n"
         "    image: " +
         kImage +
         "\n"
         "    args: [write, a]\n"
         "  - name: b\n"
         "    dependsOn: [a]\n"
         "    image: " +
         kImage +
         "\n"
         "    array: {items: [{x: 1}, {x: 2}]}\n"
         "    args: [\"{{.x}}\"]\n"
         "  - name: c\n"
         "    dependsOn: [a]\n"
         "    image: " +
         kImage +
         "\n"
         "  - name: d\n"
         "    image: " +
         kImage +
         "\n"
         "    inputs:\n"
         "      - {artifact: sha256:" +
         std::string(64, '1') +
         ", path: /data}\n"
         "      - {fromStep: b, output: hello.txt, path: /in/b}\n"
         "      - {fromStep: c, output: hello.txt, path: /in/c}\n" +
         d_extra;
}

TEST(WorkflowManifest, AStepsTmpfsSizesFollowItsOwnMemory) {
  // Each step's defaults are derived from what that step writes, not from
  // another step's or the defaults'.
  auto wf = ParseWorkflowManifest(Diamond("    resources: {memory: 256Mi, tmp: 100Mi}\n"), "wf.yaml");
  ASSERT_TRUE(wf.ok()) << wf.status().ToString();
  const v1::Resources& d = wf->steps(3).job().resources();
  EXPECT_EQ(d.shm_bytes(), 64ull << 20) << "a quarter of the step's 256Mi";
  EXPECT_EQ(d.tmp_bytes(), 100ull << 20);
  EXPECT_EQ(wf->steps(0).job().resources().shm_bytes(), kDefaultShmBytes);
  auto refused = ParseWorkflowManifest(Diamond("    resources: {memory: 256Mi, shm: 200Mi, tmp: 100Mi}\n"), "wf.yaml");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("steps[3].resources.tmp: resources.shm (200Mi) and resources.tmp "
                                            "(100Mi) are held in memory and must fit in resources.memory (256Mi)"),
            std::string::npos)
      << refused.status().message();
}

TEST(WorkflowManifest, ADiamondParsesWithEachStepAJob) {
  auto wf = ParseWorkflowManifest(Diamond(), "wf.yaml");
  ASSERT_TRUE(wf.ok()) << wf.status().ToString();
  EXPECT_EQ(wf->name(), "diamond");
  EXPECT_EQ(wf->on_failure(), "continue");
  ASSERT_EQ(wf->steps_size(), 4);
  EXPECT_EQ(wf->steps(1).name(), "b");
  EXPECT_EQ(wf->steps(1).job().name(), "b");
  EXPECT_EQ(wf->steps(1).job().api_version(), "idlegrid/v1");
  EXPECT_EQ(wf->steps(1).job().array_count(), 2u) << "fan-out: an item array";
  EXPECT_EQ(wf->steps(1).job().resources().memory_bytes(), kDefaultMemoryBytes);
  EXPECT_EQ(wf->steps(1).job().resources().shm_bytes(), kDefaultShmBytes);
  const v1::WorkflowStepSpec& d = wf->steps(3);
  ASSERT_EQ(d.job().inputs_size(), 1);
  ASSERT_EQ(d.from_steps_size(), 2);
  EXPECT_EQ(d.from_steps(1).step(), "c");
  EXPECT_EQ(d.from_steps(1).output(), "hello.txt");
  EXPECT_EQ(d.from_steps(1).path(), "/in/c");
  EXPECT_EQ(DependenciesOf(d), (std::vector<std::string>{"b", "c"})) << "inputs imply dependencies";
  EXPECT_TRUE(IsWorkflowManifest(Diamond()));
  EXPECT_FALSE(IsWorkflowManifest("apiVersion: idlegrid/v1\nname: x\n"));
  EXPECT_FALSE(IsWorkflowManifest("[unclosed"));
}

TEST(WorkflowManifest, OnFailureDefaultsToStop) {
  std::string text = Diamond();
  text.erase(text.find("onFailure: continue\n"), 20);
  auto wf = ParseWorkflowManifest(text, "wf.yaml");
  ASSERT_TRUE(wf.ok()) << wf.status().ToString();
  EXPECT_EQ(wf->on_failure(), "stop");
}

TEST(WorkflowManifest, ACycleIsNamed) {
  std::string text = Diamond("    dependsOn: [d2]\n  - name: d2\n    dependsOn: [d]\n    image: " + kImage + "\n");
  auto wf = ParseWorkflowManifest(text, "wf.yaml");
  ASSERT_FALSE(wf.ok());
  EXPECT_NE(wf.status().message().find("wf.yaml:6:3: steps: the steps' dependencies form a cycle: d -> d2 -> d"),
            std::string::npos)
      << wf.status().message();
}

TEST(WorkflowManifest, AnUnknownDependencyPointsAtItsValue) {
  std::string text = Diamond();
  text.replace(text.find("dependsOn: [a]"), 14, "dependsOn: [z]");
  auto wf = ParseWorkflowManifest(text, "wf.yaml");
  ASSERT_FALSE(wf.ok());
  EXPECT_EQ(wf.status().message(), "wf.yaml:10:17: steps[1].dependsOn[0]: no step named \"z\" in this workflow");
}

TEST(WorkflowManifest, ADuplicateStepNameIsRefused) {
  std::string text = Diamond();
  text.replace(text.find("name: c"), 7, "name: b");
  auto wf = ParseWorkflowManifest(text, "wf.yaml");
  ASSERT_FALSE(wf.ok());
  EXPECT_EQ(wf.status().message(), "wf.yaml:14:11: steps[2].name: duplicate step name \"b\" (also steps[1])");
}

TEST(WorkflowManifest, AnUpstreamInputIsCheckedWhereItIsWritten) {
  std::string text = Diamond();
  text.replace(text.find("path: /in/c"), 11, "path: in/c");
  auto wf = ParseWorkflowManifest(text, "wf.yaml");
  ASSERT_FALSE(wf.ok());
  EXPECT_NE(wf.status().message().find("wf.yaml:22:48: steps[3].inputs[2].path: "), std::string::npos)
      << wf.status().message();
  std::string unknown = Diamond();
  unknown.replace(unknown.find("fromStep: c"), 11, "fromStep: q");
  auto wf2 = ParseWorkflowManifest(unknown, "wf.yaml");
  ASSERT_FALSE(wf2.ok());
  EXPECT_NE(wf2.status().message().find("wf.yaml:22:9: steps[3].inputs[2]: no step named \"q\""), std::string::npos)
      << wf2.status().message();
}

TEST(WorkflowManifest, AStepsJobFieldsKeepTheJobManifestsRules) {
  std::string text = Diamond();
  text.replace(text.find("args: [write, a]"), 16, "resources: {memory: 1Mi}");
  auto wf = ParseWorkflowManifest(text, "wf.yaml");
  ASSERT_FALSE(wf.ok());
  EXPECT_NE(wf.status().message().find("wf.yaml:8:25: steps[0].resources.memory: must be at least"), std::string::npos)
      << wf.status().message();
  std::string typo = Diamond();
  typo.replace(typo.find("dependsOn: [a]"), 9, "dependOn");
  auto wf2 = ParseWorkflowManifest(typo, "wf.yaml");
  ASSERT_FALSE(wf2.ok());
  EXPECT_NE(wf2.status().message().find("unknown field \"dependOn\" in steps[1] (did you mean \"dependsOn\"?)"),
            std::string::npos)
      << wf2.status().message();
}

TEST(WorkflowManifest, JsonSubmissionsGetTheSameGraphRules) {
  auto wf = ParseWorkflowManifest(Diamond(), "wf.yaml");
  ASSERT_TRUE(wf.ok());
  v1::WorkflowSpec spec = *wf;
  spec.mutable_steps(0)->add_depends_on("d");
  Status st = ValidateWorkflowSpec(spec);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("spec.steps: the steps' dependencies form a cycle: a -> d -> b -> a"), std::string::npos)
      << st.message();
  spec = *wf;
  spec.set_on_failure("maybe");
  EXPECT_EQ(ValidateWorkflowSpec(spec).message(), "spec.on_failure: must be \"stop\" or \"continue\", got \"maybe\"");
}

}  // namespace
}  // namespace idlegrid::manifest
