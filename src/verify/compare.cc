#include "verify/compare.h"

#include <algorithm>
#include <set>

namespace idlegrid::verify {
namespace {

const OutputFile* Find(const std::vector<OutputFile>& outputs, const std::string& path) {
  auto it = std::find_if(outputs.begin(), outputs.end(), [&](const OutputFile& f) { return f.path == path; });
  return it == outputs.end() ? nullptr : &*it;
}

const ToleranceRule* RuleFor(const CompareSpec& spec, const std::string& path) {
  auto it = std::find_if(spec.tolerances.begin(), spec.tolerances.end(),
                         [&](const ToleranceRule& r) { return r.output == path; });
  return it == spec.tolerances.end() ? nullptr : &*it;
}

// The paths compared between two runs.
std::vector<std::string> ComparedPaths(const CompareSpec& spec, const std::vector<OutputFile>& a,
                                       const std::vector<OutputFile>& b) {
  std::set<std::string> paths(spec.outputs.begin(), spec.outputs.end());
  for (const ToleranceRule& rule : spec.tolerances) paths.insert(rule.output);
  if (spec.outputs.empty()) {
    for (const OutputFile& f : a) paths.insert(f.path);
    for (const OutputFile& f : b) paths.insert(f.path);
  }
  return {paths.begin(), paths.end()};
}

}  // namespace

Status CheckComparable(const CompareSpec& spec, const std::vector<OutputFile>& outputs) {
  for (const std::string& path : spec.outputs) {
    if (!Find(outputs, path)) return Status::InvalidArgument("has no output \"" + path + "\"");
  }
  for (const ToleranceRule& rule : spec.tolerances) {
    const OutputFile* file = Find(outputs, rule.output);
    if (!file) return Status::InvalidArgument("has no output \"" + rule.output + "\"");
    if (!file->content) return Status::InvalidArgument(rule.output + ": content not fetched for comparison");
    IG_RETURN_IF_ERROR(CheckWellFormed(rule, *file->content));
  }
  return Status::Ok();
}

Result<Comparison> CompareOutputs(const CompareSpec& spec, const std::vector<OutputFile>& first,
                                  const std::vector<OutputFile>& second) {
  Status a_ok = CheckComparable(spec, first);
  if (!a_ok.ok()) return a_ok.WithContext("first");
  Status b_ok = CheckComparable(spec, second);
  if (!b_ok.ok()) return b_ok.WithContext("second");
  for (const std::string& path : ComparedPaths(spec, first, second)) {
    const OutputFile* a = Find(first, path);
    const OutputFile* b = Find(second, path);
    if (!a || !b) return Comparison{false, path + ": present in only one run"};
    if (const ToleranceRule* rule = RuleFor(spec, path)) {
      IG_ASSIGN_OR_RETURN(Comparison c, CompareWithTolerance(*rule, *a->content, *b->content));
      if (!c.match) return c;
    } else if (a->digest != b->digest) {
      return Comparison{false, path + ": digests differ"};
    }
  }
  return Comparison{true, ""};
}

}  // namespace idlegrid::verify
