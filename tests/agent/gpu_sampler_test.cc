// GPU telemetry while an attempt runs (agent/gpu_sampler.h): the sampler's
// rhythm against a counting reader, its readings against the fake NVML
// library (tests/discovery/fake_nvml.c), and whole attempts whose receipt
// statement carries what it read.
#include "agent/gpu_sampler.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <condition_variable>
#include <mutex>

#include "advert/node_key.h"
#include "agent/attempt_fixture_support.h"
#include "common/fs.h"
#include "receipt/receipt.h"

namespace idlegrid::agent {
namespace {

// The fake library's two devices (tests/discovery/fake_nvml.c).
constexpr char kH200[] = "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f";
constexpr char kRtx4090[] = "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f";
constexpr uint64_t kH200MemoryUsed = 520093696;
constexpr std::chrono::hours kNever{1};  // an interval no test waits out

// A reader that counts its calls and lets a test wait for the n-th.
class CountingReader {
 public:
  explicit CountingReader(GpuLoadReader inner) : inner_(std::move(inner)) {}
  GpuLoadReader Reader() {
    return [this] {
      discovery::GpuLoadReading r = inner_();
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++calls_;
        if (after_) after_(calls_);
      }
      cv_.notify_all();
      return r;
    };
  }
  // Whether `n` readings were taken within a generous bound (an event, not a sleep).
  bool WaitFor(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return calls_ >= n; });
  }
  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  std::function<void(int call)> after_;  // run under the lock, after each reading

 private:
  GpuLoadReader inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  int calls_ = 0;
};

discovery::GpuLoadReading OneDevice(const std::string& uuid, uint32_t util) {
  discovery::GpuLoadReading r;
  r.available = true;
  discovery::GpuLoad load;
  load.device.set_uuid(uuid);
  load.device.set_utilization_gpu_pct(util);
  r.devices.push_back(load);
  return r;
}

TEST(GpuSampler, ReadsAtStartAndAtStopAndStopsWithoutWaitingOutItsInterval) {
  CountingReader reader([] { return OneDevice("GPU-a", 40); });
  GpuSampler sampler({{"GPU-a"}, reader.Reader(), kNever});
  sampler.Start();
  ASSERT_TRUE(reader.WaitFor(1)) << "no first reading at start";
  // Were Stop to wait out the interval, this would hang for an hour (and the test time out).
  sampler.Stop();
  EXPECT_EQ(reader.calls(), 2);
  const auto usage = sampler.Usage();
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_EQ(usage[0].samples(), 2u);
  EXPECT_EQ(usage[0].utilization_pct_mean(), 40u);
  sampler.Stop();  // idempotent: no further reading
  EXPECT_EQ(reader.calls(), 2);
}

TEST(GpuSampler, ReadsEveryIntervalWhileRunning) {
  CountingReader reader([] { return OneDevice("GPU-a", 10); });
  GpuSampler sampler({{"GPU-a"}, reader.Reader(), std::chrono::milliseconds(1)});
  sampler.Start();
  ASSERT_TRUE(reader.WaitFor(5)) << "only " << reader.calls() << " readings";
  sampler.Stop();
  const int calls = reader.calls();
  EXPECT_GE(calls, 6);  // five or more while running, one at the stop
  EXPECT_EQ(sampler.Usage().at(0).samples(), static_cast<uint32_t>(calls));
}

TEST(GpuSampler, ReadsNothingWithoutStartOrWithoutDevices) {
  CountingReader reader([] { return OneDevice("GPU-a", 10); });
  {
    GpuSampler never_started({{"GPU-a"}, reader.Reader(), kNever});
    never_started.Stop();
    EXPECT_EQ(never_started.Usage().at(0).samples(), 0u);
    never_started.Start();  // after Stop: nothing
  }
  {
    GpuSampler no_devices({{}, reader.Reader(), kNever});
    no_devices.Start();
    no_devices.Stop();
    EXPECT_TRUE(no_devices.Usage().empty());
  }
  EXPECT_EQ(reader.calls(), 0);
  GpuSampler no_reader({{"GPU-a"}, nullptr, kNever});
  no_reader.Start();
  no_reader.Stop();
  EXPECT_EQ(no_reader.Usage().at(0).samples(), 0u);
}

// The fake NVML library, its live values in a state file the test rewrites.
class FakeNvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpu-sampler-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    state_ = dir_ + "/nvml-state";
    ::setenv("FAKE_NVML_STATE_FILE", state_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("FAKE_NVML_STATE_FILE");
    ::unsetenv("FAKE_NVML_INIT_ERROR");
    (void)RemoveTree(dir_);
  }
  void State(const std::string& text) { ASSERT_TRUE(WriteFileAtomic(state_, text).ok()); }
  static discovery::GpuLoadReading ReadFake() { return discovery::ReadGpuLoad(FAKE_NVML_PATH); }

  std::string dir_;
  std::string state_;
};

TEST_F(FakeNvmlTest, FoldsWhatNvmlReadsAndKeepsADeviceThatDisappeared) {
  State("utilization 0 30\npower 0 200000\ntemperature 0 50\nthrottle 0 0x4\n");
  CountingReader reader(&FakeNvmlTest::ReadFake);
  // After the first reading the job heats the H200 up, and the 4090 leaves NVML's count.
  reader.after_ = [&](int call) {
    if (call == 1) State("count 1\nutilization 0 90\npower 0 400000\ntemperature 0 77\nthrottle 0 0x40\n");
  };
  GpuSampler sampler({{kH200, kRtx4090}, reader.Reader(), kNever});
  sampler.Start();
  ASSERT_TRUE(reader.WaitFor(1));
  sampler.Stop();
  const auto usage = sampler.Usage();
  ASSERT_EQ(usage.size(), 2u);
  const v1::GpuUsage& h200 = usage[0];
  EXPECT_EQ(h200.uuid(), kH200);
  EXPECT_EQ(h200.samples(), 2u);
  EXPECT_EQ(h200.utilization_pct_mean(), 60u);
  EXPECT_EQ(h200.utilization_pct_max(), 90u);
  EXPECT_EQ(h200.memory_used_bytes_max(), kH200MemoryUsed);  // the device's, as NVML counts it
  EXPECT_EQ(h200.temperature_c_max(), 77u);
  EXPECT_EQ(h200.power_mw_mean(), 300000u);
  EXPECT_EQ(h200.power_mw_max(), 400000u);
  EXPECT_EQ(h200.throttle_reasons(), 0x44u);
  const v1::GpuUsage& rtx = usage[1];
  EXPECT_EQ(rtx.uuid(), kRtx4090);
  EXPECT_EQ(rtx.samples(), 1u) << "read at the start only";
  EXPECT_EQ(rtx.utilization_pct_mean(), 3u);
  EXPECT_EQ(rtx.throttle_reasons(), 0x4u);
}

TEST_F(FakeNvmlTest, NvmlFailingLeavesZeroSamples) {
  ::setenv("FAKE_NVML_INIT_ERROR", "9", 1);
  GpuSampler sampler({{kH200}, &FakeNvmlTest::ReadFake, kNever});
  sampler.Start();
  sampler.Stop();
  EXPECT_EQ(sampler.Usage().at(0).samples(), 0u);
}

// Whole attempts: the fixture's fakes, with the fake NVML library as the host's.
class GpuTelemetryAttemptTest : public testing::AttemptRunnerTest {
 protected:
  void SetUp() override {
    AttemptRunnerTest::SetUp();
    ASSERT_TRUE(MakeDirs(dir_ + "/cdi").ok());
    ASSERT_TRUE(WriteFileAtomic(dir_ + "/cdi/nvidia.yaml", "cdiVersion: 0.5.0\n").ok());
    host_.gpus = {Gpu(kH200, false), Gpu("GPU-sim", true)};
    host_.facts.node_id = key_.node_id();
    host_.facts.key_fingerprint = advert::KeyFingerprint(key_.public_key());
    node_key_ = &key_;
    read_gpu_load_ = [] { return discovery::ReadGpuLoad(FAKE_NVML_PATH); };
    gpu_sample_interval_ = kNever;
  }
  void TearDown() override {
    ::unsetenv("FAKE_NVML_INIT_ERROR");
    AttemptRunnerTest::TearDown();
  }
  static v1::GpuDevice Gpu(const std::string& uuid, bool simulated) {
    v1::GpuDevice d;
    d.set_uuid(uuid);
    d.set_simulated(simulated);
    return d;
  }
  v1::Assignment GpuAssignment() const {
    v1::Assignment a = Assignment();
    a.add_device_uuids(kH200);
    a.add_device_uuids("GPU-sim");
    return a;
  }

  advert::NodeKey key_ = advert::NodeKey::Generate();
};

TEST_F(GpuTelemetryAttemptTest, TheSignedReceiptStatementCarriesTheRealGpusUsageOnly) {
  const v1::Assignment a = GpuAssignment();
  Run(a);
  ASSERT_EQ(EventNames(), "ACCEPTED STARTED EXITED");
  const v1::ReportAttemptRequest done = Last();
  ASSERT_TRUE(done.has_receipt_statement());
  const v1::Metering& m = done.receipt_statement().metering();
  ASSERT_EQ(m.gpus_size(), 1) << "the simulated device is never measured";
  EXPECT_EQ(m.gpus(0).uuid(), kH200);
  EXPECT_EQ(m.gpus(0).samples(), 2u);  // at the start, at the exit
  EXPECT_EQ(m.gpus(0).utilization_pct_max(), 87u);
  EXPECT_EQ(m.gpus(0).memory_used_bytes_max(), kH200MemoryUsed);
  receipt::StatementExpectation expected{a.job_id(),      a.task_index(), a.attempt_id(),
                                         a.lease_epoch(), key_.node_id(), key_.public_key()};
  const Status genuine = receipt::CheckStatement(done.receipt_statement(), done.receipt_signature(), expected);
  EXPECT_TRUE(genuine.ok()) << genuine.message();
  v1::ReceiptStatement edited = done.receipt_statement();
  edited.mutable_metering()->mutable_gpus(0)->set_utilization_pct_max(100);
  const Status forged = receipt::CheckStatement(edited, done.receipt_signature(), expected);
  EXPECT_NE(forged.message().find("does not verify"), std::string::npos)
      << "the GPU usage is part of what the node signed: " << forged.message();
}

TEST_F(GpuTelemetryAttemptTest, ATelemetryFailureNeverFailsTheJob) {
  ::setenv("FAKE_NVML_INIT_ERROR", "9", 1);
  Run(GpuAssignment());
  ASSERT_EQ(EventNames(), "ACCEPTED STARTED EXITED");
  EXPECT_EQ(Last().exit_code(), 0);
  const v1::Metering m = Last().receipt_statement().metering();  // Last() is a copy
  ASSERT_EQ(m.gpus_size(), 1);
  EXPECT_EQ(m.gpus(0).samples(), 0u);
  ExpectCleanedUp();
}

TEST_F(GpuTelemetryAttemptTest, ACpuJobHasNoGpuUsage) {
  Run(Assignment());
  ASSERT_EQ(EventNames(), "ACCEPTED STARTED EXITED");
  EXPECT_EQ(Last().receipt_statement().metering().gpus_size(), 0);
}

}  // namespace
}  // namespace idlegrid::agent
