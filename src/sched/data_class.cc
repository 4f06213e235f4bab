#include "sched/data_class.h"

namespace idlegrid::sched {

sched::DataClassRule DataClassOf(const sched::DataPolicy& policy, const v1::JobSpec& spec) {
  if (spec.readiness()) return {};
  return sched::RuleFor(policy, spec.data_class());
}

void ApplyDataClass(sched::DataClassRule rule, sched::TaskView* task) {
  if (rule.exclusive_gpu) {
    task->co_tenancy_allowed = false;
    task->vram_slice = false;
  }
  task->data_class = std::move(rule);
}

int TrustTierOf(const sched::DataPolicy& policy, const std::string& node_id, const v1::Measurement& measurement,
                const v1::Advertisement& ad) {
  sched::TrustEvidence evidence;
  evidence.measured = measurement.passed();
  for (const auto& d : ad.inventory().gpus().devices()) evidence.simulated_gpus |= d.simulated();
  evidence.assigned_tier = sched::AssignedTier(policy, node_id);
  return sched::NodeTrustTier(evidence);
}

Status CheckDataClass(const sched::DataPolicy& policy, const v1::JobSpec& spec) {
  const sched::DataClassRule rule = DataClassOf(policy, spec);
  if (rule.exclusive_gpu && spec.resources().gpu_milli() > 0) {
    return Status::InvalidArgument("spec.resources.gpu_milli: data class " + rule.name +
                                   " forbids sharing a GPU; ask for a whole GPU (gpus: 1)");
  }
  return Status::Ok();
}

}  // namespace idlegrid::sched
