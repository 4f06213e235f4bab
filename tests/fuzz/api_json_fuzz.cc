// Fuzzes the HTTPS/JSON API's request bodies. The route's own ParseBody
// (src/api/http_api.cc) is file-local, so this makes the same call it makes,
// google::protobuf::util::JsonStringToMessage with default options, into the
// message the route expects (picked by the first byte: SubmitJobRequest,
// SubmitWorkflowRequest, RegisterImageRequest, CancelJobRequest,
// RetryJobRequest, DrainNodeRequest), and then runs the pure checks the
// coordinator runs on a submitted spec (JobRequests::Prepare,
// WorkflowService::Submit): ApplyDefaults, ValidateJobSpec, SpecForTask,
// InputArtifacts; ApplyWorkflowDefaults, ValidateWorkflowSpec. Invariants: a
// parsed body survives a JSON round trip; ApplyDefaults is idempotent; a valid
// spec's image parses (ParseImageRef), InputArtifacts is sorted and distinct,
// InputsForTask is SpecForTask's inputs; a valid workflow's dependencies each
// name another step.
#include <google/protobuf/util/json_util.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "manifest/image_ref.h"
#include "manifest/items.h"
#include "manifest/manifest.h"
#include "manifest/workflow.h"

namespace {

namespace manifest = idlegrid::manifest;
namespace v1 = idlegrid::v1;
using idlegrid::fuzz::DeterministicBytes;

// The body as the route parses it; false when the route would answer 400.
template <typename Request>
bool Parse(const std::string& body, Request* out) {
  if (!google::protobuf::util::JsonStringToMessage(body, out).ok()) return false;
  std::string json;
  FUZZ_CHECK(google::protobuf::util::MessageToJsonString(*out, &json).ok());
  Request back;
  FUZZ_CHECK(google::protobuf::util::JsonStringToMessage(json, &back).ok());
  FUZZ_CHECK(DeterministicBytes(back) == DeterministicBytes(*out));
  return true;
}

void CheckJob(v1::JobSpec spec) {
  manifest::ApplyDefaults(&spec);
  v1::JobSpec twice = spec;
  manifest::ApplyDefaults(&twice);
  FUZZ_CHECK(DeterministicBytes(twice) == DeterministicBytes(spec));
  if (!manifest::ValidateJobSpec(spec).ok()) return;
  FUZZ_CHECK(manifest::ParseImageRef(spec.image()).ok());
  const std::vector<std::string> artifacts = manifest::InputArtifacts(spec);
  for (size_t i = 1; i < artifacts.size(); ++i) FUZZ_CHECK(artifacts[i - 1] < artifacts[i]);
  const uint32_t tasks = spec.array_count() < 16 ? spec.array_count() : 16;
  for (uint32_t t = 0; t < tasks; ++t) {
    const v1::JobSpec task = manifest::SpecForTask(spec, t);
    const std::vector<v1::InputSpec> inputs = manifest::InputsForTask(spec, t);
    FUZZ_CHECK(static_cast<int>(inputs.size()) == task.inputs_size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      FUZZ_CHECK(DeterministicBytes(inputs[i]) == DeterministicBytes(task.inputs(static_cast<int>(i))));
    }
  }
}

void CheckWorkflow(v1::WorkflowSpec spec) {
  manifest::ApplyWorkflowDefaults(&spec);
  if (!manifest::ValidateWorkflowSpec(spec).ok()) return;
  std::set<std::string> names;
  for (const v1::WorkflowStepSpec& step : spec.steps()) names.insert(step.name());
  for (const v1::WorkflowStepSpec& step : spec.steps()) {
    for (const std::string& dep : manifest::DependenciesOf(step)) {
      FUZZ_CHECK(dep != step.name() && names.count(dep) == 1);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string body = idlegrid::fuzz::AsString(data + 1, size - 1);
  switch (data[0] % 6) {  // seeds start with '0'..'5'
    case 0: {
      v1::SubmitJobRequest r;
      if (Parse(body, &r)) CheckJob(r.spec());
      break;
    }
    case 1: {
      v1::SubmitWorkflowRequest r;
      if (Parse(body, &r)) CheckWorkflow(r.spec());
      break;
    }
    case 2: {
      v1::RegisterImageRequest r;
      Parse(body, &r);
      break;
    }
    case 3: {
      v1::CancelJobRequest r;
      Parse(body, &r);
      break;
    }
    case 4: {
      v1::RetryJobRequest r;
      Parse(body, &r);
      break;
    }
    default: {
      v1::DrainNodeRequest r;
      Parse(body, &r);
      break;
    }
  }
  return 0;
}
