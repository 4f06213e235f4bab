#pragma once
// Numeric comparison of two runs' JSON or CSV output (a ToleranceRule):
// floating-point results from different hardware rarely match bit for bit.
//
// In a compared file the tolerance applies to numbers only: each listed field
// (every number when the rule lists none) matches when
//   |a - b| <= absolute + relative * max(|a|, |b|);
// numbers not listed, strings, keys, booleans and the shape (array lengths,
// row counts, the CSV header) must be equal. JSON object keys are unordered.
#include <string>
#include <string_view>

#include "common/status.h"
#include "verify/spec.h"

namespace idlegrid::verify {

// Whether two contents matched, and where they first differ when not
// ("stats.mean: 1.5 vs 1.7, allowed 0.01"; "row 3, column x: ...").
struct Comparison {
  bool match = false;
  std::string difference;
};

// InvalidArgument naming what is wrong when `content` cannot be compared
// under `rule`: not valid JSON, a CSV row of the wrong width, a listed field
// or column missing. A run whose output is malformed matches nothing.
Status CheckWellFormed(const ToleranceRule& rule, std::string_view content);

// Compares two contents of rule.output. InvalidArgument (prefixed "first: "
// or "second: ") when either is malformed.
Result<Comparison> CompareWithTolerance(const ToleranceRule& rule, std::string_view first, std::string_view second);

}  // namespace idlegrid::verify
