// Fuzzes the task selections of the HTTPS/JSON API's query strings
// (?tasks=3,7-9 and ?state=queued,running of GET /v1/jobs/{id}, which
// api::JobQuery hands to jobs::ParseTaskRanges and jobs::ParseTaskStates;
// `cancel --tasks/--state` and `retry --tasks` take the same). JobQuery
// itself takes an httplib::Request and lives in ig_api, which would drag the
// whole coordinator into the fuzz build, so the two parsers are called
// directly, on the input as JobQuery passes it (states lowercased first).
// Invariants (task_ranges.h): indices come back strictly ascending (sorted,
// no duplicates) and at most kMaxSelectedTasks of them; states without
// duplicates.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "jobs/task_ranges.h"

namespace jobs = idlegrid::jobs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = idlegrid::fuzz::AsString(data, size);
  auto indices = jobs::ParseTaskRanges(text);
  if (indices.ok()) {
    const std::vector<uint32_t>& v = indices.value();
    FUZZ_CHECK(v.size() <= jobs::kMaxSelectedTasks);
    for (size_t i = 1; i < v.size(); ++i) FUZZ_CHECK(v[i - 1] < v[i]);
  }
  std::string names = text;
  for (char& ch : names) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  auto states = jobs::ParseTaskStates({names});
  if (states.ok()) {
    const std::set<int> distinct(states.value().begin(), states.value().end());
    FUZZ_CHECK(distinct.size() == states.value().size());
  }
  return 0;
}
