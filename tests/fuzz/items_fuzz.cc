// Fuzzes item arrays (manifest/items.h): manifest::ParseItemsJsonl on the
// JSON Lines items file a requester ships with a sweep, and
// manifest::Placeholders / ExpandPlaceholders on the same bytes as the text
// of an argument. Invariants: a parse that succeeds yields at least one item
// and no more items than lines, and a failure names the file; a text whose
// placeholders parse is left unchanged when no value is known; and a spec
// whose args are `{{.KEY}}` for the first item's keys gets exactly that
// item's values from SpecForTask, which drops the items.
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "manifest/items.h"

namespace {

using idlegrid::Result;
namespace manifest = idlegrid::manifest;
namespace v1 = idlegrid::v1;

bool ValidName(const std::string& name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text = idlegrid::fuzz::AsString(data, size);

  Result<std::vector<std::string>> names = manifest::Placeholders(text);
  if (names.ok()) {
    for (const std::string& name : names.value()) FUZZ_CHECK(ValidName(name));
    FUZZ_CHECK(manifest::ExpandPlaceholders(text, {}) == text);
  }

  Result<std::vector<v1::ArrayItem>> items = manifest::ParseItemsJsonl(text, "items.jsonl");
  if (!items.ok()) {
    FUZZ_CHECK(items.status().message().rfind("items.jsonl", 0) == 0);
    return 0;
  }
  size_t lines = 1;
  for (char c : text) lines += c == '\n';
  FUZZ_CHECK(!items.value().empty() && items.value().size() <= lines);

  // The first item's keys that can be placeholders, each as one argument.
  v1::JobSpec spec;
  for (const v1::ArrayItem& item : items.value()) *spec.add_items() = item;
  spec.set_array_count(static_cast<uint32_t>(spec.items_size()));
  std::vector<std::string> keys;
  for (const auto& [key, value] : spec.items(0).values()) {
    if (!ValidName(key)) continue;
    keys.push_back(key);
    spec.add_args("{{." + key + "}}");
  }
  const v1::JobSpec task = manifest::SpecForTask(spec, 0);
  FUZZ_CHECK(task.items_size() == 0);
  FUZZ_CHECK(task.args_size() == static_cast<int>(keys.size()));
  for (size_t i = 0; i < keys.size(); ++i)
    FUZZ_CHECK(task.args(static_cast<int>(i)) == spec.items(0).values().at(keys[i]));
  return 0;
}
