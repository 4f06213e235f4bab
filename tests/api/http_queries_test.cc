// The HTTPS/JSON API's query strings (api/http_queries.h), on plain
// requests: a job's paging parameters become GetJob's paged request (or
// none: every task, as before), log filters keep one task's or one stream's
// chunks, and every malformed parameter is InvalidArgument naming it.
#include "api/http_queries.h"

#include <gtest/gtest.h>
#include <httplib.h>

namespace idlegrid::api {
namespace {

httplib::Request With(std::initializer_list<std::pair<std::string, std::string>> params) {
  httplib::Request req;
  for (const auto& [k, v] : params) req.params.emplace(k, v);
  return req;
}

TEST(HttpQueriesTest, NoParametersReadTheWholeJob) {
  auto q = JobQuery(With({}), "j-1");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->job_id(), "j-1");
  EXPECT_FALSE(q->paged());
}

TEST(HttpQueriesTest, PagingParametersSelectAPage) {
  auto q = JobQuery(With({{"state", "FAILED,running"}, {"tasks", "3,7-9"}, {"offset", "20"}}), "j-1");
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_TRUE(q->paged());
  EXPECT_EQ(std::vector<int>(q->states().begin(), q->states().end()), (std::vector<int>{v1::FAILED, v1::RUNNING}));
  EXPECT_EQ(std::vector<uint32_t>(q->task_indices().begin(), q->task_indices().end()),
            (std::vector<uint32_t>{3, 7, 8, 9}));
  EXPECT_EQ(q->offset(), 20u);
  EXPECT_EQ(q->limit(), 50u) << "a selection lists a page of 50 unless ?limit says";
  auto summary = JobQuery(With({{"paged", "1"}}), "j-1");
  ASSERT_TRUE(summary.ok());
  EXPECT_TRUE(summary->paged());
  EXPECT_EQ(summary->limit(), 0u);
  auto limited = JobQuery(With({{"limit", "7"}}), "j-1");
  EXPECT_EQ(limited->limit(), 7u);
}

TEST(HttpQueriesTest, MalformedParametersAreRefusedNamingThem) {
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"state", "sleeping"}, {"tasks", "9-3"}, {"offset", "-1"}, {"limit", "x"}, {"offset", "99999999999"}}) {
    auto q = JobQuery(With({{key, value}}), "j-1");
    ASSERT_FALSE(q.ok()) << key << "=" << value;
    EXPECT_EQ(q.status().code(), Code::kInvalidArgument);
    EXPECT_NE(q.status().message().find(key == "state" ? "state" : key), std::string::npos) << q.status().message();
  }
}

TEST(HttpQueriesTest, LogFiltersKeepOneTaskOrStream) {
  auto f = LogFilterOf(With({{"task", "3"}, {"stream", "stderr"}}));
  ASSERT_TRUE(f.ok());
  v1::LogChunk chunk;
  chunk.set_task_index(3);
  chunk.set_stream("stderr");
  EXPECT_TRUE(f->Shows(chunk));
  chunk.set_stream("stdout");
  EXPECT_FALSE(f->Shows(chunk));
  chunk.set_task_index(4);
  EXPECT_TRUE(LogFilterOf(With({}))->Shows(chunk));
  EXPECT_FALSE(LogFilterOf(With({{"stream", "stdin"}})).ok());
  EXPECT_FALSE(LogFilterOf(With({{"task", "-2"}})).ok());
  EXPECT_EQ(*LogCursor(With({{"after", "42"}})), 42);
  EXPECT_FALSE(LogCursor(With({{"after", "4x"}})).ok());
  EXPECT_EQ(*PageLimit(With({})), 0u);
}

}  // namespace
}  // namespace idlegrid::api
