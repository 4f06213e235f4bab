#pragma once
// Workflow manifests (`kind: Workflow`, docs/workflows.md): named steps, each
// a job as in a job manifest, with dependencies and inputs taken from
// upstream steps' outputs. The YAML is parsed by the same parser as a job
// manifest (manifest.cc), so errors name file:line:column the same way;
// the graph's rules (unknown or duplicate steps, cycles) live here and also
// guard workflows that arrive as JSON.
//
// Pure and thread-safe, except the Load* functions, which read files.
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "manifest/manifest.h"

namespace idlegrid::manifest {

inline constexpr char kWorkflowKind[] = "Workflow";
inline constexpr char kOnFailureStop[] = "stop";
inline constexpr char kOnFailureContinue[] = "continue";
inline constexpr int kMaxWorkflowSteps = 1000;

// One broken rule of a WorkflowSpec. `step` is the index of the step it is
// about (-1: the workflow itself). Inputs are named by where they sit in the
// spec: `input` is kJob for step.job.inputs[input_index], kFromStep for
// step.from_steps[input_index] (a manifest writes both in one `inputs`
// list, so the parser maps them back to its own index); `tail` is what
// follows the input (".path"), and `manifest_field` the rest of the path
// within the step ("args[1]", "dependsOn[0]") when there is no input.
struct WorkflowViolation {
  int step = -1;
  enum class Input { kNone, kJob, kFromStep };
  Input input = Input::kNone;
  int input_index = 0;
  std::string tail;
  std::string field;           // proto path from the spec: "steps[1].job.args[0]"
  std::string manifest_field;  // manifest path within the step, or the workflow's field
  std::string description;
};

// The steps `step` waits for: its depends_on and the steps its inputs come
// from, each once, in the order first named.
std::vector<std::string> DependenciesOf(const v1::WorkflowStepSpec& step);

// The first rule `spec` breaks, or nullopt. Expects each step's job to have
// its defaults applied. Checks: apiVersion, name, onFailure, 1 to
// kMaxWorkflowSteps steps with distinct valid names, every dependency and
// input naming another step of the workflow, no cycle (the cycle is named:
// "a -> b -> a"), each step's job valid (ValidateJobSpec's rules, with its
// upstream inputs' paths checked as inputs: absolute, not inside the output
// directory, not clashing with another input).
std::optional<WorkflowViolation> FindWorkflowViolation(const v1::WorkflowSpec& spec);

// FindWorkflowViolation as a Status: InvalidArgument "spec.<field>: <why>".
Status ValidateWorkflowSpec(const v1::WorkflowSpec& spec);

// Fills each step's job defaults (ApplyDefaults), its api_version and its
// name (the step's), and the workflow's onFailure default (stop).
void ApplyWorkflowDefaults(v1::WorkflowSpec* spec);

// Whether the YAML text is a map whose `kind` is "Workflow" (false for
// anything else, including text that is not YAML: ParseManifest reports that).
bool IsWorkflowManifest(const std::string& yaml_text);

// Parses a workflow manifest; errors as ParseManifest's
// ("<filename>:<line>:<column>: steps[1].args[0]: ..."). The result passes
// ValidateWorkflowSpec.
Result<v1::WorkflowSpec> ParseWorkflowManifest(const std::string& yaml_text, const std::string& filename,
                                               ItemsFileReader read_items = nullptr);

// Reads a manifest file's text (at most kMaxManifestBytes + 1 bytes, so an
// oversized one is reported by the parser). InvalidArgument
// "<path>: cannot read: <reason>".
Result<std::string> ReadManifestText(const std::string& path);
// Reads and parses a workflow manifest; items files are named relative to it.
Result<v1::WorkflowSpec> LoadWorkflowFile(const std::string& path);

}  // namespace idlegrid::manifest
