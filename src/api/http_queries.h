#pragma once
// What the HTTPS/JSON API's query strings ask for, parsed into the gRPC
// request messages (or small structs) the routes pass on. Every malformed
// parameter is InvalidArgument naming it; nothing here touches the
// coordinator. docs/api.md lists the parameters route by route.
#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace httplib {
struct Request;
}  // namespace httplib

namespace idlegrid::api {

// The log cursor of a logs request: ?after=SEQ, 0 when absent.
Result<int64_t> LogCursor(const httplib::Request& req);

// Which of a job's log chunks a logs request wants: ?task=N and
// ?stream=stdout|stderr, each optional.
struct LogFilter {
  std::optional<uint32_t> task;
  std::string stream;  // "" for both
  bool Shows(const v1::LogChunk& chunk) const;
};
Result<LogFilter> LogFilterOf(const httplib::Request& req);

// ?limit=N of a listing, 0 when absent (the listing's own default).
Result<uint32_t> PageLimit(const httplib::Request& req);

// GetReceipt's request from a receipt request's path and ?task=N&attempt=ID.
Result<v1::GetReceiptRequest> ReceiptQuery(const httplib::Request& req);

// GetJob's request for `job_id` from its paging parameters:
// ?state=failed,running (names as the CLI's, either case), ?tasks=3,7-9,
// ?offset=N, ?limit=N. Any of them makes the read paged, listing 50 tasks
// unless ?limit says; ?paged=1 alone is the summary with no tasks. Without
// any of them, every task (what GetJob answered before paging).
Result<v1::GetJobRequest> JobQuery(const httplib::Request& req, const std::string& job_id);

}  // namespace idlegrid::api
