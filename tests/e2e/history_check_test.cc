// The fault matrix's history checker (history_check_support.h) on plain
// histories: each rule must catch the history that breaks it.
#include <gtest/gtest.h>

#include "e2e/history_check_support.h"

namespace idlegrid::testing {
namespace {

// An attempt assigned at second `from` (0: never assigned) that ended at second `to`.
v1::Attempt Try(const std::string& id, const std::string& node, v1::TaskState state, int64_t from_s, int64_t to_s) {
  const int64_t from = from_s * 1000, to = to_s * 1000;
  v1::Attempt a;
  a.set_id(id);
  a.set_node_id(node);
  a.set_state(state);
  a.set_assigned_at_ms(from);
  a.set_finished_at_ms(to);
  return a;
}

v1::Job JobOf(std::vector<std::vector<v1::Attempt>> tasks, v1::TaskState state = v1::SUCCEEDED) {
  v1::Job job;
  job.set_id("j");
  job.mutable_spec()->mutable_resources()->set_cpu(1);
  for (size_t i = 0; i < tasks.size(); ++i) {
    v1::Task* t = job.add_tasks();
    t->set_index(uint32_t(i));
    t->set_state(state);
    for (auto& a : tasks[i]) *t->add_attempts() = a;
  }
  return job;
}

const std::map<std::string, double> kTwoCpus = {{"n1", 2}, {"n2", 2}};

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

TEST(HistoryCheck, ASoundHistoryPasses) {
  // Task 0 lost its first attempt to a crash and succeeded on a retry; two
  // tasks share n1's two CPUs.
  v1::Job job = JobOf({{Try("a1", "n2", v1::FAILED, 0, 50), Try("a2", "n2", v1::SUCCEEDED, 50, 90)},
                       {Try("a3", "n1", v1::SUCCEEDED, 10, 80)},
                       {Try("a4", "n1", v1::SUCCEEDED, 20, 60)}});
  EXPECT_TRUE(CheckHistory({job}, kTwoCpus, 100000).empty()) << Joined(CheckHistory({job}, kTwoCpus, 100000));
}

TEST(HistoryCheck, EachBrokenRuleIsReported) {
  const auto expect_one = [](const v1::Job& job, const std::string& words) {
    auto found = CheckHistory({job}, kTwoCpus, 100000);
    ASSERT_EQ(found.size(), 1u) << words << ":\n" << Joined(found);
    EXPECT_NE(found[0].find(words), std::string::npos) << found[0];
  };
  // A result taken twice.
  expect_one(JobOf({{Try("a1", "n1", v1::SUCCEEDED, 0, 10), Try("a2", "n2", v1::SUCCEEDED, 10, 20)}}),
             "2 successful attempts");
  // A task that never ended.
  expect_one(JobOf({{Try("a1", "n1", v1::FAILED, 0, 10)}}, v1::QUEUED), "did not end");
  // Two live attempts of one task at once (run twice unnoticed).
  expect_one(JobOf({{Try("a1", "n1", v1::FAILED, 5, 30), Try("a2", "n2", v1::SUCCEEDED, 20, 40)}}),
             "2 live attempts at once");
  // Three one-CPU attempts on a two-CPU node.
  expect_one(JobOf({{Try("a1", "n1", v1::SUCCEEDED, 5, 30)},
                    {Try("a2", "n1", v1::SUCCEEDED, 10, 30)},
                    {Try("a3", "n1", v1::SUCCEEDED, 20, 30)}}),
             "held 3.0");
  // A failure that says nothing.
  expect_one(JobOf({{Try("a1", "n1", v1::FAILED, 0, 10)}}, v1::FAILED), "without a reason");
  // An attempt left live under an ended task.
  expect_one(JobOf({{Try("a1", "n1", v1::RUNNING, 0, 0), Try("a2", "n2", v1::SUCCEEDED, 0, 0)}}), "still RUNNING");
}

TEST(HistoryCheck, AnOverlapShorterThanTheClockSkewIsNotCounted) {
  // Three one-CPU attempts on a two-CPU node, the third starting 0.1 s before
  // the first's end was written: that skew, not a double booking.
  v1::Job job = JobOf({{Try("a1", "n1", v1::SUCCEEDED, 1, 10)},
                       {Try("a2", "n1", v1::SUCCEEDED, 2, 20)},
                       {Try("a3", "n1", v1::SUCCEEDED, 10, 30)}});
  job.mutable_tasks(2)->mutable_attempts(0)->set_assigned_at_ms(9900);
  EXPECT_TRUE(CheckHistory({job}, kTwoCpus, 100000).empty()) << Joined(CheckHistory({job}, kTwoCpus, 100000));
  job.mutable_tasks(2)->mutable_attempts(0)->set_assigned_at_ms(9000);  // a second: counted
  EXPECT_EQ(CheckHistory({job}, kTwoCpus, 100000).size(), 1u);
}

TEST(HistoryCheck, AnAttemptIdTwiceIsReported) {
  v1::Job job = JobOf({{Try("a1", "n1", v1::SUCCEEDED, 0, 10)}, {Try("a1", "n2", v1::SUCCEEDED, 0, 10)}});
  auto found = CheckHistory({job}, kTwoCpus, 100000);
  ASSERT_EQ(found.size(), 1u) << Joined(found);
  EXPECT_NE(found[0].find("appears twice"), std::string::npos);
}

}  // namespace
}  // namespace idlegrid::testing
