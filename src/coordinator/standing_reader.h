#pragma once
// The standing stage's inputs for a dispatch pass (sched/standing.h,
// verify/standing.h): which provider accounts have earned, per image, the
// record that lets their results go unreplicated (provider_trust), and how
// the verified work in flight splits between them and the rest. The
// scheduler holds unproven accounts to the operator's share of it.
//
// Owns one lock (a leaf), held across store reads of jobs but never with
// another lock. It keeps, between passes, the jobs of the last pass's queued
// and active tasks (an active attempt's job is read once, not once per pass)
// and each provider's proven images as last read (for a pass whose read
// fails: a failed read must neither lift the cap nor prove anyone).
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "sched/scheduler.h"
#include "store/store.h"
#include "verify/spec.h"

namespace idlegrid::coordinator {

class StandingReader {
 public:
  // The fleet as the node table knows it now.
  struct Fleet {
    std::map<std::string, std::string> provider_of;  // node id -> provider account
    std::set<std::string> providers;                 // every node's
    std::set<std::string> taking;                    // of nodes that may take work now
  };

  StandingReader(store::Store* store, const verify::VerificationPolicy& policy) : store_(store), policy_(policy) {}

  // No cap (unproven_share 1) when the operator set none or no queued task
  // is verified. Trust records are read for providers that may take work;
  // the others' (their attempts in flight) are as last read.
  sched::StandingState Read(const std::vector<store::QueuedTask>& queued,
                            const std::vector<store::ActiveAttempt>& active, const Fleet& fleet) IG_EXCLUDES(mu_);

 private:
  struct JobStanding {
    bool verified = false;
    std::string image;  // manifest digest
  };
  // The jobs of `queued` and `active` (read from the store only when not
  // known from the last pass); what neither names is forgotten.
  std::map<std::string, JobStanding> JobsOf(const std::vector<store::QueuedTask>& queued,
                                            const std::vector<store::ActiveAttempt>& active) IG_EXCLUDES(mu_);
  void RefreshProven(const std::set<std::string>& taking) IG_EXCLUDES(mu_);

  store::Store* const store_;
  const verify::VerificationPolicy policy_;
  Mutex mu_;
  std::map<std::string, JobStanding> jobs_ IG_GUARDED_BY(mu_);
  std::map<std::string, std::vector<std::string>> proven_images_ IG_GUARDED_BY(mu_);
};

}  // namespace idlegrid::coordinator
