#pragma once
// Simulated GPUs for tests and demos: `--simulate-gpu "RTX 4090:24GiB:8.9"`.
// A simulated device is advertised with simulated=true, so the coordinator and
// requesters can always tell it from hardware.
//
// Pure and thread-safe.
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::discovery {

// Parses "MODEL:MEMORY:CC".
//   MODEL  any non-empty text without ':' (spaces allowed, trimmed), e.g. "H100 80GB HBM3";
//   MEMORY a positive number with a binary unit: KiB/K, MiB/M, GiB/G, TiB/T
//          ("24GiB", "24G", "24576MiB", "1.5TiB"); G means GiB here, as GPU
//          memory is always quoted in binary units;
//   CC     the compute capability "MAJOR.MINOR" ("8.9", "10.0").
// The device gets `index`, uuid "SIM-<16 hex>" (a stable FNV-1a hash of the
// normalised spec and the index: the same spec at the same index always yields
// the same uuid, on every host), memory_free = total, driver_version
// "simulated", mig_mode "unsupported". InvalidArgument naming the bad part
// otherwise.
Result<v1::GpuDevice> ParseSimulatedGpu(const std::string& spec, uint32_t index);

// One device per spec, indexed in order from `first_index` (after a host's
// real devices), as a discovery result (available=true; "no device" when
// `specs` is empty). Fails on the first malformed spec.
Result<v1::GpuDiscovery> SimulatedGpus(const std::vector<std::string>& specs, uint32_t first_index = 0);

}  // namespace idlegrid::discovery
