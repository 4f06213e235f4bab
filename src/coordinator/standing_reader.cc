// The standing stage's inputs (standing_reader.h).
#include "coordinator/standing_reader.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "jobs/attempt_events.h"
#include "manifest/manifest.h"

namespace idlegrid::coordinator {

sched::StandingState StandingReader::Read(const std::vector<store::QueuedTask>& queued,
                                          const std::vector<store::ActiveAttempt>& active, const Fleet& fleet) {
  sched::StandingState out;
  if (policy_.unproven_share >= 1) return out;
  const bool any_verified =
      std::any_of(queued.begin(), queued.end(), [](const store::QueuedTask& q) { return jobs::VerifiedJob(q.spec); });
  if (!any_verified) return out;
  out.unproven_share = policy_.unproven_share;

  const std::map<std::string, JobStanding> jobs = JobsOf(queued, active);
  RefreshProven(fleet.taking);
  {
    MutexLock lock(&mu_);
    for (const std::string& p : fleet.providers) {
      auto it = proven_images_.find(p);
      if (it == proven_images_.end()) continue;
      for (const std::string& image : it->second) out.proven[image].insert(p);
    }
  }
  for (const auto& a : active) {
    auto job = jobs.find(a.job_id);
    if (job == jobs.end() || !job->second.verified) continue;
    ++out.verified_in_flight;
    auto p = fleet.provider_of.find(a.node_id);
    auto proven = out.proven.find(job->second.image);
    if (p == fleet.provider_of.end() || proven == out.proven.end() || !proven->second.count(p->second)) {
      ++out.unproven_in_flight;
    }
  }
  return out;
}

std::map<std::string, StandingReader::JobStanding> StandingReader::JobsOf(
    const std::vector<store::QueuedTask>& queued, const std::vector<store::ActiveAttempt>& active) {
  std::map<std::string, JobStanding> jobs;
  MutexLock lock(&mu_);
  for (const auto& q : queued) {
    jobs.try_emplace(q.job_id, JobStanding{jobs::VerifiedJob(q.spec), manifest::ImageDigestOf(q.spec.image())});
  }
  for (const auto& a : active) {
    if (jobs.count(a.job_id)) continue;
    if (auto known = jobs_.find(a.job_id); known != jobs_.end()) {
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
  jobs_ = jobs;  // what neither list names is dropped
  return jobs;
}

void StandingReader::RefreshProven(const std::set<std::string>& taking) {
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
      if (!r.image.empty() && r.consecutive >= policy_.trust_threshold) images.push_back(r.image);
    }
    MutexLock lock(&mu_);
    proven_images_[p] = std::move(images);
  }
}

}  // namespace idlegrid::coordinator
