// Fuzzes the host owner's policy file (<data-dir>/policy.yaml, read by the
// agent as it runs and by `idlegrid agent status`): agent::ParseOwnerPolicy,
// then agent::CheckOwnerPolicy of a plain job against what it parsed.
// Invariants (local_policy.h): no exception escapes; a failure is
// InvalidArgument "<file>:<line>:<col>: ..."; parsing is deterministic (the
// same text twice advertises the same policy, AdvertisedPolicyDiffers is
// false); every inline trusted image key is 32 bytes; every lent GPU is an
// index or a UUID (IsGpuSelector).
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>

#include "agent/local_policy.h"
#include "agent/owner_command.h"
#include "fuzz_support.h"

namespace {

using idlegrid::Code;
namespace agent = idlegrid::agent;
namespace v1 = idlegrid::v1;

constexpr char kFile[] = "policy.yaml";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = idlegrid::fuzz::AsString(data, size);
  auto policy = agent::ParseOwnerPolicy(text, kFile);
  if (!policy.ok()) {
    FUZZ_CHECK(policy.status().code() == Code::kInvalidArgument);
    const std::string& m = policy.status().message();
    const std::string prefix = std::string(kFile) + ":";
    FUZZ_CHECK(m.rfind(prefix, 0) == 0);
    FUZZ_CHECK(m.size() > prefix.size() && std::isdigit(static_cast<unsigned char>(m[prefix.size()])));
    return 0;
  }
  auto again = agent::ParseOwnerPolicy(text, kFile);
  FUZZ_CHECK(again.ok() && !agent::AdvertisedPolicyDiffers(policy.value(), again.value()));
  for (const auto& key : policy->trusted_image_keys) FUZZ_CHECK(key.key.size() == 32);
  if (policy->lend_gpus) {
    for (const std::string& gpu : *policy->lend_gpus) FUZZ_CHECK(agent::IsGpuSelector(gpu));
  }

  v1::JobSpec spec;
  spec.set_runtime("runc");
  spec.set_run_timeout_seconds(3600);
  spec.set_image("sim@sha256:" + std::string(64, 'a'));
  spec.mutable_resources()->set_cpu(1);
  (void)agent::CheckOwnerPolicy(spec, policy->policy);
  return 0;
}
