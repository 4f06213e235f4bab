#include "manifest/items.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

#include "manifest/quote.h"

namespace idlegrid::manifest {
namespace {

bool NameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool NameChar(char c) { return NameStart(c) || (c >= '0' && c <= '9'); }

struct Found {
  size_t begin = 0;  // at "{{"
  size_t end = 0;    // past "}}"
  std::string name;
};

// Every placeholder in `text`, or the first malformed one.
Result<std::vector<Found>> Scan(std::string_view text) {
  std::vector<Found> out;
  size_t at = 0;
  while ((at = text.find("{{", at)) != std::string_view::npos) {
    const size_t close = text.find("}}", at + 2);
    if (close == std::string_view::npos) {
      return Status::InvalidArgument("unclosed placeholder " + Quote(std::string(text.substr(at, 20))) +
                                     " (write {{.name}})");
    }
    std::string_view inner = text.substr(at + 2, close - at - 2);
    while (!inner.empty() && inner.front() == ' ') inner.remove_prefix(1);
    while (!inner.empty() && inner.back() == ' ') inner.remove_suffix(1);
    const std::string whole(text.substr(at, close + 2 - at));
    if (inner.empty() || inner.front() != '.') {
      return Status::InvalidArgument("placeholder " + Quote(whole) + " must name an item value as {{.name}}");
    }
    inner.remove_prefix(1);
    bool valid = !inner.empty() && NameStart(inner.front());
    for (char c : inner) valid = valid && NameChar(c);
    if (!valid) {
      return Status::InvalidArgument("placeholder " + Quote(whole) +
                                     ": a name is letters, digits and _, not starting with a digit");
    }
    out.push_back({at, close + 2, std::string(inner)});
    at = close + 2;
  }
  return out;
}

// Each text a task's spec expands, with its manifest and proto paths.
struct Template {
  std::string manifest_field;
  std::string proto_field;
  const std::string* text;
};

std::vector<Template> Templates(const v1::JobSpec& spec) {
  std::vector<Template> out;
  for (int i = 0; i < spec.args_size(); ++i) {
    const std::string at = "args[" + std::to_string(i) + "]";
    out.push_back({at, at, &spec.args(i)});
  }
  // env is a map: report in name order, so the first problem is stable.
  std::map<std::string, const std::string*> env;
  for (const auto& [k, v] : spec.env()) env[k] = &v;
  for (const auto& [k, v] : env) out.push_back({"env." + k, "env[" + k + "]", v});
  for (int i = 0; i < spec.inputs_size(); ++i) {
    const std::string at = "inputs[" + std::to_string(i) + "]";
    out.push_back({at + ".artifact", at + ".artifact", &spec.inputs(i).artifact()});
    out.push_back({at + ".path", at + ".path", &spec.inputs(i).path()});
  }
  return out;
}

void ExpandInput(v1::InputSpec* input, const google::protobuf::Map<std::string, std::string>& values) {
  if (input->artifact().find("{{") != std::string::npos) {
    input->set_artifact(ExpandPlaceholders(input->artifact(), values));
  }
  if (input->path().find("{{") != std::string::npos) input->set_path(ExpandPlaceholders(input->path(), values));
}

}  // namespace

Result<std::vector<std::string>> Placeholders(std::string_view text) {
  IG_ASSIGN_OR_RETURN(auto found, Scan(text));
  std::vector<std::string> names;
  for (auto& f : found) names.push_back(std::move(f.name));
  return names;
}

std::string ExpandPlaceholders(std::string_view text, const google::protobuf::Map<std::string, std::string>& values) {
  auto found = Scan(text);
  if (!found.ok() || found->empty()) return std::string(text);
  std::string out;
  size_t copied = 0;
  for (const Found& f : *found) {
    auto it = values.find(f.name);
    if (it == values.end()) continue;
    out.append(text.substr(copied, f.begin - copied));
    out += it->second;
    copied = f.end;
  }
  out.append(text.substr(copied));
  return out;
}

v1::JobSpec SpecForTask(const v1::JobSpec& spec, uint32_t index) {
  if (spec.items_size() == 0) return spec;
  v1::JobSpec out = spec;
  out.clear_items();
  if (index >= static_cast<uint32_t>(spec.items_size())) return out;
  const auto& values = spec.items(static_cast<int>(index)).values();
  for (int i = 0; i < out.args_size(); ++i) *out.mutable_args(i) = ExpandPlaceholders(out.args(i), values);
  for (auto& [k, v] : *out.mutable_env()) v = ExpandPlaceholders(v, values);
  for (auto& input : *out.mutable_inputs()) ExpandInput(&input, values);
  return out;
}

bool InputsUsePlaceholders(const v1::JobSpec& spec) {
  return std::any_of(spec.inputs().begin(), spec.inputs().end(), [](const v1::InputSpec& in) {
    return in.artifact().find("{{") != std::string::npos || in.path().find("{{") != std::string::npos;
  });
}

std::vector<v1::InputSpec> InputsForTask(const v1::JobSpec& spec, uint32_t index) {
  std::vector<v1::InputSpec> out(spec.inputs().begin(), spec.inputs().end());
  if (spec.items_size() == 0 || index >= static_cast<uint32_t>(spec.items_size())) return out;
  const auto& values = spec.items(static_cast<int>(index)).values();
  for (v1::InputSpec& input : out) ExpandInput(&input, values);
  return out;
}

std::vector<std::string> InputArtifacts(const v1::JobSpec& spec) {
  std::set<std::string> digests;
  if (!InputsUsePlaceholders(spec) || spec.items_size() == 0) {
    for (const auto& in : spec.inputs()) digests.insert(in.artifact());
  } else {
    for (int i = 0; i < spec.items_size(); ++i) {
      for (const v1::InputSpec& in : InputsForTask(spec, static_cast<uint32_t>(i))) digests.insert(in.artifact());
    }
  }
  return {digests.begin(), digests.end()};
}

std::optional<ItemProblem> FindItemProblem(const v1::JobSpec& spec) {
  const int items = spec.items_size();
  if (items > 0 && spec.array_count() != static_cast<uint32_t>(items)) {
    return ItemProblem{"array.count", "array_count",
                       "is " + std::to_string(spec.array_count()) + " but array.items has " + std::to_string(items) +
                           " items (give one or the other)"};
  }
  for (int i = 0; i < items; ++i) {
    for (const auto& [name, value] : spec.items(i).values()) {
      const std::string at = "array.items[" + std::to_string(i) + "]";
      if (name.empty() || !NameStart(name[0]) ||
          std::any_of(name.begin(), name.end(), [](char c) { return !NameChar(c); })) {
        return ItemProblem{at, "items[" + std::to_string(i) + "]",
                           "key " + Quote(name) + " is not a placeholder name (letters, digits and _)"};
      }
      if (value.size() > kMaxItemValueBytes) {
        return ItemProblem{
            at, "items[" + std::to_string(i) + "]",
            "value of " + Quote(name) + " is longer than " + std::to_string(kMaxItemValueBytes) + " bytes"};
      }
    }
  }
  for (const Template& t : Templates(spec)) {
    auto names = Placeholders(*t.text);
    if (!names.ok()) return ItemProblem{t.manifest_field, t.proto_field, names.status().message()};
    for (const std::string& name : *names) {
      if (items == 0) {
        return ItemProblem{t.manifest_field, t.proto_field,
                           "uses {{." + name + "}} but the job has no array.items to take it from"};
      }
      for (int i = 0; i < items; ++i) {
        if (!spec.items(i).values().contains(name)) {
          return ItemProblem{t.manifest_field, t.proto_field,
                             "uses {{." + name + "}}, which array.items[" + std::to_string(i) + "] does not have"};
        }
      }
    }
  }
  return std::nullopt;
}

Result<std::vector<v1::ArrayItem>> ParseItemsJsonl(const std::string& text, const std::string& filename) {
  if (text.size() > kMaxItemsFileBytes) {
    return Status::InvalidArgument(filename + ": larger than " + std::to_string(kMaxItemsFileBytes >> 20) + " MiB");
  }
  std::vector<v1::ArrayItem> out;
  size_t start = 0;
  for (int line = 1; start <= text.size(); ++line) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string row = text.substr(start, end - start);
    start = end + 1;
    if (row.find_first_not_of(" \t\r") == std::string::npos) {
      if (end == text.size()) break;
      continue;
    }
    auto where = [&](int column) {
      return filename + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
    };
    YAML::Node node;
    try {
      node = YAML::Load(row);
    } catch (const YAML::Exception& e) {
      return Status::InvalidArgument(where(e.mark.column + 1) + "not JSON: " + e.msg);
    }
    if (!node.IsMap() || row.find('{') == std::string::npos) {
      return Status::InvalidArgument(where(1) + "each line must be one JSON object of values, like {\"seed\": 1}");
    }
    v1::ArrayItem item;
    for (const auto& entry : node) {
      const int column = entry.second.Mark().column + 1;
      if (!entry.first.IsScalar()) return Status::InvalidArgument(where(column) + "keys must be strings");
      if (!entry.second.IsScalar()) {
        return Status::InvalidArgument(where(column) + "the value of " + Quote(entry.first.Scalar()) +
                                       " must be a string, number or boolean");
      }
      (*item.mutable_values())[entry.first.Scalar()] = entry.second.Scalar();
    }
    out.push_back(std::move(item));
    if (end == text.size()) break;
  }
  if (out.empty()) return Status::InvalidArgument(filename + ": no items (one JSON object per line)");
  return out;
}

}  // namespace idlegrid::manifest
