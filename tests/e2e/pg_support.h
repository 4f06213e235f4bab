#pragma once
// PostgreSQL for the e2e tests.
#include <string>

#include "common/status.h"

namespace idlegrid::testing {

// A fresh database on the run's throwaway cluster (IDLEGRID_TEST_PG_URL, set
// by scripts/test.sh), or on a private one started in `dir` (stopped when the
// test process exits); the database's URL.
Result<std::string> FreshDatabase(const std::string& dir);

}  // namespace idlegrid::testing
