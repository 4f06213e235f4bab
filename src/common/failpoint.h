#pragma once
// Failpoints: named places on the coordinator's and the agent's protocol
// paths where a test can kill the process (SIGKILL, a kill -9 at exactly that
// step) or make the step fail, to prove that nothing is lost whatever step a
// crash interrupts (docs/reliability.md lists them).
//
// They can be armed only in test builds: the `idlegrid-faults` binary links
// tests/e2e/failpoints_built_in.cc, which turns BuiltIn() on. The shipped
// `idlegrid` cannot be armed: there each failpoint is one check of a
// constant-false flag.
//
// Arming: IDLEGRID_FAILPOINTS="NAME=ACTION[@N],..." in the environment, read
// once. ACTION is `crash` (SIGKILL) or `error` (the step returns an error);
// @N fires on the Nth hit only (default: the first), so a sweep gets under
// way before the fault. With IDLEGRID_FAILPOINTS_GATE=PATH, hits count only
// once that file exists, so a test can let start-up work pass first.
#include <string_view>

namespace idlegrid::failpoint {

// Whether this binary was built with failpoints armable (weak symbol; the
// test binary overrides it).
bool BuiltIn();

// Called at the failpoint: kills the process when armed to crash here (this
// hit), returns true when armed to fail the step, false otherwise.
bool Hit(std::string_view name);

}  // namespace idlegrid::failpoint

// A failpoint: evaluates to true when the step must fail.
#define IG_FAILPOINT(name) (::idlegrid::failpoint::BuiltIn() && ::idlegrid::failpoint::Hit(name))
