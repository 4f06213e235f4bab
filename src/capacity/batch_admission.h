#pragma once
// The database's side of the dual-layer concurrency control: inside the
// transaction that commits a batch of assignments, a store loads what each
// node of the batch offers (its stored NodeInfo and Advertisement) and what
// its active attempts already hold, then admits the batch's attempts by this
// rule. The coordinator's snapshot may be stale, or another coordinator may
// have committed first: whatever does not fit any more is not admitted and
// its task stays queued for re-planning.
//
// The rule is the capacity ledger's (capacity/ledger.h), the one the
// coordinator's snapshot and the agent use too, so a plan made from a fresh
// snapshot always passes. Pure: both store backends only read the rows in
// and write the admitted attempts out; neither decides anything.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "capacity/node_capacity.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::capacity {

// One attempt of a batch, as the store read it inside its transaction.
struct BatchCandidate {
  std::string node_id;
  std::string job_id;
  uint32_t index = 0;
  // The task is still queued (on PostgreSQL: and no other coordinator holds
  // its row right now). A task that is not is never admitted.
  bool queued = false;
  AttemptHold want;  // the job's reservation, on the placement's devices
};

class BatchAdmission {
 public:
  // Starts checking `node_id` with what its stored info and advertisement
  // offer. A node without stored capacity (0 cores: nothing advertised yet)
  // is left unchecked and takes anything. Returns whether it is checked.
  bool AddNode(const std::string& node_id, const v1::NodeInfo& info, const v1::Advertisement& ad);
  // Records what an active attempt holds on a checked node (whether or not
  // it fits: stored holds are facts, even on a node that shrank).
  void Hold(const std::string& node_id, const AttemptHold& h);

  // Indices into `batch` of the attempts admitted, in batch order: each is
  // queued, its task not already admitted earlier in the batch (the same task
  // twice: the first placement that fits takes it), and it fits its node next
  // to everything held and admitted so far. What is admitted is held.
  std::vector<size_t> Admit(const std::vector<BatchCandidate>& batch);

 private:
  std::unordered_map<std::string, NodeCapacity> nodes_;
};

}  // namespace idlegrid::capacity
