// The JavaScript SDK (sdk/js) against a real coordinator and agent, over the
// HTTPS/JSON API: Node's own test runner runs sdk/js/test/live.test.mjs (an
// item array run and its outputs downloaded with digest checks, logs; a file
// uploaded in pieces and used as a job's input; an image archive pushed and
// run; explain, cancel and retry of chosen tasks, a page of them), and it must report every test passed and none
// skipped. Node is a dependency (scripts/install-deps.sh).
#include <gtest/gtest.h>

#include <string>

#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

const std::string kSource = IDLEGRID_SOURCE_DIR;

TEST(SdkJsE2E, LiveTestsPassAgainstARealGrid) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("SdkJs");
  ASSERT_TRUE(grid.StartCoordinator().ok());
  Status started = grid.StartAgent(1);
  ASSERT_TRUE(started.ok()) << started.message();
  const std::string image = grid.PushTestImage();
  ASSERT_FALSE(image.empty());
  auto r = RunCommand({"env", "IDLEGRID_URL=https://" + grid.http_addr, "IDLEGRID_TOKEN=" + grid.admin_token,
                       "IDLEGRID_CA_FILE=" + grid.coordinator_dir + "/pki/ca.crt",
                       "IDLEGRID_TEST_IMAGE=igtest@" + image, "IDLEGRID_TEST_ARCHIVE=" + Grid::TestImageArchive(),
                       "node", "--test", kSource + "/sdk/js/test/live.test.mjs"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# pass 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# skipped 0"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace idlegrid::testing
