// The agent's log shipper (agent/log_shipper.h): requests stay under the
// coordinator's message limit, and a job writing faster than the coordinator
// takes its logs loses the excess, counted in a note, without blocking.
#include "agent/log_shipper.h"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <string>
#include <vector>

namespace idlegrid::agent {
namespace {

struct Received {
  std::mutex mu;
  std::vector<v1::AppendLogsRequest> requests;
  std::string All() {
    std::lock_guard<std::mutex> lock(mu);
    std::string out;
    for (const auto& r : requests) {
      for (const auto& c : r.chunks()) out += c.data();
    }
    return out;
  }
};

TEST(LogShipperTest, AFloodIsSentInRequestsUnderTheLimitInOrder) {
  Received got;
  std::string sent;
  {
    LogShipper shipper([&](const v1::AppendLogsRequest& r) {
      std::lock_guard<std::mutex> lock(got.mu);
      got.requests.push_back(r);
      return true;
    });
    for (int i = 0; i < 600; ++i) {
      std::string block(8192, static_cast<char>('a' + i % 26));
      shipper.Add("att", i % 2 ? "stderr" : "stdout", block);
      sent += block;
    }
    shipper.Flush();
  }
  EXPECT_EQ(got.All(), sent) << "every byte arrives, in order";
  ASSERT_GT(got.requests.size(), 4u);
  for (const auto& r : got.requests) {
    size_t bytes = 0;
    for (const auto& c : r.chunks()) bytes += c.data().size();
    EXPECT_LE(bytes, LogShipper::kMaxRequestBytes);
  }
}

TEST(LogShipperTest, OutputBeyondTheBufferIsDroppedWithoutBlockingAndCountedInANote) {
  Received got;
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  bool first = true;
  LogShipper shipper(
      [&](const v1::AppendLogsRequest& r) {
        if (first) {
          first = false;
          entered.set_value();
          released.wait();  // the coordinator is slow
        }
        std::lock_guard<std::mutex> lock(got.mu);
        got.requests.push_back(r);
        return true;
      },
      /*max_pending_bytes_per_attempt=*/10);
  shipper.Add("att", "stdout", std::string(10, 'a'));
  entered.get_future().wait();  // the shipper is stuck sending the first batch
  shipper.Add("att", "stdout", std::string(6, 'b'));
  shipper.Add("att", "stdout", std::string(6, 'c'));  // would pass 10 bytes waiting: dropped
  shipper.Add("att", "stdout", std::string(6, 'd'));  // likewise
  release.set_value();
  shipper.Flush();
  const std::string all = got.All();
  // What fit, then the note, and nothing of the dropped writes.
  EXPECT_EQ(all.substr(0, 16), std::string(10, 'a') + std::string(6, 'b'));
  EXPECT_EQ(all.find("[idlegrid agent] 12 byte(s) of output dropped"), 16u) << all;
  EXPECT_EQ(all.find('\n'), all.size() - 1) << "one note line, and nothing after it: " << all;
}

// One job flooding its log while the coordinator is slow used to fill a buffer
// shared by the node, and the next job's only line ("forks=N") was dropped.
TEST(LogShipperTest, AFloodFromOneAttemptNeverDropsAnotherAttemptsOutput) {
  Received got;
  std::promise<void> entered;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  bool first = true;
  LogShipper shipper(
      [&](const v1::AppendLogsRequest& r) {
        if (first) {
          first = false;
          entered.set_value();
          released.wait();
        }
        std::lock_guard<std::mutex> lock(got.mu);
        got.requests.push_back(r);
        return true;
      },
      /*max_pending_bytes_per_attempt=*/10);
  shipper.Add("flood", "stdout", std::string(10, 'a'));
  entered.get_future().wait();
  shipper.Add("flood", "stdout", std::string(10, 'b'));
  shipper.Add("flood", "stdout", std::string(10, 'c'));  // over the flood's own budget: dropped
  shipper.Add("quiet", "stdout", "forks=63\n");          // its own budget is untouched
  release.set_value();
  shipper.Flush();
  std::string quiet;
  std::string flood;
  for (const auto& r : got.requests) {
    for (const auto& c : r.chunks()) (c.attempt_id() == "quiet" ? quiet : flood) += c.data();
  }
  EXPECT_EQ(quiet, "forks=63\n");
  EXPECT_EQ(flood.substr(0, 20), std::string(10, 'a') + std::string(10, 'b'));
  EXPECT_NE(flood.find("10 byte(s) of output dropped"), std::string::npos) << flood;
}

}  // namespace
}  // namespace idlegrid::agent
