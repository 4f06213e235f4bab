#include "runtime/routing_runtime.h"

#include <gtest/gtest.h>

namespace idlegrid::runtime {
namespace {

v1::Enforcement RlimitsOnly() {
  v1::Enforcement e;
  e.set_memory("rlimit");
  e.set_pids("rlimit");
  e.set_disk("rlimit");
  return e;
}

RunSpec Plain() {
  RunSpec s;
  s.runtime = "runc";
  s.resources.set_cpu(0.25);
  s.resources.set_memory_bytes(128ull << 20);
  return s;
}

TEST(RoutingRuntime, PlainRuncJobsTakeTheFastDriver) { EXPECT_TRUE(UseFastDriver(Plain(), RlimitsOnly(), {"runc"})); }

TEST(RoutingRuntime, WhatOnlyPodmanCanDoGoesToPodman) {
  RunSpec gvisor = Plain();
  gvisor.runtime = "runsc";
  EXPECT_FALSE(UseFastDriver(gvisor, RlimitsOnly(), {"runc"})) << "gVisor is podman's";
  RunSpec gpu = Plain();
  gpu.gpu_uuids = {"GPU-1"};
  EXPECT_FALSE(UseFastDriver(gpu, RlimitsOnly(), {"runc"})) << "CDI devices are podman's";
  RunSpec strict = Plain();
  strict.resources.set_strict_cpu(true);
  EXPECT_FALSE(UseFastDriver(strict, RlimitsOnly(), {"runc"})) << "the fast driver cannot cap CPU here";
  EXPECT_FALSE(UseFastDriver(Plain(), RlimitsOnly(), {})) << "an unusable fast driver takes nothing";
}

}  // namespace
}  // namespace idlegrid::runtime
