#pragma once
// Paging a node's attempt history (ListNodeAttempts), newest first. A page
// ends at an attempt; the next starts after it. Attempts of one dispatch
// pass share their assignment time, so the cursor also carries the store's
// commit order (seq), which no two attempts share.
#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"

namespace idlegrid::jobs {

struct AttemptCursor {
  int64_t assigned_ms = 0;
  int64_t seq = 0;
  bool operator==(const AttemptCursor&) const = default;
};

inline constexpr uint32_t kNodeAttemptsDefaultLimit = 50;
inline constexpr uint32_t kNodeAttemptsMaxLimit = 500;

// "ASSIGNED_MS.SEQ", what ListNodeAttemptsResponse.next_page_token carries.
std::string FormatAttemptCursor(const AttemptCursor& cursor);
// nullopt for "" (the newest page); InvalidArgument for anything that is not
// a token FormatAttemptCursor made.
Result<std::optional<AttemptCursor>> ParseAttemptCursor(const std::string& token);
// The page size a request asks for: 0 is the default; above the maximum is
// InvalidArgument.
Result<uint32_t> NodeAttemptsLimit(uint32_t asked);

}  // namespace idlegrid::jobs
