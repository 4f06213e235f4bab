// The per-device GPU gauges of /metrics (metrics/gpu_telemetry.h), rendered.
#include "metrics/gpu_telemetry.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

namespace idlegrid::metrics {
namespace {

constexpr int64_t kNow = 1'000'000'000;

v1::Node NodeWith(const std::string& id, const std::string& state) {
  v1::Node n;
  n.set_id(id);
  n.set_state(state);
  n.mutable_advertisement()->set_created_at_ms(kNow - 42'500);
  return n;
}

v1::GpuDevice H200() {
  v1::GpuDevice g;
  g.set_index(0);
  g.set_uuid("GPU-aaaa");
  g.set_name("NVIDIA H200");
  g.set_utilization_gpu_pct(87);
  g.set_memory_used_bytes(520093696);
  g.set_memory_total_bytes(150754820096);
  g.set_temperature_c(34);
  g.set_power_draw_mw(112345);
  g.set_power_limit_mw(700000);
  g.set_throttle_reasons(0x4 | 0x40 | 0x8000);  // sw power cap, hw thermal, and a bit without a name
  return g;
}

const std::string kH200Labels = R"(node="n-1",gpu="0",uuid="GPU-aaaa",model="NVIDIA H200",simulated="false")";

std::string Rendered(const google::protobuf::RepeatedPtrField<v1::Node>& nodes) {
  return Render(GpuTelemetryFamilies(nodes, kNow));
}

bool Has(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }

TEST(GpuTelemetryFamilies, EachReadingOfEachDeviceWithUnitsInItsName) {
  v1::ListNodesResponse nodes;
  v1::Node& n = *nodes.add_nodes() = NodeWith("n-1", "online");
  *n.add_gpus() = H200();
  const std::string text = Rendered(nodes.nodes());
  EXPECT_TRUE(Has(text, "# TYPE idlegrid_gpu_utilization_ratio gauge")) << text;
  EXPECT_TRUE(Has(text, "idlegrid_gpu_utilization_ratio{" + kH200Labels + "} 0.87")) << text;
  EXPECT_TRUE(Has(text, "idlegrid_gpu_memory_used_bytes{" + kH200Labels + "} 520093696")) << text;
  EXPECT_TRUE(Has(text, "idlegrid_gpu_memory_total_bytes{" + kH200Labels + "} 150754820096")) << text;
  EXPECT_TRUE(Has(text, "idlegrid_gpu_temperature_celsius{" + kH200Labels + "} 34")) << text;
  EXPECT_TRUE(Has(text, "idlegrid_gpu_power_watts{" + kH200Labels + "} 112.345")) << text;
  EXPECT_TRUE(Has(text, "idlegrid_gpu_power_limit_watts{" + kH200Labels + "} 700")) << text;
  EXPECT_TRUE(Has(text, "idlegrid_node_advertisement_age_seconds{node=\"n-1\"} 42.5")) << text;
  const std::string reason = "idlegrid_gpu_throttle_reason{" + kH200Labels + ",reason=";
  EXPECT_TRUE(Has(text, reason + "\"sw_power_cap\"} 1")) << text;
  EXPECT_TRUE(Has(text, reason + "\"hw_thermal_slowdown\"} 1")) << text;
  EXPECT_TRUE(Has(text, reason + "\"other\"} 1")) << text;
  EXPECT_TRUE(Has(text, reason + "\"gpu_idle\"} 0")) << text;
  EXPECT_TRUE(Has(text, reason + "\"hw_slowdown\"} 0")) << text;
  EXPECT_EQ(text.find("left out"), std::string::npos) << text;
}

TEST(GpuTelemetryFamilies, ASimulatedDeviceSaysSo) {
  v1::ListNodesResponse nodes;
  v1::Node& n = *nodes.add_nodes() = NodeWith("n-sim", "online");
  v1::GpuDevice g = H200();
  g.set_uuid("GPU-sim-0");
  g.set_simulated(true);
  *n.add_gpus() = g;
  const std::string text = Rendered(nodes.nodes());
  EXPECT_TRUE(Has(text, R"(idlegrid_gpu_temperature_celsius{node="n-sim",gpu="0",uuid="GPU-sim-0",)"
                        R"(model="NVIDIA H200",simulated="true"} 34)"))
      << text;
  EXPECT_EQ(text.find("simulated=\"false\""), std::string::npos) << text;
}

TEST(GpuTelemetryFamilies, AReadingNvmlCouldNotGiveIsLeftOutNotShownAsZero) {
  v1::ListNodesResponse nodes;
  v1::Node& n = *nodes.add_nodes() = NodeWith("n-1", "online");
  v1::GpuDevice g = H200();
  g.clear_power_draw_mw();
  g.add_query_errors("power_draw_mw: symbol nvmlDeviceGetPowerUsage missing");
  g.add_query_errors("throttle_reasons: nvmlDeviceGetCurrentClocksThrottleReasons returned 3 (Not Supported)");
  *n.add_gpus() = g;
  const std::string text = Rendered(nodes.nodes());
  EXPECT_EQ(text.find("idlegrid_gpu_power_watts{"), std::string::npos) << text;
  EXPECT_EQ(text.find("idlegrid_gpu_throttle_reason{"), std::string::npos) << text;
  EXPECT_TRUE(Has(text, "idlegrid_gpu_power_limit_watts{" + kH200Labels + "} 700")) << "power_limit_mw was read";
  EXPECT_TRUE(Has(text, "idlegrid_gpu_temperature_celsius{" + kH200Labels + "} 34")) << text;
}

TEST(GpuTelemetryFamilies, OfflineNodesAndNodesWithoutGpusHaveNoDeviceSeries) {
  v1::ListNodesResponse nodes;
  *nodes.add_nodes()->add_gpus() = H200();
  nodes.mutable_nodes(0)->set_id("n-gone");
  nodes.mutable_nodes(0)->set_state("offline");
  *nodes.add_nodes() = NodeWith("n-cpu", "online");
  const std::string text = Rendered(nodes.nodes());
  EXPECT_EQ(text.find("n-gone"), std::string::npos) << text;
  EXPECT_EQ(text.find("idlegrid_gpu_utilization_ratio{"), std::string::npos) << text;
  EXPECT_TRUE(Has(text, "idlegrid_node_advertisement_age_seconds{node=\"n-cpu\"} 42.5")) << text;
}

TEST(GpuTelemetryFamilies, ANamedReasonForEachNvmlBitBelowDisplayClock) {
  uint64_t bits = 0;
  for (const auto& [bit, name] : ThrottleReasonNames()) {
    EXPECT_EQ(bits & bit, 0u) << name << " repeats a bit";
    bits |= bit;
  }
  EXPECT_EQ(bits, 0x1ffu);
}

// promtool's own lint, where it is installed (Debian's prometheus package;
// the e2e metrics test requires it on the live page too).
TEST(GpuTelemetryFamilies, PromtoolFindsNothingToLint) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) GTEST_SKIP() << "no promtool";
  v1::ListNodesResponse nodes;
  v1::Node& n = *nodes.add_nodes() = NodeWith("n-1", "online");
  *n.add_gpus() = H200();
  const std::string text = Rendered(nodes.nodes());
  char path[] = "/tmp/gpu-metrics-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  FILE* f = ::fdopen(fd, "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  const std::string out_path = std::string(path) + ".out";
  const int rc = std::system(("promtool check metrics < " + std::string(path) + " > " + out_path + " 2>&1").c_str());
  FILE* out = std::fopen(out_path.c_str(), "r");
  std::string said;
  char buf[512];
  while (out != nullptr && std::fgets(buf, sizeof buf, out) != nullptr) said += buf;
  if (out != nullptr) std::fclose(out);
  std::remove(path);
  std::remove(out_path.c_str());
  EXPECT_EQ(rc, 0) << said;
  EXPECT_EQ(said, "") << said;
}

}  // namespace
}  // namespace idlegrid::metrics
