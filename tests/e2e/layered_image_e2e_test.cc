// End to end: images move layer by layer. An image on a base layer is built
// and run, then one small layer changes: the second push uploads only the
// changed blobs and the agent downloads only those (the coordinator's
// counted artifact bytes, both directions), and the job runs the new layer.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "common/fs.h"
#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

class LayeredImageE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(grid_->StartCoordinator().ok());
    Status st = grid_->StartAgent(1);
    ASSERT_TRUE(st.ok()) << st.message();
    base_ = "localhost/igtest-layer-base-" + std::to_string(::getpid());
    base_context_ = grid_->root + "/base";
    context_ = grid_->root + "/app";
    ASSERT_TRUE(MakeDirs(base_context_).ok());
    ASSERT_TRUE(MakeDirs(context_).ok());
    // The base: a static program, the big layer every version shares.
    auto cc = RunCommand({"gcc", "-static", "-O2", "-o", base_context_ + "/sim",
                          std::string(IDLEGRID_SOURCE_DIR) + "/tests/e2e/testprog.c"});
    ASSERT_EQ(cc.exit_code, 0) << "gcc -static (libc.a) is needed: " << cc.err;
    std::ofstream(base_context_ + "/Containerfile") << "FROM scratch\nCOPY sim /sim\n";
    auto built = RunCommand({"podman", "build", "--pull=never", "--network=none", "-q", "-t", base_, base_context_});
    ASSERT_EQ(built.exit_code, 0) << built.err;
  }
  void TearDown() override {
    if (!base_.empty()) (void)RunCommand({"podman", "rmi", "-f", base_});
  }

  // idlegrid_artifact_bytes_total{direction=...} on the coordinator.
  double Bytes(const std::string& direction) {
    auto metrics =
        RunCommand({"curl", "-sS", "--fail", "--cacert", grid_->coordinator_dir + "/pki/ca.crt", "-H",
                    "Authorization: Bearer " + grid_->admin_token, "https://" + grid_->http_addr + "/metrics"});
    EXPECT_EQ(metrics.exit_code, 0) << metrics.err;
    const std::string key = "idlegrid_artifact_bytes_total{direction=\"" + direction + "\"} ";
    const size_t at = metrics.out.find(key);
    EXPECT_NE(at, std::string::npos) << metrics.out;
    return at == std::string::npos ? -1 : std::strtod(metrics.out.c_str() + at + key.size(), nullptr);
  }

  // Builds the app image with `data` as its small top layer; its reference.
  std::string BuildApp(const std::string& data) {
    std::ofstream(context_ + "/data.txt") << data;
    std::ofstream(context_ + "/Containerfile") << "FROM " << base_ << "\nCOPY data.txt /data.txt\n";
    auto built = RunCommand({grid_->binary(), "image", "build", context_, "--name",
                             "igtest-app-" + std::to_string(::getpid()), "--config", grid_->client_yaml});
    EXPECT_EQ(built.exit_code, 0) << built.out << built.err;
    EXPECT_NE(built.err.find("blobs ("), std::string::npos) << "a layered push says what it uploaded: " << built.err;
    return Trim(built.out);
  }

  // Runs /sim from `image`, which writes a file; the job must succeed.
  void RunJob(const std::string& image, const std::string& word) {
    const std::string manifest = grid_->WriteFile(
        "job-" + word + ".yaml", "apiVersion: idlegrid/v1\nname: layered\nimage: " + image +
                                     "\ncommand: [\"/sim\"]\nargs: [\"write\", \"" + word +
                                     "\"]\nresources:\n  cpu: 1\n  memory: 256Mi\n  pids: 64\noutput: /out\n");
    auto run = grid_->Cli({"submit", manifest, "--wait", "--json"});
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    v1::Job job;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &job).ok()) << run.out;
    ASSERT_EQ(job.state(), v1::SUCCEEDED) << run.out;
  }

  std::unique_ptr<Grid> grid_;
  std::string base_, base_context_, context_;
};

TEST_F(LayeredImageE2E, AChangedLayerIsTheOnlyOneUploadedAndDownloaded) {
  const double in0 = Bytes("in"), out0 = Bytes("out");
  const std::string v1 = BuildApp("version one\n");
  const double in1 = Bytes("in");
  RunJob(v1, "first");
  const double out1 = Bytes("out");
  const double first_push = in1 - in0, first_fetch = out1 - out0;
  ASSERT_GT(first_push, 200000) << "the base (a static binary) was uploaded once";
  ASSERT_GT(first_fetch, 200000) << "and downloaded once by the agent";

  const double in1b = Bytes("in");  // after the job's outputs came in
  const std::string v2 = BuildApp("version two, one line changed\n");
  ASSERT_NE(v1, v2);
  const double in2 = Bytes("in");
  RunJob(v2, "second");
  const double out2 = Bytes("out");
  // Manifest, config and the data layer: a few KB against the base's hundreds.
  EXPECT_LT(in2 - in1b, 0.02 * first_push) << "second push uploaded " << in2 - in1b << " of " << first_push;
  EXPECT_GT(in2 - in1b, 0) << "the changed layer was uploaded";
  EXPECT_LT(out2 - out1, 0.02 * first_fetch) << "second fetch downloaded " << out2 - out1 << " of " << first_fetch;
  EXPECT_GT(out2 - out1, 0) << "the changed layer was downloaded";
}

}  // namespace
}  // namespace idlegrid::testing
