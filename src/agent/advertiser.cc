#include "agent/advertiser.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>

#include "advert/advertisement.h"
#include "capacity/disk_floor.h"
#include "common/fs.h"

namespace idlegrid::agent {

v1::Advertisement BuildAdvertisement(const AdvertiserInputs& in) {
  v1::Advertisement ad;
  *ad.mutable_inventory() = in.inventory;
  std::vector<v1::GpuDevice> devices(in.inventory.gpus().devices().begin(), in.inventory.gpus().devices().end());
  // What is left is the coordinator's rule (capacity/ledger.h), not a copy of it.
  capacity::NodeCapacity left = capacity::NodeCapacity::Offered(in.capacity, in.owner.policy, devices);
  for (const auto& h : in.holds) left.Hold(h);
  ad.mutable_inventory()->mutable_gpus()->clear_devices();
  for (size_t i = 0; i < devices.size(); ++i) {
    v1::GpuDevice& d = devices[i];
    left.Describe(i, in.owner.policy.reserved_gpu_memory_bytes(), &d);
    d.set_measured(false);  // only the coordinator may call a figure measured
    if (std::string hold = GpuOwnerHold(in.owner.lend_gpus, in.owner_command, d); !hold.empty()) {
      d.set_owner_hold(hold);
    }
    *ad.mutable_inventory()->mutable_gpus()->add_devices() = std::move(d);
  }
  *ad.mutable_capacity() = in.capacity;
  ad.set_allocatable_cpu(left.ledger().FreeCpu());
  ad.set_allocatable_memory_bytes(left.ledger().FreeMemory());
  ad.set_region(in.region);
  for (const auto& a : in.owner.asks) *ad.add_asks() = a;
  *ad.mutable_policy() = in.owner.policy;
  for (const auto& i : in.cached_images) ad.add_cached_images(i);
  for (const auto& i : in.cached_inputs) ad.add_cached_inputs(i);
  ad.set_agent_version(in.agent_version);
  ad.set_protocol_version("idlegrid.v1");
  std::vector<std::string> running = in.running_attempts;
  std::sort(running.begin(), running.end());
  for (const auto& r : running) ad.add_running_attempts(r);
  return ad;
}

std::string Fingerprint(const v1::Advertisement& ad) {
  v1::Advertisement f = ad;
  f.clear_sequence();
  f.clear_created_at_ms();
  f.mutable_inventory()->clear_memory_available_bytes();
  // Free space changes all the time; only a disk filling up (or freed) is news.
  for (auto& d : *f.mutable_inventory()->mutable_disks()) {
    d.set_free_bytes(capacity::DiskIsFull(d.free_bytes(), d.total_bytes()) ? 0 : 1);
  }
  for (auto& g : *f.mutable_inventory()->mutable_gpus()->mutable_devices()) {
    g.clear_memory_used_bytes();
    g.clear_memory_free_bytes();
    g.clear_power_draw_mw();
    g.clear_temperature_c();
    g.clear_sm_clock_mhz();
    g.clear_memory_clock_mhz();
    g.clear_throttle_reasons();
    g.clear_utilization_gpu_pct();
    g.clear_utilization_memory_pct();
  }
  std::string out;
  f.SerializeToString(&out);
  return out;
}

Advertiser::Advertiser(advert::NodeKey key, int64_t refresh_ms, std::string sequence_file)
    : key_(std::move(key)), refresh_ms_(refresh_ms), sequence_file_(std::move(sequence_file)) {
  if (sequence_file_.empty() || !PathExists(sequence_file_)) return;
  auto text = ReadFile(sequence_file_);
  // Digits only (sscanf and strtoull would take "-1" as 2^64 - 1).
  uint64_t last = 0;
  bool digits = text.ok() && !text->empty() && (*text)[0] != '\n';
  for (size_t i = 0; digits && i < text->size() && (*text)[i] != '\n'; ++i) {
    const char c = (*text)[i];
    digits = c >= '0' && c <= '9' && last <= (UINT64_MAX - 9) / 10;
    last = last * 10 + static_cast<uint64_t>(c - '0');
  }
  if (digits) {
    last_sequence_ = last;
  } else {
    spdlog::warn("{}: not a sequence number; starting from the clock", sequence_file_);
  }
}

std::optional<v1::SignedAdvertisement> Advertiser::Next(v1::Advertisement ad, int64_t now_ms, bool force) {
  std::string fp = Fingerprint(ad);
  if (!force && fp == last_fingerprint_ && now_ms - last_sent_ms_ < refresh_ms_) return std::nullopt;
  last_sequence_ = std::max<uint64_t>(last_sequence_ + 1, static_cast<uint64_t>(std::max<int64_t>(now_ms, 0)));
  if (!sequence_file_.empty()) {
    // Kept before it is sent. A failure (a full disk) costs only the
    // guarantee across a restart with the clock stepped back.
    if (Status st = WriteFileAtomic(sequence_file_, std::to_string(last_sequence_) + "\n", 0600); !st.ok()) {
      spdlog::warn("advertisement sequence not kept: {}", st.WithContext(sequence_file_).message());
    }
  }
  ad.set_sequence(last_sequence_);
  ad.set_created_at_ms(now_ms);
  last_fingerprint_ = fp;
  last_sent_ms_ = now_ms;
  return advert::SignAdvertisement(ad, key_);
}

}  // namespace idlegrid::agent
