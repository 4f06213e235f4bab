#pragma once
// A fixture that runs whole attempts through AttemptRunner against the fakes
// of attempt_fakes_support.h, in a temporary directory of its own.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <mutex>
#include <string>

#include "agent/attempt_fakes_support.h"
#include "agent/attempt_runner.h"
#include "agent/gpu_sampler.h"
#include "agent/log_shipper.h"
#include "common/fs.h"

namespace idlegrid::agent::testing {

class AttemptRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/attempt-runner-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // The scratch must exist while the job runs, or "it is gone afterwards"
    // would prove nothing.
    runtime_.while_running = [this](const runtime::RunSpec&) { scratch_seen_ = PathExists(Scratch()); };
  }
  void TearDown() override { (void)RemoveTree(dir_); }

  v1::Assignment Assignment() const {
    v1::Assignment a;
    a.set_attempt_id("a1");
    a.set_job_id("j1");
    a.set_task_index(2);
    a.set_lease_epoch(7);
    v1::JobSpec& spec = *a.mutable_spec();
    spec.set_image("sha256:" + std::string(64, 'b'));
    spec.add_command("/bin/job");
    spec.add_args("--fast");
    (*spec.mutable_env())["MODE"] = "test";
    spec.set_output_path("/out");
    spec.set_run_timeout_seconds(60);
    spec.set_runtime("runc");
    spec.mutable_resources()->set_cpu(1);
    spec.mutable_resources()->set_memory_bytes(64 << 20);
    return a;
  }

  void Run(const v1::Assignment& a) {
    LogShipper logs([this](const v1::AppendLogsRequest& req) {
      std::lock_guard<std::mutex> lock(logs_mu_);
      for (const auto& c : req.chunks()) logs_sent_ += c.data();
      return true;
    });
    AttemptEnv env;
    env.runtime = &runtime_;
    env.host = &host_;
    env.reporter = &reporter_;
    env.artifacts = &artifacts_;
    env.images = &images_;
    env.logs = &logs;
    env.attempts_dir = dir_ + "/attempts";
    env.cdi_spec_paths = {dir_ + "/cdi/nvidia.yaml"};
    env.default_output_bytes = default_output_bytes_;
    env.output_watch_interval = output_watch_interval_;
    env.node_key = node_key_;
    env.read_gpu_load = read_gpu_load_;
    env.gpu_sample_interval = gpu_sample_interval_;
    AttemptRunner(env).Run(a);
  }

  std::string Scratch() const { return dir_ + "/attempts/a1"; }
  std::string LogsSent() {
    std::lock_guard<std::mutex> lock(logs_mu_);
    return logs_sent_;
  }
  v1::ReportAttemptRequest Last() { return reporter_.Reports().back(); }
  // The events reported, in order: "ACCEPTED STARTED EXITED".
  std::string EventNames() {
    std::string names;
    for (v1::AttemptEvent e : reporter_.Events()) names += (names.empty() ? "" : " ") + v1::AttemptEvent_Name(e);
    return names;
  }
  // Every path ends the same way: no hold, no scratch.
  void ExpectCleanedUp() {
    EXPECT_FALSE(host_.Holds("a1"));
    EXPECT_FALSE(PathExists(Scratch())) << Scratch() << " left behind";
  }

  std::string dir_;
  FakeRuntime runtime_;
  FakeHost host_;
  RecordingReporter reporter_;
  FakeArtifacts artifacts_;
  FakeImages images_;
  bool scratch_seen_ = false;
  uint64_t default_output_bytes_ = kDefaultAttemptDiskBytes;
  // Short, so every attempt here is watched while it runs.
  std::chrono::milliseconds output_watch_interval_{5};
  const advert::NodeKey* node_key_ = nullptr;  // none: no receipt statement
  GpuLoadReader read_gpu_load_;                // none: GPUs are not sampled
  std::chrono::milliseconds gpu_sample_interval_{5000};
  std::mutex logs_mu_;
  std::string logs_sent_;  // guarded by logs_mu_
};

}  // namespace idlegrid::agent::testing
