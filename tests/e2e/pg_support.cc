// PostgreSQL for the e2e tests (pg_support.h).
#include "e2e/pg_support.h"

#include <stdlib.h>
#include <unistd.h>

#include "common/random.h"
#include "e2e/harness.h"

namespace idlegrid::testing {

Result<std::string> FreshDatabase(const std::string& dir) {
  std::string server;
  if (const char* url = std::getenv("IDLEGRID_TEST_PG_URL"); url && *url) {
    server = url;
  } else {
    auto started = RunCommand(
        {std::string(IDLEGRID_SOURCE_DIR) + "/scripts/pg-test-cluster.sh", "start", dir, std::to_string(::getpid())});
    if (started.exit_code != 0) {
      return Status::FailedPrecondition("cannot start PostgreSQL (run scripts/install-deps.sh): " + started.err);
    }
    server = Trim(started.out);
  }
  std::string db = "e2e_" + RandomHex(6);
  auto created = RunCommand({"psql", "-X", "-q", server, "-c", "CREATE DATABASE " + db});
  if (created.exit_code != 0) return Status::Internal("CREATE DATABASE: " + created.err);
  auto slash = server.find("/postgres?");
  if (slash == std::string::npos) return Status::Internal("unexpected server URL " + server);
  return server.substr(0, slash) + "/" + db + server.substr(slash + 9);
}

}  // namespace idlegrid::testing
