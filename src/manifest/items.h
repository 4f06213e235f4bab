#pragma once
// Item arrays: `array: {items: [...]}` (or a JSON Lines file) runs one task
// per item, and each task's args, env values and inputs (artifact and path)
// get that item's values in place of `{{.name}}` placeholders, so each task
// of a sweep can read its own shard. Pure: the manifest parser and
// ValidateJobSpec check placeholders against every item at submit, and the
// coordinator expands a task's spec when it sends the assignment, so an
// agent sees only its own task's values.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::manifest {

inline constexpr size_t kMaxItemValueBytes = 4096;
// An items file is read whole and travels in the job's spec.
inline constexpr size_t kMaxItemsFileBytes = 3u << 20;

// The placeholder names in `text` in order ("{{.seed}}" -> "seed"), or
// InvalidArgument naming the first malformed one: an unclosed "{{", a name
// without its leading dot, or a name that is not [A-Za-z_][A-Za-z0-9_]*.
// Text without "{{" has none.
Result<std::vector<std::string>> Placeholders(std::string_view text);

// `text` with each placeholder replaced by its value in `values`; a name
// that is not there is left as it was (validation refuses that first).
std::string ExpandPlaceholders(std::string_view text, const google::protobuf::Map<std::string, std::string>& values);

// The spec task `index` runs: args, env values and inputs expanded with item
// `index`'s values and the items dropped. A spec without items is returned
// unchanged.
v1::JobSpec SpecForTask(const v1::JobSpec& spec, uint32_t index);

// Whether any input's artifact or path holds a placeholder.
bool InputsUsePlaceholders(const v1::JobSpec& spec);

// The inputs task `index` reads (SpecForTask's inputs), without copying the
// rest of the spec: what the coordinator checks an agent's download against.
// An index past the items leaves the inputs as written.
std::vector<v1::InputSpec> InputsForTask(const v1::JobSpec& spec, uint32_t index);

// Every distinct input artifact digest any task of `spec` reads, sorted: what
// a submitter must be allowed to read, and what the job holds (artifact GC).
std::vector<std::string> InputArtifacts(const v1::JobSpec& spec);

// Where an item array breaks a rule: the field (manifest path: "args[1]",
// "env.SEED", "array.items[3]") and what is wrong.
struct ItemProblem {
  std::string manifest_field;
  std::string proto_field;
  std::string description;
};
// The first problem with `spec`'s placeholders and items, if any:
// placeholders without items, a malformed placeholder, a name some item
// lacks (naming the item), an oversized value, or array.count disagreeing
// with the number of items.
std::optional<ItemProblem> FindItemProblem(const v1::JobSpec& spec);

// Parses JSON Lines: one JSON object of scalars per non-blank line. Errors
// are "<filename>:<line>:<column>: ..." like the manifest's own.
Result<std::vector<v1::ArrayItem>> ParseItemsJsonl(const std::string& text, const std::string& filename);

}  // namespace idlegrid::manifest
