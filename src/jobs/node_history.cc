#include "jobs/node_history.h"

#include <charconv>

namespace idlegrid::jobs {

namespace {

bool ParseNonNegative(std::string_view text, int64_t* out) {
  if (text.empty() || text.size() > 19) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && *out >= 0;
}

}  // namespace

std::string FormatAttemptCursor(const AttemptCursor& cursor) {
  return std::to_string(cursor.assigned_ms) + "." + std::to_string(cursor.seq);
}

Result<std::optional<AttemptCursor>> ParseAttemptCursor(const std::string& token) {
  if (token.empty()) return std::optional<AttemptCursor>();
  const size_t dot = token.find('.');
  AttemptCursor c;
  if (dot == std::string::npos || !ParseNonNegative(std::string_view(token).substr(0, dot), &c.assigned_ms) ||
      !ParseNonNegative(std::string_view(token).substr(dot + 1), &c.seq)) {
    return Status::InvalidArgument("page_token '" + token.substr(0, 64) +
                                   "' is not a page token: pass the previous page's next_page_token "
                                   "(nextPageToken in JSON), or none for the newest attempts");
  }
  return std::optional<AttemptCursor>(c);
}

Result<uint32_t> NodeAttemptsLimit(uint32_t asked) {
  if (asked == 0) return kNodeAttemptsDefaultLimit;
  if (asked > kNodeAttemptsMaxLimit) {
    return Status::InvalidArgument("limit " + std::to_string(asked) + " is over " +
                                   std::to_string(kNodeAttemptsMaxLimit) + " attempts a page");
  }
  return asked;
}

}  // namespace idlegrid::jobs
