#pragma once
// A job's data class and a node's trust tier as the coordinator applies them:
// the data policy (sched/data_policy.h) over a job spec and over what the
// coordinator knows of a node. Pure; coordinator/dispatcher.cc builds the scheduler's
// views with these, SubmitJob refuses what a class can never allow.
#include <string>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "sched/data_policy.h"
#include "sched/scheduler.h"

namespace idlegrid::sched {

// The rule a task of `spec` is placed under: none (no name) for a readiness
// benchmark, which measures unverified nodes by design; otherwise the
// policy's rule for the spec's class, the policy's default class when it
// names none.
sched::DataClassRule DataClassOf(const sched::DataPolicy& policy, const v1::JobSpec& spec);

// Carries `rule` into `task`; a class that wants a GPU of its own turns a
// VRAM slice into a whole device with at least that much VRAM.
void ApplyDataClass(sched::DataClassRule rule, sched::TaskView* task);

// The node's trust tier (sched::NodeTrustTier): measured when its readiness
// benchmark passed and it advertises no simulated GPU; raised by the
// policy's operator assignment for `node_id`.
int TrustTierOf(const sched::DataPolicy& policy, const std::string& node_id, const v1::Measurement& measurement,
                const v1::Advertisement& ad);

// At submission, after ValidateJobSpec: InvalidArgument naming the field when
// the spec's class can never take it (a GPU share under a class that wants a
// whole GPU), rather than leaving it queued until its timeout. OK otherwise.
Status CheckDataClass(const sched::DataPolicy& policy, const v1::JobSpec& spec);

}  // namespace idlegrid::sched
