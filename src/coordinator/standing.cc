// The standing stage's inputs (sched/standing.h, verify/standing.h): which
// provider accounts have earned, per image, the record that lets their
// results go unreplicated (provider_trust), and how the verified work in
// flight splits between them and the rest. The scheduler holds unproven
// accounts to the operator's share of it.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "coordinator/coordinator.h"
#include "jobs/attempt_events.h"
#include "manifest/manifest.h"

namespace idlegrid::coordinator {

sched::StandingState Coordinator::StandingStateOf(const std::vector<store::QueuedTask>& queued,
                                                  const std::vector<store::ActiveAttempt>& active) {
  sched::StandingState out;
  const verify::VerificationPolicy& policy = options_.verification;
  if (policy.unproven_share >= 1) return out;
  const bool any_verified =
      std::any_of(queued.begin(), queued.end(), [](const store::QueuedTask& q) { return jobs::VerifiedJob(q.spec); });
  if (!any_verified) return out;
  out.unproven_share = policy.unproven_share;

  std::map<std::string, JobStanding> jobs;
  {
    MutexLock lock(&standing_mu_);
    for (const auto& q : queued) {
      jobs.try_emplace(q.job_id, JobStanding{jobs::VerifiedJob(q.spec), manifest::ImageDigestOf(q.spec.image())});
    }
    for (const auto& a : active) {
      if (jobs.count(a.job_id)) continue;
      if (auto known = standing_jobs_.find(a.job_id); known != standing_jobs_.end()) {
        jobs.emplace(a.job_id, known->second);
        continue;
      }
      auto job = store_->GetJob(a.job_id);
      if (!job.ok()) {
        // Counted as unverified this pass; the next reads it again.
        spdlog::warn("standing: job {} not read: {}", a.job_id, job.status().ToString());
        continue;
      }
      jobs.emplace(a.job_id, JobStanding{jobs::VerifiedJob(job->spec()), manifest::ImageDigestOf(job->spec().image())});
    }
    standing_jobs_ = jobs;  // what neither list names is dropped
  }

  std::map<std::string, std::string> provider_of;  // node id -> provider account
  std::set<std::string> providers, taking;         // all; of nodes that may take work now
  {
    MutexLock lock(&mu_);
    for (const auto& [id, n] : nodes_) {
      provider_of[id] = n.provider;
      providers.insert(n.provider);
      if (n.online && sessions_.Connected(id)) taking.insert(n.provider);
    }
  }
  // Records are read for providers that may take work; the others' (their
  // attempts in flight) are as last read.
  for (const std::string& p : taking) {
    auto records = store_->TrustOf(p);
    if (!records.ok()) {
      // As last read: a failed read must neither lift the cap (the only
      // proven provider looking unproven) nor prove anyone.
      spdlog::warn("standing: trust of provider {} not read ({}); using what was read before", p,
                   records.status().ToString());
      continue;
    }
    std::vector<std::string> images;
    for (const store::TrustRecord& r : *records) {
      if (!r.image.empty() && r.consecutive >= policy.trust_threshold) images.push_back(r.image);
    }
    MutexLock lock(&standing_mu_);
    proven_images_[p] = std::move(images);
  }
  {
    MutexLock lock(&standing_mu_);
    for (const std::string& p : providers) {
      auto it = proven_images_.find(p);
      if (it == proven_images_.end()) continue;
      for (const std::string& image : it->second) out.proven[image].insert(p);
    }
  }
  for (const auto& a : active) {
    auto job = jobs.find(a.job_id);
    if (job == jobs.end() || !job->second.verified) continue;
    ++out.verified_in_flight;
    auto p = provider_of.find(a.node_id);
    auto proven = out.proven.find(job->second.image);
    if (p == provider_of.end() || proven == out.proven.end() || !proven->second.count(p->second)) {
      ++out.unproven_in_flight;
    }
  }
  return out;
}

}  // namespace idlegrid::coordinator
