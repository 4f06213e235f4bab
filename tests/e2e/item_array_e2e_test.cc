// Item arrays through a real coordinator and agent: items from a JSON Lines
// file beside the manifest, one task per item, each task's args and env
// filled with its own item's values; a malformed item refused at submit with
// the file, line and item, and nothing stored.
#include <gtest/gtest.h>
#include <google/protobuf/util/json_util.h>

#include "common/fs.h"
#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

class ItemArrayE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(grid_->StartCoordinator().ok());
  }
  std::unique_ptr<Grid> grid_;
};

TEST_F(ItemArrayE2E, EachTaskRunsWithItsOwnItem) {
  Status started = grid_->StartAgent(1);
  ASSERT_TRUE(started.ok()) << started.message();
  grid_->WriteFile(
      "items.jsonl",
      "{\"seed\": 11, \"tag\": \"a\"}\n{\"seed\": 22, \"tag\": \"b b\"}\n{\"seed\": 33, \"tag\": \"c\"}\n");
  const std::string manifest = grid_->Manifest("items", {"write", "seed-{{.seed}}-{{ .tag }}"},
                                               "env: {RUN_TAG: \"run-{{.tag}}\"}\narray: {items: items.jsonl}\n");
  auto r = grid_->Cli({"submit", manifest, "--wait", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const v1::Job job = ParseJson<v1::Job>(r.out);
  ASSERT_EQ(job.state(), v1::SUCCEEDED) << r.out;
  ASSERT_EQ(job.tasks_size(), 3);
  EXPECT_EQ(job.spec().array_count(), 3u);
  EXPECT_EQ(job.spec().items_size(), 3) << "the job keeps every item";

  const std::string out = grid_->root + "/fetched";
  auto f = grid_->Cli({"fetch", job.id(), out});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  const char* want[] = {"seed-11-a from task 0\n", "seed-22-b b from task 1\n", "seed-33-c from task 2\n"};
  for (int i = 0; i < 3; ++i) {
    auto hello = ReadFile(out + "/task-" + std::to_string(i) + "/hello.txt");
    ASSERT_TRUE(hello.ok()) << i;
    EXPECT_EQ(*hello, want[i]);
  }
}

TEST_F(ItemArrayE2E, AnItemWithoutAPlaceholdersValueIsRefusedAtSubmitNamingIt) {
  grid_->WriteFile("bad.jsonl", "{\"seed\": 1}\n{\"seed\": 2}\n{\"sed\": 3}\n");
  const std::string manifest = grid_->Manifest("bad-items", {"write", "{{.seed}}"}, "array: {items: bad.jsonl}\n");
  auto r = grid_->Cli({"submit", manifest});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("bad-items.yaml:5:17: args[1]: uses {{.seed}}, which array.items[2] does not have"),
            std::string::npos)
      << r.err;
  grid_->WriteFile("worse.jsonl", "{\"seed\": 1}\n{\"seed\": [2]}\n");
  auto r2 = grid_->Cli({"submit", grid_->Manifest("worse", {"write", "{{.seed}}"}, "array: {items: worse.jsonl}\n")});
  EXPECT_NE(r2.exit_code, 0);
  EXPECT_NE(r2.err.find("worse.jsonl:2:10: the value of \"seed\" must be a string, number or boolean"),
            std::string::npos)
      << r2.err;
  auto list = grid_->Cli({"jobs", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(list.out.find("bad-items"), std::string::npos) << "nothing stored";
}

}  // namespace
}  // namespace idlegrid::testing
