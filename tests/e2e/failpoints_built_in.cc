// Linked only into the test binary idlegrid-faults: makes its failpoints
// armable (common/failpoint.h). The shipped idlegrid keeps the weak default.
#include "common/failpoint.h"

namespace idlegrid::failpoint {
bool BuiltIn() { return true; }
}  // namespace idlegrid::failpoint
