#pragma once
// Builds, versions and signs this node's advertisement, and decides when to
// send it: whenever something that matters changed (a job started or ended,
// the owner's policy, devices, the image cache) and at least every few
// minutes. Volatile readings (temperatures, free memory, clocks) alone do not
// trigger a send. Thread-compatible: the agent calls it from one thread.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "advert/node_key.h"
#include "agent/local_policy.h"
#include "agent/owner_command.h"
#include "capacity/node_capacity.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::agent {

struct AdvertiserInputs {
  v1::NodeInfo capacity;        // offered cores, memory, runtimes, enforcement
  v1::HostInventory inventory;  // discovery, simulated devices included
  OwnerPolicy owner;
  std::optional<OwnerCommand> owner_command;  // `agent pause` in force (per-GPU pauses hold devices back)
  std::vector<capacity::AttemptHold> holds;   // what running attempts hold
  std::vector<std::string> running_attempts;
  std::vector<std::string> cached_images;
  std::vector<std::string> cached_inputs;  // input digests in the node's input cache
  std::string region;
  std::string agent_version;
};

// The advertisement for these inputs, unsigned, sequence 0. Pure.
v1::Advertisement BuildAdvertisement(const AdvertiserInputs& in);
// The advertisement with volatile readings cleared: equal fingerprints mean
// nothing worth re-advertising changed. Pure.
std::string Fingerprint(const v1::Advertisement& ad);

class Advertiser {
 public:
  // `sequence_file` ("" for none) keeps the last sequence signed across
  // restarts: the coordinator refuses one not above what it accepted.
  explicit Advertiser(advert::NodeKey key, int64_t refresh_ms = 180'000, std::string sequence_file = "");
  // A signed advertisement if `ad` differs from the last one sent or the last
  // is older than the refresh period; nullopt otherwise. Sequences are
  // max(last + 1, now_ms), the last one read back from the sequence file at
  // start, so they keep increasing across restarts even when the wall clock
  // was stepped back between them (NTP correcting a clock that ran fast).
  std::optional<v1::SignedAdvertisement> Next(v1::Advertisement ad, int64_t now_ms, bool force = false);
  // Forget what was sent (e.g. the coordinator refused it), so the next call signs anew.
  void Reset() { last_fingerprint_.clear(); }
  const advert::NodeKey& key() const { return key_; }

 private:
  advert::NodeKey key_;
  int64_t refresh_ms_;
  std::string sequence_file_;
  uint64_t last_sequence_ = 0;
  int64_t last_sent_ms_ = 0;
  std::string last_fingerprint_;
};

}  // namespace idlegrid::agent
