#pragma once
// The one mapping of an error to a process exit status.
#include "common/status.h"

namespace idlegrid {

// 0 for Ok, 2 for bad input the user can fix (InvalidArgument, as for a bad
// command line), 3 for over a quota or rate limit (ResourceExhausted: the
// same request may pass later), 1 for anything else.
inline int ExitCodeFor(const Status& st) {
  if (st.ok()) return 0;
  if (st.code() == Code::kResourceExhausted) return 3;
  return st.code() == Code::kInvalidArgument ? 2 : 1;
}

}  // namespace idlegrid
