// The graph rules of a workflow, shared by manifests and JSON submissions.
#include "manifest/workflow.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "manifest/quote.h"

namespace idlegrid::manifest {
namespace {

using Violation = std::optional<WorkflowViolation>;

WorkflowViolation AtWorkflow(const std::string& field, const std::string& manifest_field, std::string why) {
  WorkflowViolation v;
  v.field = field;
  v.manifest_field = manifest_field;
  v.description = std::move(why);
  return v;
}

WorkflowViolation AtStep(int step, const std::string& field, const std::string& manifest_field, std::string why) {
  WorkflowViolation v;
  v.step = step;
  v.field = "steps[" + std::to_string(step) + "]." + field;
  v.manifest_field = manifest_field;
  v.description = std::move(why);
  return v;
}

// A placeholder digest: a step's upstream inputs are checked as inputs
// before the digests they will have exist.
constexpr char kPendingDigest[] = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

// The step's job with its upstream inputs appended, checked as one spec: a
// violation at inputs[k] past the job's own is about from_steps[k - own].
Violation CheckStepJob(int index, const v1::WorkflowStepSpec& step) {
  v1::JobSpec probe = step.job();
  const int own = probe.inputs_size();
  for (const v1::StepInput& from : step.from_steps()) {
    v1::InputSpec* in = probe.add_inputs();
    in->set_artifact(kPendingDigest);
    in->set_path(from.path());
  }
  std::optional<FieldViolation> v = FindViolation(probe);
  if (!v) return std::nullopt;
  WorkflowViolation out = AtStep(index, "job." + v->field, v->manifest_field, v->description);
  if (v->field.starts_with("inputs[")) {
    const size_t close = v->field.find(']');
    const int k = std::stoi(v->field.substr(7, close - 7));
    out.tail = v->field.substr(close + 1);
    out.input = k < own ? WorkflowViolation::Input::kJob : WorkflowViolation::Input::kFromStep;
    out.input_index = k < own ? k : k - own;
    if (k >= own)
      out.field = "steps[" + std::to_string(index) + "].from_steps[" + std::to_string(k - own) + "]" + out.tail;
  }
  return out;
}

// The first cycle among the steps, as "a -> b -> a", or "".
std::string FindCycle(const v1::WorkflowSpec& spec) {
  std::map<std::string, std::vector<std::string>> deps;
  for (const auto& s : spec.steps()) deps[s.name()] = DependenciesOf(s);
  std::map<std::string, int> color;  // 0 new, 1 on the path, 2 done
  std::vector<std::string> path;
  std::string cycle;
  std::function<bool(const std::string&)> visit = [&](const std::string& name) -> bool {
    color[name] = 1;
    path.push_back(name);
    for (const std::string& d : deps[name]) {
      if (color[d] == 1) {
        auto from = std::find(path.begin(), path.end(), d);
        for (auto it = from; it != path.end(); ++it) cycle += *it + " -> ";
        cycle += d;
        return true;
      }
      if (color[d] == 0 && visit(d)) return true;
    }
    path.pop_back();
    color[name] = 2;
    return false;
  };
  for (const auto& s : spec.steps()) {
    if (color[s.name()] == 0 && visit(s.name())) return cycle;
  }
  return "";
}

}  // namespace

std::vector<std::string> DependenciesOf(const v1::WorkflowStepSpec& step) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  for (const std::string& d : step.depends_on()) add(d);
  for (const v1::StepInput& in : step.from_steps()) add(in.step());
  return out;
}

std::optional<WorkflowViolation> FindWorkflowViolation(const v1::WorkflowSpec& spec) {
  if (spec.api_version() != kApiVersion) {
    return AtWorkflow("api_version", "apiVersion",
                      "must be " + Quote(kApiVersion) + ", got " + Quote(spec.api_version()));
  }
  if (!IsValidObjectName(spec.name())) {
    return AtWorkflow(
        "name", "name",
        "must be 1 to 63 characters of a-z 0-9 - _ . starting with a letter or digit, got " + Quote(spec.name()));
  }
  if (spec.on_failure() != kOnFailureStop && spec.on_failure() != kOnFailureContinue) {
    return AtWorkflow("on_failure", "onFailure", "must be \"stop\" or \"continue\", got " + Quote(spec.on_failure()));
  }
  if (spec.steps_size() == 0) return AtWorkflow("steps", "steps", "a workflow needs at least one step");
  if (spec.steps_size() > kMaxWorkflowSteps) {
    return AtWorkflow("steps", "steps", "at most " + std::to_string(kMaxWorkflowSteps) + " steps");
  }
  std::map<std::string, int> index_of;
  for (int i = 0; i < spec.steps_size(); ++i) {
    const std::string& name = spec.steps(i).name();
    if (!IsValidObjectName(name)) {
      return AtStep(i, "name", "name",
                    "must be 1 to 63 characters of a-z 0-9 - _ . starting with a letter or digit, got " + Quote(name));
    }
    if (auto [it, fresh] = index_of.emplace(name, i); !fresh) {
      return AtStep(i, "name", "name",
                    "duplicate step name " + Quote(name) + " (also steps[" + std::to_string(it->second) + "])");
    }
  }
  for (int i = 0; i < spec.steps_size(); ++i) {
    const v1::WorkflowStepSpec& step = spec.steps(i);
    for (int d = 0; d < step.depends_on_size(); ++d) {
      const std::string& dep = step.depends_on(d);
      const std::string at = "[" + std::to_string(d) + "]";
      if (dep == step.name()) return AtStep(i, "depends_on" + at, "dependsOn" + at, "a step cannot depend on itself");
      if (!index_of.contains(dep)) {
        return AtStep(i, "depends_on" + at, "dependsOn" + at, "no step named " + Quote(dep) + " in this workflow");
      }
    }
    for (int k = 0; k < step.from_steps_size(); ++k) {
      const v1::StepInput& from = step.from_steps(k);
      WorkflowViolation v;
      if (from.step() == step.name()) {
        v = AtStep(i, "", "", "a step cannot take an input from itself");
      } else if (!index_of.contains(from.step())) {
        v = AtStep(i, "", "", "no step named " + Quote(from.step()) + " in this workflow");
      } else if (from.output().empty() || from.output().starts_with("/") ||
                 from.output().find("..") != std::string::npos) {
        v = AtStep(i, "", "",
                   "output: expected a file's path relative to the upstream step's output directory, got " +
                       Quote(from.output()));
      } else {
        continue;
      }
      v.field = "steps[" + std::to_string(i) + "].from_steps[" + std::to_string(k) + "]";
      v.input = WorkflowViolation::Input::kFromStep;
      v.input_index = k;
      return v;
    }
    if (Violation v = CheckStepJob(i, step)) return v;
  }
  if (std::string cycle = FindCycle(spec); !cycle.empty()) {
    return AtWorkflow("steps", "steps", "the steps' dependencies form a cycle: " + cycle);
  }
  return std::nullopt;
}

Status ValidateWorkflowSpec(const v1::WorkflowSpec& spec) {
  std::optional<WorkflowViolation> v = FindWorkflowViolation(spec);
  if (!v) return Status::Ok();
  return Status::InvalidArgument("spec." + v->field + ": " + v->description);
}

void ApplyWorkflowDefaults(v1::WorkflowSpec* spec) {
  if (spec->on_failure().empty()) spec->set_on_failure(kOnFailureStop);
  for (v1::WorkflowStepSpec& step : *spec->mutable_steps()) {
    v1::JobSpec* job = step.mutable_job();
    ApplyDefaults(job);
    if (job->api_version().empty()) job->set_api_version(spec->api_version());
    if (job->name().empty()) job->set_name(step.name());
  }
}

}  // namespace idlegrid::manifest
