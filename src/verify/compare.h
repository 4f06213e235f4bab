#pragma once
// Whether two runs of a task produced the same result (a CompareSpec):
// outputs by sha256 digest, or by their numbers under a ToleranceRule.
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "verify/spec.h"
#include "verify/tolerance.h"

namespace idlegrid::verify {

// One output file of a run. `content` is needed only for outputs compared
// under a tolerance rule (the caller fetches those bytes); the digest is
// what everything else is compared by.
struct OutputFile {
  std::string path;    // relative to the output directory
  std::string digest;  // "sha256:<hex>"
  std::optional<std::string> content;
};

// InvalidArgument when a run's outputs cannot take part in a comparison:
// a named output missing, or a tolerance-compared one missing, without its
// content, or malformed (tolerance.h). Such a run matches no other.
Status CheckComparable(const CompareSpec& spec, const std::vector<OutputFile>& outputs);

// Compares two runs' outputs under `spec`. With spec.outputs empty, both
// runs must have the same set of outputs. InvalidArgument ("first: ..." or
// "second: ...") when either is not comparable.
Result<Comparison> CompareOutputs(const CompareSpec& spec, const std::vector<OutputFile>& first,
                                  const std::vector<OutputFile>& second);

}  // namespace idlegrid::verify
