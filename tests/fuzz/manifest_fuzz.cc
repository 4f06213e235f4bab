// Fuzzes the manifest parsers a requester's file reaches (`idlegrid submit`):
// manifest::ParseManifest for a job, manifest::ParseWorkflowManifest for a
// `kind: Workflow` (chosen by IsWorkflowManifest, as the CLI does). YAML and
// its JSON subset go through the same parser. An items file (`array: {items:
// FILE}`) reads a fixed JSON Lines text and a `dir:` input resolves to a fixed
// digest, so those paths are reached too. Invariants (manifest.h,
// workflow.h): no exception escapes; a failure is InvalidArgument
// "<file>:<line>:<col>: ..."; a parsed job passes ValidateJobSpec and its
// SpecDigest survives the proto JSON round trip the HTTP API and SDKs make; a
// parsed workflow passes ValidateWorkflowSpec, before and after that trip.
#include <google/protobuf/util/json_util.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "manifest/manifest.h"
#include "manifest/workflow.h"

namespace {

using idlegrid::Code;
using idlegrid::Result;
using idlegrid::Status;
namespace manifest = idlegrid::manifest;
namespace v1 = idlegrid::v1;

constexpr char kFile[] = "fuzz.yaml";

Result<std::string> ReadItems(const std::string& name) {
  if (name.rfind("missing", 0) == 0) return Status::InvalidArgument("cannot read " + name);
  return std::string("{\"seed\": 1, \"lr\": 0.1}\n{\"seed\": 2, \"lr\": \"0.3\"}\n");
}

Result<std::string> ResolveDir(const std::string& dir) {
  if (dir.rfind("missing", 0) == 0) return Status::InvalidArgument("cannot pack " + dir);
  return "sha256:" + std::string(64, 'd');
}

// "<file>:<line>:<col>: ...", as ParseManifest promises.
void CheckError(const Status& st) {
  FUZZ_CHECK(st.code() == Code::kInvalidArgument);
  const std::string& m = st.message();
  const std::string prefix = std::string(kFile) + ":";
  FUZZ_CHECK(m.rfind(prefix, 0) == 0);
  FUZZ_CHECK(m.size() > prefix.size() && std::isdigit(static_cast<unsigned char>(m[prefix.size()])));
}

template <typename Message>
Message JsonRoundTrip(const Message& m) {
  std::string json;
  FUZZ_CHECK(google::protobuf::util::MessageToJsonString(m, &json).ok());
  Message back;
  FUZZ_CHECK(google::protobuf::util::JsonStringToMessage(json, &back).ok());
  return back;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = idlegrid::fuzz::AsString(data, size);
  if (manifest::IsWorkflowManifest(text)) {
    Result<v1::WorkflowSpec> wf = manifest::ParseWorkflowManifest(text, kFile, ReadItems);
    if (!wf.ok()) {
      CheckError(wf.status());
      return 0;
    }
    FUZZ_CHECK(manifest::ValidateWorkflowSpec(wf.value()).ok());
    const v1::WorkflowSpec back = JsonRoundTrip(wf.value());
    FUZZ_CHECK(idlegrid::fuzz::DeterministicBytes(back) == idlegrid::fuzz::DeterministicBytes(wf.value()));
    FUZZ_CHECK(manifest::ValidateWorkflowSpec(back).ok());
    return 0;
  }
  Result<v1::JobSpec> spec = manifest::ParseManifest(text, kFile, ReadItems, ResolveDir);
  if (!spec.ok()) {
    CheckError(spec.status());
    return 0;
  }
  FUZZ_CHECK(manifest::ValidateJobSpec(spec.value()).ok());
  const std::string digest = manifest::SpecDigest(spec.value());
  FUZZ_CHECK(digest == manifest::SpecDigest(spec.value()));
  const v1::JobSpec back = JsonRoundTrip(spec.value());
  FUZZ_CHECK(manifest::SpecDigest(back) == digest);
  FUZZ_CHECK(manifest::ValidateJobSpec(back).ok());
  return 0;
}
