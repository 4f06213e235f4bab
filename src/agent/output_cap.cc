#include "agent/output_cap.h"

#include "manifest/manifest.h"

namespace idlegrid::agent {

OutputCap ResolveOutputCap(const v1::Resources& resources, uint64_t node_default_bytes) {
  if (resources.output_bytes() > 0) return {resources.output_bytes(), true};
  return {node_default_bytes, false};
}

std::optional<std::string> OutputCapBreach(const Result<uint64_t>& used, const OutputCap& cap, OutputCheck when) {
  if (used.ok() && used.value() <= cap.bytes) return std::nullopt;
  // The cap in the manifest's own notation, so the user finds what to change.
  const std::string limit =
      manifest::FormatBytes(cap.bytes) + " " +
      (cap.from_job ? "(resources.disk)" : "(this node's default for jobs that set no resources.disk)");
  const std::string dirs = "its home, output and checkpoint directories";
  const std::string end = when == OutputCheck::kWhileRunning ? "; killed" : "; no output was uploaded";
  if (!used.ok()) {
    return "could not measure what it wrote to " + dirs + " (" + used.status().message() +
           "), so it cannot be held to " + limit + end;
  }
  if (when == OutputCheck::kWhileRunning) return "wrote more than " + limit + " to " + dirs + end;
  return "left more than " + limit + " in " + dirs + end;
}

}  // namespace idlegrid::agent
