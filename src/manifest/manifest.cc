// Manifest YAML -> JobSpec. This file checks the document's shape and types
// and remembers where each value sits; the semantic rules live in validate.cc,
// shared with specs that arrive as JSON, and their violations are mapped back
// to a line and column here.
#include "manifest/manifest.h"
#include "common/utf8.h"
#include "manifest/items.h"
#include "manifest/quote.h"
#include "manifest/workflow.h"

#include <cmath>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

namespace idlegrid::manifest {
namespace {

constexpr size_t kMaxEditDistanceForSuggestion = 2;
constexpr size_t kMaxQuotedValueLength = 40;

// A value in the document: its node, its manifest path ("resources.memory",
// "inputs[0].path") and the place errors about it point to.
struct Value {
  YAML::Node node;
  std::string path;
  YAML::Mark mark;
};

struct FieldRule {
  std::string_view key;
  std::function<Status(const Value&)> read;
};

std::string JoinPath(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string InContext(const std::string& path) { return path.empty() ? "" : " in " + path; }

bool IsQuoted(const YAML::Node& node) { return node.Tag() == "!"; }

// "null", "a list", "a map", "\"abc\"" or "the quoted string \"2\"".
std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Scalar: {
      std::string text = node.Scalar();
      if (text.size() > kMaxQuotedValueLength) text = text.substr(0, kMaxQuotedValueLength) + "...";
      return (IsQuoted(node) ? "the quoted string " : "") + Quote(text);
    }
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitute});
    }
  }
  return row[b.size()];
}

// Lowercase without separators, so "gpu_memory" and "GPU-Memory" match "gpuMemory".
std::string Normalize(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c != '_' && c != '-') out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

std::optional<std::string_view> ClosestKey(const std::string& key, const std::vector<FieldRule>& rules) {
  std::optional<std::string_view> best;
  size_t best_distance = kMaxEditDistanceForSuggestion + 1;
  for (const FieldRule& rule : rules) {
    size_t distance = Normalize(key) == Normalize(rule.key) ? 0 : EditDistance(key, rule.key);
    if (distance < best_distance) {
      best = rule.key;
      best_distance = distance;
    }
  }
  return best;
}

bool IsAllDigits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

class ManifestParser {
 public:
  explicit ManifestParser(std::string filename, ItemsFileReader read_items = nullptr,
                          DirInputResolver resolve_dir = nullptr)
      : filename_(std::move(filename)), read_items_(std::move(read_items)), resolve_dir_(std::move(resolve_dir)) {}

  Result<v1::JobSpec> Parse(const std::string& text);
  Result<v1::WorkflowSpec> ParseWorkflow(const std::string& text);

 private:
  using FieldReader = std::function<Status(const Value&)>;
  using EntryVisitor = std::function<Status(const std::string& key, const YAML::Mark& key_mark, const Value& value)>;

  Status Error(const YAML::Mark& mark, const std::string& message) const;
  // "<path>: expected <what>, got <description of the value>".
  Status Expected(const Value& value, const std::string& what) const;
  // The mark recorded for `path`, else for its closest recorded parent.
  YAML::Mark MarkFor(std::string path) const;

  Result<v1::JobSpec> ParseDocument(const std::string& text);
  // The single YAML document of `text` as a map; `example_fields` names a
  // few of the fields expected, for the error when it is not a map.
  Result<Value> LoadRoot(const std::string& text, const char* example_fields);
  Result<v1::WorkflowSpec> ParseWorkflowDocument(const std::string& text);
  // A workflow's step: its job's fields plus dependsOn, and inputs that may
  // come from upstream steps ({fromStep, output, path}).
  Status ReadStep(const Value& item, v1::WorkflowStepSpec* step);
  // Where a workflow violation points in the manifest, and what it is called there.
  std::pair<YAML::Mark, std::string> Locate(const WorkflowViolation& v) const;
  // Visits each entry of a map, rejecting non-string and duplicate keys.
  Status ForEachEntry(const Value& map, const EntryVisitor& visit);
  // Dispatches each entry of a map to its rule; unknown keys and missing
  // `required` keys are errors.
  Status ReadFields(const Value& map, const std::vector<FieldRule>& rules,
                    const std::vector<std::string_view>& required);

  // A FieldReader that parses with `read` and stores the result with `set`.
  template <typename T, typename Setter>
  FieldReader Bind(Result<T> (ManifestParser::*read)(const Value&), Setter set) {
    return [this, read, set](const Value& value) -> Status {
      Result<T> result = (this->*read)(value);
      if (!result.ok()) return result.status();
      set(std::move(result).value());
      return Status::Ok();
    };
  }

  Result<std::string> ReadString(const Value& value);
  Result<std::vector<std::string>> ReadStringList(const Value& value);
  Result<uint32_t> ReadUint32(const Value& value);
  Result<bool> ReadBool(const Value& value);
  Result<uint64_t> ReadBytes(const Value& value);
  Result<uint32_t> ReadDuration(const Value& value);
  Result<double> ReadCpu(const Value& value);
  Result<double> ReadPrice(const Value& value);
  Result<double> ReadNumber(const Value& value);

  Status ReadJob(const Value& root, v1::JobSpec* spec);
  Status ReadResources(const Value& value, v1::Resources* resources);
  Status ReadEnv(const Value& value, v1::JobSpec* spec);
  Status ReadInputs(const Value& value, v1::JobSpec* spec);
  Status ReadVerification(const Value& value, v1::Verification* v);
  Status ReadItems(const Value& value, v1::JobSpec* spec);

  const std::string filename_;
  const ItemsFileReader read_items_;
  const DirInputResolver resolve_dir_;
  // While a workflow step is read: the step, and for each of its job's
  // inputs and upstream inputs, its index in the manifest's `inputs` list.
  v1::WorkflowStepSpec* step_ = nullptr;
  std::vector<std::vector<int>> job_input_at_;   // per step
  std::vector<std::vector<int>> from_input_at_;  // per step
  std::map<std::string, YAML::Mark> marks_;      // manifest path -> where it is written
};

Status ManifestParser::Error(const YAML::Mark& mark, const std::string& message) const {
  int line = mark.is_null() ? 1 : mark.line + 1;
  int column = mark.is_null() ? 1 : mark.column + 1;
  return Status::InvalidArgument(filename_ + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " +
                                 message);
}

Status ManifestParser::Expected(const Value& value, const std::string& what) const {
  return Error(value.mark, value.path + ": expected " + what + ", got " + Describe(value.node));
}

YAML::Mark ManifestParser::MarkFor(std::string path) const {
  while (true) {
    auto it = marks_.find(path);
    if (it != marks_.end()) return it->second;
    if (path.empty()) return YAML::Mark::null_mark();
    size_t cut = path.find_last_of(".[");
    path.resize(cut == std::string::npos ? 0 : cut);
  }
}

Result<v1::JobSpec> ManifestParser::Parse(const std::string& text) {
  try {
    return ParseDocument(text);
  } catch (const YAML::Exception& e) {
    return Error(e.mark, "invalid YAML: " + e.msg);
  }
}

Result<v1::WorkflowSpec> ManifestParser::ParseWorkflow(const std::string& text) {
  try {
    return ParseWorkflowDocument(text);
  } catch (const YAML::Exception& e) {
    return Error(e.mark, "invalid YAML: " + e.msg);
  }
}

// Where each document of a YAML stream starts (its root node, else the
// document's own start); no node is built.
class DocumentStartMarks : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    marks.push_back(mark);
    root_pending_ = true;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Root(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Root(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override { Root(mark); }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Root(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Root(mark);
  }
  void OnMapEnd() override {}
  std::vector<YAML::Mark> marks;

 private:
  void Root(const YAML::Mark& mark) {
    if (root_pending_ && !mark.is_null()) marks.back() = mark;
    root_pending_ = false;
  }
  bool root_pending_ = false;
};

// The start of each of the first `at_most` documents of `text`. Throws
// YAML::Exception on malformed YAML, as YAML::Load does.
std::vector<YAML::Mark> DocumentStarts(const std::string& text, size_t at_most) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStartMarks starts;
  // Bounded by calls too: the broken state returns "another document" for ever.
  for (size_t calls = 0; calls < at_most && parser.HandleNextDocument(starts); ++calls) {
  }
  return starts.marks;
}

Result<Value> ManifestParser::LoadRoot(const std::string& text, const char* example_fields) {
  const YAML::Mark start;
  if (text.size() > kMaxManifestBytes) {
    return Error(start, "manifest is larger than " + FormatBytes(kMaxManifestBytes));
  }
  // Every string read becomes a protobuf string, which must be UTF-8 (found
  // by fuzzing: a raw byte in `args` made the spec change across the API's
  // JSON round trip, and fail to serialize).
  if (const size_t bad = FirstInvalidUtf8(text); bad != std::string::npos) {
    YAML::Mark at;
    at.pos = static_cast<int>(bad);
    at.line = static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n'));
    const size_t line_start = text.rfind('\n', bad == 0 ? 0 : bad - 1);
    at.column = static_cast<int>(line_start == std::string::npos || bad == 0 ? bad : bad - line_start - 1);
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[bad]));
    return Error(at, std::string("not UTF-8 text (byte ") + hex + "): a manifest must be UTF-8");
  }
  // Counted by a parser that stops at the second document, then the first
  // loaded alone: yaml-cpp 0.7's LoadAll loops forever, allocating, on some
  // malformed flow maps (found by fuzzing: tests/fuzz/corpus/manifest/regress_loadall_loop; fixed
  // upstream in 0.8 by jbeder/yaml-cpp#1319).
  const std::vector<YAML::Mark> documents = DocumentStarts(text, 2);
  if (documents.empty()) return Error(start, "manifest is empty");
  if (documents.size() > 1) return Error(documents[1], "a manifest must hold a single YAML document");
  const YAML::Node node = YAML::Load(text);
  Value root{node, "", node.Mark().is_null() ? start : node.Mark()};
  if (!root.node.IsMap()) {
    return Error(root.mark, std::string("a manifest must be a map of fields (") + example_fields + "), got " +
                                Describe(root.node));
  }
  marks_[""] = root.mark;
  return root;
}

Result<v1::WorkflowSpec> ManifestParser::ParseWorkflowDocument(const std::string& text) {
  IG_ASSIGN_OR_RETURN(Value root, LoadRoot(text, "apiVersion, kind, name, steps, ..."));
  using P = ManifestParser;
  v1::WorkflowSpec wf;
  const std::vector<FieldRule> rules = {
      {"apiVersion", Bind(&P::ReadString, [&wf](std::string s) { wf.set_api_version(s); })},
      {"kind",
       [this](const Value& v) -> Status {
         IG_ASSIGN_OR_RETURN(std::string kind, ReadString(v));
         if (kind != kWorkflowKind) return Error(v.mark, "kind: expected \"Workflow\", got " + Describe(v.node));
         return Status::Ok();
       }},
      {"name", Bind(&P::ReadString, [&wf](std::string s) { wf.set_name(s); })},
      {"onFailure", Bind(&P::ReadString, [&wf](std::string s) { wf.set_on_failure(s); })},
      {"callback",
       [&](const Value& v) {
         const std::vector<FieldRule> callback_rules = {
             {"url", Bind(&P::ReadString, [&wf](std::string s) { wf.set_callback_url(s); })},
             {"secret", Bind(&P::ReadString, [&wf](std::string s) { wf.set_callback_secret(s); })},
         };
         return ReadFields(v, callback_rules, {"url"});
       }},
      {"steps",
       [&](const Value& list) -> Status {
         if (!list.node.IsSequence() || list.node.size() == 0) return Expected(list, "a list of steps");
         for (size_t i = 0; i < list.node.size(); ++i) {
           const YAML::Node& node = list.node[i];
           Value item{node, list.path + "[" + std::to_string(i) + "]", node.IsNull() ? list.mark : node.Mark()};
           marks_[item.path] = item.mark;
           IG_RETURN_IF_ERROR(ReadStep(item, wf.add_steps()));
         }
         return Status::Ok();
       }},
  };
  IG_RETURN_IF_ERROR(ReadFields(root, rules, {"apiVersion", "kind", "name", "steps"}));
  // Defaults were applied to each step's job before it was read (an
  // explicit zero stays and is refused); only the workflow's own remain.
  if (wf.on_failure().empty()) wf.set_on_failure(kOnFailureStop);
  for (v1::WorkflowStepSpec& step : *wf.mutable_steps()) step.mutable_job()->set_api_version(wf.api_version());
  if (std::optional<WorkflowViolation> v = FindWorkflowViolation(wf)) {
    auto [mark, path] = Locate(*v);
    return Error(mark, path + ": " + v->description);
  }
  return wf;
}

Status ManifestParser::ReadStep(const Value& item, v1::WorkflowStepSpec* step) {
  if (!item.node.IsMap()) return Expected(item, "a map of a step's fields (name, image, dependsOn, ...)");
  ApplyDefaults(step->mutable_job());
  step_ = step;
  job_input_at_.emplace_back();
  from_input_at_.emplace_back();
  Status st = ReadJob(item, step->mutable_job());
  step_ = nullptr;
  step->set_name(step->job().name());
  return st;
}

std::pair<YAML::Mark, std::string> ManifestParser::Locate(const WorkflowViolation& v) const {
  if (v.step < 0) return {MarkFor(v.manifest_field), v.manifest_field};
  const std::string prefix = "steps[" + std::to_string(v.step) + "]";
  std::string path = prefix;
  const size_t step = static_cast<size_t>(v.step);
  if (v.input != WorkflowViolation::Input::kNone) {
    const auto& at = v.input == WorkflowViolation::Input::kJob ? job_input_at_ : from_input_at_;
    const size_t k = static_cast<size_t>(v.input_index);
    if (step < at.size() && k < at[step].size()) path += ".inputs[" + std::to_string(at[step][k]) + "]" + v.tail;
  } else if (!v.manifest_field.empty()) {
    path += "." + v.manifest_field;
  }
  return {MarkFor(path), path};
}

Result<v1::JobSpec> ManifestParser::ParseDocument(const std::string& text) {
  IG_ASSIGN_OR_RETURN(Value root, LoadRoot(text, "apiVersion, name, image, ..."));

  // Defaults go in first so that a value written in the manifest, even a
  // zero, is what validation sees.
  v1::JobSpec spec;
  ApplyDefaults(&spec);
  IG_RETURN_IF_ERROR(ReadJob(root, &spec));
  if (std::optional<FieldViolation> violation = FindViolation(spec)) {
    return Error(MarkFor(violation->manifest_field), violation->manifest_field + ": " + violation->description);
  }
  return spec;
}

Status ManifestParser::ForEachEntry(const Value& map, const EntryVisitor& visit) {
  std::set<std::string> seen;
  for (const auto& entry : map.node) {
    const YAML::Node& key = entry.first;
    const YAML::Mark key_mark = key.Mark().is_null() ? map.mark : key.Mark();
    if (!key.IsScalar()) {
      return Error(key_mark, "keys must be strings, got " + Describe(key) + InContext(map.path));
    }
    const std::string& name = key.Scalar();
    if (!seen.insert(name).second) {
      return Error(key_mark, "duplicate key " + Quote(name) + InContext(map.path));
    }
    // A null value ("memory:") has no position of its own; point at its key.
    const YAML::Node& node = entry.second;
    Value value{node, JoinPath(map.path, name), node.IsNull() ? key_mark : node.Mark()};
    marks_[value.path] = value.mark;
    IG_RETURN_IF_ERROR(visit(name, key_mark, value));
  }
  return Status::Ok();
}

Status ManifestParser::ReadFields(const Value& map, const std::vector<FieldRule>& rules,
                                  const std::vector<std::string_view>& required) {
  if (!map.node.IsMap()) return Expected(map, "a map");
  std::set<std::string, std::less<>> present;
  IG_RETURN_IF_ERROR(
      ForEachEntry(map, [&](const std::string& key, const YAML::Mark& key_mark, const Value& value) -> Status {
        auto rule = std::find_if(rules.begin(), rules.end(), [&key](const FieldRule& r) { return r.key == key; });
        if (rule == rules.end()) {
          std::string message = "unknown field " + Quote(key) + InContext(map.path);
          if (key == "<<") {
            message += " (YAML merge keys are not supported)";
          } else if (std::optional<std::string_view> suggestion = ClosestKey(key, rules)) {
            message += " (did you mean " + Quote(*suggestion) + "?)";
          }
          return Error(key_mark, message);
        }
        present.insert(key);
        return rule->read(value);
      }));
  for (std::string_view key : required) {
    if (!present.contains(key)) {
      std::string where = map.path.empty() ? "" : map.path + ": ";
      return Error(map.mark, where + "missing required field " + Quote(key));
    }
  }
  return Status::Ok();
}

Result<std::string> ManifestParser::ReadString(const Value& value) {
  if (!value.node.IsScalar()) return Expected(value, "a string");
  return value.node.Scalar();
}

Result<std::vector<std::string>> ManifestParser::ReadStringList(const Value& value) {
  if (value.node.IsScalar()) return std::vector<std::string>{value.node.Scalar()};
  if (!value.node.IsSequence()) return Expected(value, "a list of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < value.node.size(); ++i) {
    const YAML::Node& node = value.node[i];
    Value item{node, value.path + "[" + std::to_string(i) + "]", node.IsNull() ? value.mark : node.Mark()};
    marks_[item.path] = item.mark;
    IG_ASSIGN_OR_RETURN(std::string text, ReadString(item));
    out.push_back(std::move(text));
  }
  return out;
}

Result<uint32_t> ManifestParser::ReadUint32(const Value& value) {
  const std::string& text = value.node.Scalar();
  if (!value.node.IsScalar() || IsQuoted(value.node) || !IsAllDigits(text)) {
    return Expected(value, "a non-negative integer");
  }
  uint64_t number = 0;
  for (char c : text) {
    number = number * 10 + static_cast<unsigned>(c - '0');
    if (number > std::numeric_limits<uint32_t>::max()) {
      return Error(value.mark, value.path + ": " + Quote(text) + " is too large");
    }
  }
  return static_cast<uint32_t>(number);
}

Result<bool> ManifestParser::ReadBool(const Value& value) {
  if (value.node.IsScalar() && !IsQuoted(value.node)) {
    if (value.node.Scalar() == "true") return true;
    if (value.node.Scalar() == "false") return false;
  }
  return Expected(value, "true or false");
}

Result<uint64_t> ManifestParser::ReadBytes(const Value& value) {
  if (!value.node.IsScalar()) return Expected(value, "a byte quantity like 256Mi");
  Result<uint64_t> bytes = ParseBytes(value.node.Scalar());
  if (!bytes.ok()) return Error(value.mark, value.path + ": " + bytes.status().message());
  return bytes;
}

Result<uint32_t> ManifestParser::ReadDuration(const Value& value) {
  if (!value.node.IsScalar()) return Expected(value, "a duration like 10m");
  Result<uint32_t> seconds = ParseDurationSeconds(value.node.Scalar());
  if (!seconds.ok()) return Error(value.mark, value.path + ": " + seconds.status().message());
  return seconds;
}

Result<double> ManifestParser::ReadPrice(const Value& value) {
  if (value.node.IsScalar() && !IsQuoted(value.node)) {
    const std::string& text = value.node.Scalar();
    char* end = nullptr;
    double price = std::strtod(text.c_str(), &end);
    if (!text.empty() && end == text.c_str() + text.size() && std::isfinite(price) && price >= 0) return price;
  }
  return Expected(value, "a price (a number >= 0, in credits)");
}

Result<double> ManifestParser::ReadNumber(const Value& value) {
  if (value.node.IsScalar() && !IsQuoted(value.node)) {
    const std::string& text = value.node.Scalar();
    char* end = nullptr;
    double number = std::strtod(text.c_str(), &end);
    if (!text.empty() && end == text.c_str() + text.size() && std::isfinite(number)) return number;
  }
  return Expected(value, "a number");
}

Result<double> ManifestParser::ReadCpu(const Value& value) {
  if (!value.node.IsScalar()) return Expected(value, "a number of cores like 1 or 0.5");
  Result<double> cores = ParseCpu(value.node.Scalar());
  if (!cores.ok()) return Error(value.mark, value.path + ": " + cores.status().message());
  return cores;
}

Status ManifestParser::ReadJob(const Value& root, v1::JobSpec* spec) {
  using P = ManifestParser;
  using Strings = std::vector<std::string>;
  const std::vector<FieldRule> array_rules = {
      {"count", Bind(&P::ReadUint32, [spec](uint32_t n) { spec->set_array_count(n); })},
      {"items", [this, spec](const Value& v) { return ReadItems(v, spec); }},
  };
  const std::vector<FieldRule> checkpoint_rules = {
      {"path", Bind(&P::ReadString, [spec](std::string s) { spec->set_checkpoint_path(s); })},
      {"interval", Bind(&P::ReadDuration, [spec](uint32_t s) { spec->set_checkpoint_interval_seconds(s); })},
  };
  // callback: {url, secret}: where the coordinator POSTs the final state (docs/webhooks.md).
  const std::vector<FieldRule> callback_rules = {
      {"url", Bind(&P::ReadString, [spec](std::string s) { spec->set_callback_url(s); })},
      {"secret", Bind(&P::ReadString, [spec](std::string s) { spec->set_callback_secret(s); })},
  };
  auto c = [spec] { return spec->mutable_constraints(); };
  const std::vector<FieldRule> constraint_rules = {
      {"gpuModels",
       Bind(&P::ReadStringList, [c](Strings list) { c()->mutable_gpu_models()->Assign(list.begin(), list.end()); })},
      {"regions",
       Bind(&P::ReadStringList, [c](Strings list) { c()->mutable_regions()->Assign(list.begin(), list.end()); })},
      {"minComputeCapability", Bind(&P::ReadString, [c](std::string s) { c()->set_min_compute_capability(s); })},
      {"minCudaVersion", Bind(&P::ReadString, [c](std::string s) { c()->set_min_cuda_version(s); })},
      {"minTrustTier", Bind(&P::ReadUint32, [c](uint32_t n) { c()->set_min_trust_tier(n); })},
  };
  const std::vector<FieldRule> rules = {
      {"apiVersion", Bind(&P::ReadString, [spec](std::string s) { spec->set_api_version(s); })},
      {"name", Bind(&P::ReadString, [spec](std::string s) { spec->set_name(s); })},
      {"image", Bind(&P::ReadString, [spec](std::string s) { spec->set_image(s); })},
      {"command",
       Bind(&P::ReadStringList,
            [spec](Strings list) { spec->mutable_command()->Assign(list.begin(), list.end()); })},
      {"args",
       Bind(&P::ReadStringList,
            [spec](Strings list) { spec->mutable_args()->Assign(list.begin(), list.end()); })},
      {"env", [this, spec](const Value& v) { return ReadEnv(v, spec); }},
      {"resources",
       [this, spec](const Value& v) { return ReadResources(v, spec->mutable_resources()); }},
      {"inputs", [this, spec](const Value& v) { return ReadInputs(v, spec); }},
      {"output", Bind(&P::ReadString, [spec](std::string s) { spec->set_output_path(s); })},
      {"runTimeout",
       Bind(&P::ReadDuration, [spec](uint32_t s) { spec->set_run_timeout_seconds(s); })},
      {"queueTimeout",
       Bind(&P::ReadDuration, [spec](uint32_t s) { spec->set_queue_timeout_seconds(s); })},
      {"retention",
       Bind(&P::ReadDuration, [spec](uint32_t s) { spec->set_retention_seconds(s); })},
      {"retries", Bind(&P::ReadUint32, [spec](uint32_t n) { spec->set_retries(n); })},
      {"idempotent", Bind(&P::ReadBool, [spec](bool b) { spec->set_idempotent(b); })},
      {"array",
       [&](const Value& v) {
         IG_RETURN_IF_ERROR(ReadFields(v, array_rules, {}));
         const bool counted = static_cast<bool>(v.node["count"]);
         if (!counted && spec->items_size() == 0) return Error(v.mark, "array: expected count or items");
         if (!counted) spec->set_array_count(static_cast<uint32_t>(spec->items_size()));
         return Status::Ok();
       }},
      {"runtime", Bind(&P::ReadString, [spec](std::string s) { spec->set_runtime(s); })},
      {"jobClass", Bind(&P::ReadString, [spec](std::string s) { spec->set_job_class(s); })},
      {"policy", Bind(&P::ReadString, [spec](std::string s) { spec->set_policy(s); })},
      {"constraints", [&](const Value& v) { return ReadFields(v, constraint_rules, {}); }},
      {"maxPricePerGpuHour", Bind(&P::ReadPrice, [spec](double p) { spec->set_max_price_per_gpu_hour(p); })},
      {"maxPricePerCpuCoreHour",
       Bind(&P::ReadPrice, [spec](double p) { spec->set_max_price_per_cpu_core_hour(p); })},
      {"maxCost", Bind(&P::ReadPrice, [spec](double p) { spec->set_max_cost(p); })},
      {"exclusiveGpu", Bind(&P::ReadBool, [spec](bool b) { spec->set_exclusive_gpu(b); })},
      {"dataClass", Bind(&P::ReadString, [spec](std::string s) { spec->set_data_class(s); })},
      {"verification", [this, spec](const Value& v) { return ReadVerification(v, spec->mutable_verification()); }},
      {"checkpoint",
       [&](const Value& v) {
         spec->set_checkpoint_interval_seconds(kDefaultCheckpointIntervalSeconds);
         return ReadFields(v, checkpoint_rules, {"path"});
       }},
      {"callback", [&](const Value& v) { return ReadFields(v, callback_rules, {"url"}); }},
  };
  if (step_ == nullptr) return ReadFields(root, rules, {"apiVersion", "name", "image"});
  // A workflow's step: the workflow names the API version; dependsOn is its own.
  std::vector<FieldRule> step_rules(rules.begin() + 1, rules.end());
  v1::WorkflowStepSpec* step = step_;
  step_rules.push_back({"dependsOn", Bind(&P::ReadStringList, [step](Strings list) {
                          step->mutable_depends_on()->Assign(list.begin(), list.end());
                        })});
  return ReadFields(root, step_rules, {"name", "image"});
}

Status ManifestParser::ReadResources(const Value& value, v1::Resources* r) {
  using P = ManifestParser;
  const std::vector<FieldRule> rules = {
      {"gpus", Bind(&P::ReadUint32, [r](uint32_t n) { r->set_gpus(n); })},
      {"gpuMemory", Bind(&P::ReadBytes, [r](uint64_t n) { r->set_gpu_memory_bytes(n); })},
      {"cpu", Bind(&P::ReadCpu, [r](double n) { r->set_cpu(n); })},
      {"memory", Bind(&P::ReadBytes, [r](uint64_t n) { r->set_memory_bytes(n); })},
      // In the spec 0 is the node's default total, which a manifest asks for
      // by leaving the key out.
      {"disk",
       [this, r](const Value& v) -> Status {
         IG_ASSIGN_OR_RETURN(uint64_t n, ReadBytes(v));
         if (n == 0) {
           return Error(v.mark, v.path + ": must be at least " + std::to_string(kMinDiskBytes) + " (" +
                                    FormatBytes(kMinDiskBytes) + "); leave it out for the node's default");
         }
         r->set_output_bytes(n);
         return Status::Ok();
       }},
      {"maxFileSize", Bind(&P::ReadBytes, [r](uint64_t n) { r->set_disk_bytes(n); })},
      {"shm", Bind(&P::ReadBytes, [r](uint64_t n) { r->set_shm_bytes(n); })},
      {"tmp", Bind(&P::ReadBytes, [r](uint64_t n) { r->set_tmp_bytes(n); })},
      // Refused, not aliased: a manifest naming diskTotal was written when
      // `disk` meant the per-file cap, so its `disk` would now be misread.
      {"diskTotal",
       [this](const Value& v) {
         return Error(v.mark, v.path +
                                  ": renamed: the total a job may write is now resources.disk, and the per-file "
                                  "cap the old resources.disk set is resources.maxFileSize");
       }},
      {"pids", Bind(&P::ReadUint32, [r](uint32_t n) { r->set_pids(n); })},
      {"strictCpu", Bind(&P::ReadBool, [r](bool b) { r->set_strict_cpu(b); })},
      {"gpuMilli", Bind(&P::ReadUint32, [r](uint32_t n) { r->set_gpu_milli(n); })},
  };
  IG_RETURN_IF_ERROR(ReadFields(value, rules, {}));
  // The defaults that follow memory and disk were filled from their defaults
  // before this map was read; those the manifest leaves out are derived
  // again from what it says (one it writes, even 0, is kept for validation).
  const auto written = [&](const char* key) { return marks_.contains(JoinPath(value.path, key)); };
  v1::Resources derived = *r;
  derived.clear_shm_bytes();
  derived.clear_tmp_bytes();
  derived.clear_disk_bytes();
  ApplyDerivedDefaults(&derived);
  if (!written("shm")) r->set_shm_bytes(derived.shm_bytes());
  if (!written("tmp")) r->set_tmp_bytes(derived.tmp_bytes());
  if (!written("maxFileSize")) r->set_disk_bytes(derived.disk_bytes());
  return Status::Ok();
}

Status ManifestParser::ReadEnv(const Value& value, v1::JobSpec* spec) {
  if (!value.node.IsMap()) return Expected(value, "a map of variable names to values");
  return ForEachEntry(value, [&](const std::string& key, const YAML::Mark& key_mark, const Value& entry) {
    if (!entry.node.IsScalar()) return Expected(entry, "a string, number or boolean");
    // Violations of env rules are about the name, so they point at the key.
    marks_[entry.path] = key_mark;
    (*spec->mutable_env())[key] = entry.node.Scalar();
    return Status::Ok();
  });
}

Status ManifestParser::ReadInputs(const Value& value, v1::JobSpec* spec) {
  if (!value.node.IsSequence()) {
    return Expected(value, step_ ? "a list of {artifact, path} or {fromStep, output, path} maps"
                                 : "a list of {artifact, path} maps");
  }
  for (size_t i = 0; i < value.node.size(); ++i) {
    const YAML::Node& node = value.node[i];
    Value item{node, value.path + "[" + std::to_string(i) + "]", node.IsNull() ? value.mark : node.Mark()};
    marks_[item.path] = item.mark;
    if (step_ != nullptr && node.IsMap() && node["fromStep"]) {
      // An upstream step's output, wired by digest when that step succeeds.
      v1::StepInput* from = step_->add_from_steps();
      const std::vector<FieldRule> rules = {
          {"fromStep", Bind(&ManifestParser::ReadString, [from](std::string s) { from->set_step(s); })},
          {"output", Bind(&ManifestParser::ReadString, [from](std::string s) { from->set_output(s); })},
          {"path", Bind(&ManifestParser::ReadString, [from](std::string s) { from->set_path(s); })},
      };
      IG_RETURN_IF_ERROR(ReadFields(item, rules, {"fromStep", "output", "path"}));
      from_input_at_.back().push_back(static_cast<int>(i));
      continue;
    }
    if (step_ != nullptr) job_input_at_.back().push_back(static_cast<int>(i));
    v1::InputSpec* input = spec->add_inputs();
    std::optional<Value> dir;  // a local directory, uploaded as a tar by resolve_dir_
    bool artifact_given = false;
    const std::vector<FieldRule> rules = {
        {"artifact", Bind(&ManifestParser::ReadString,
                          [input, &artifact_given](std::string s) {
                            input->set_artifact(s);
                            artifact_given = true;
                          })},
        {"dir",
         [&dir, this](const Value& v) -> Status {
           IG_RETURN_IF_ERROR(ReadString(v).status());
           dir = v;
           return Status::Ok();
         }},
        {"path", Bind(&ManifestParser::ReadString, [input](std::string s) { input->set_path(s); })},
        {"unpack", Bind(&ManifestParser::ReadBool, [input](bool b) { input->set_unpack(b); })},
    };
    IG_RETURN_IF_ERROR(ReadFields(item, rules, {"path"}));
    if (!dir) {
      if (!artifact_given) {
        return Error(item.mark, item.path + ": missing required field \"artifact\" (or \"dir\", a local directory)");
      }
      continue;
    }
    if (artifact_given) {
      return Error(dir->mark, item.path + ": give artifact or dir, not both");
    }
    if (!resolve_dir_) {
      return Error(dir->mark, item.path +
                                  ".dir: a local directory is uploaded by `idlegrid submit`; "
                                  "push it with `idlegrid artifact push DIR` and name its digest here");
    }
    Result<std::string> digest = resolve_dir_(dir->node.Scalar());
    if (!digest.ok()) return Error(dir->mark, item.path + ".dir: " + digest.status().message());
    input->set_artifact(*digest);
    input->set_unpack(true);
  }
  return Status::Ok();
}

// `verification: replicate` is short for `verification: {mode: replicate}`;
// the rules are verify/spec.h's, applied by FindViolation.
Status ManifestParser::ReadVerification(const Value& value, v1::Verification* v) {
  using P = ManifestParser;
  using Strings = std::vector<std::string>;
  if (value.node.IsScalar()) {
    IG_ASSIGN_OR_RETURN(std::string mode, ReadString(value));
    v->set_mode(mode);
    return Status::Ok();
  }
  const std::vector<FieldRule> rules = {
      {"mode", Bind(&P::ReadString, [v](std::string s) { v->set_mode(s); })},
      {"replicas", Bind(&P::ReadUint32, [v](uint32_t n) { v->set_replicas(n); })},
      {"quorum", Bind(&P::ReadUint32, [v](uint32_t n) { v->set_quorum(n); })},
      {"maxReplicas", Bind(&P::ReadUint32, [v](uint32_t n) { v->set_max_replicas(n); })},
      {"outputs", Bind(&P::ReadStringList, [v](Strings l) { v->mutable_outputs()->Assign(l.begin(), l.end()); })},
      {"tolerances",
       [this, v](const Value& list) -> Status {
         if (!list.node.IsSequence()) return Expected(list, "a list of {output, format, fields, relative, absolute}");
         for (size_t i = 0; i < list.node.size(); ++i) {
           const YAML::Node& node = list.node[i];
           Value item{node, list.path + "[" + std::to_string(i) + "]", node.IsNull() ? list.mark : node.Mark()};
           marks_[item.path] = item.mark;
           v1::ToleranceRule* t = v->add_tolerances();
           const std::vector<FieldRule> rules = {
               {"output", Bind(&P::ReadString, [t](std::string s) { t->set_output(s); })},
               {"format", Bind(&P::ReadString, [t](std::string s) { t->set_format(s); })},
               {"fields",
                Bind(&P::ReadStringList, [t](Strings l) { t->mutable_fields()->Assign(l.begin(), l.end()); })},
               {"relative", Bind(&P::ReadNumber, [t](double x) { t->set_relative(x); })},
               {"absolute", Bind(&P::ReadNumber, [t](double x) { t->set_absolute(x); })},
           };
           IG_RETURN_IF_ERROR(ReadFields(item, rules, {"output", "format"}));
         }
         return Status::Ok();
       }},
      {"trustThreshold", Bind(&P::ReadUint32, [v](uint32_t n) { v->set_trust_threshold(n); })},
      {"auditFloor", Bind(&P::ReadNumber, [v](double x) { v->set_audit_floor(x); })},
      {"challengeRate", Bind(&P::ReadNumber, [v](double x) { v->set_challenge_rate(x); })},
  };
  return ReadFields(value, rules, {"mode"});
}

Status ManifestParser::ReadItems(const Value& value, v1::JobSpec* spec) {
  if (value.node.IsScalar() && !value.node.Scalar().empty()) {
    // A JSON Lines file, named relative to the manifest.
    if (!read_items_) {
      return Error(value.mark, value.path + ": an items file needs the manifest read from a file");
    }
    const std::string& name = value.node.Scalar();
    auto text = read_items_(name);
    if (!text.ok()) return Error(value.mark, value.path + ": " + text.status().message());
    IG_ASSIGN_OR_RETURN(auto items, ParseItemsJsonl(*text, name));
    for (auto& item : items) *spec->add_items() = std::move(item);
    return Status::Ok();
  }
  if (!value.node.IsSequence() || value.node.size() == 0) {
    return Expected(value, "a list of maps (one per task) or the name of a JSON Lines file");
  }
  for (size_t i = 0; i < value.node.size(); ++i) {
    const YAML::Node& node = value.node[i];
    Value item{node, value.path + "[" + std::to_string(i) + "]", node.IsNull() ? value.mark : node.Mark()};
    marks_[item.path] = item.mark;
    if (!node.IsMap()) return Expected(item, "a map of values, like {seed: 1}");
    v1::ArrayItem* out = spec->add_items();
    IG_RETURN_IF_ERROR(ForEachEntry(item, [&](const std::string& key, const YAML::Mark&, const Value& entry) {
      if (!entry.node.IsScalar()) return Expected(entry, "a string, number or boolean");
      (*out->mutable_values())[key] = entry.node.Scalar();
      return Status::Ok();
    }));
  }
  return Status::Ok();
}

}  // namespace

Result<v1::JobSpec> ParseManifest(const std::string& yaml_text, const std::string& filename, ItemsFileReader read_items,
                                  DirInputResolver resolve_dir) {
  return ManifestParser(filename, std::move(read_items), std::move(resolve_dir)).Parse(yaml_text);
}

Result<std::string> ReadManifestText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(path + ": cannot read: " + std::strerror(errno));
  // Read one byte past the limit, so the parser reports an oversized file
  // without this loading all of it.
  std::string text(kMaxManifestBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return Status::InvalidArgument(path + ": cannot read: " + std::strerror(errno));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

namespace {

// Items files named relative to the manifest at `path`.
ItemsFileReader ItemsBeside(const std::string& path) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  return [dir](const std::string& name) -> Result<std::string> {
    const std::filesystem::path file =
        std::filesystem::path(name).is_absolute() ? std::filesystem::path(name) : dir / name;
    std::ifstream items(file, std::ios::binary);
    if (!items) return Status::InvalidArgument("cannot read " + file.string() + ": " + std::strerror(errno));
    std::string content(kMaxItemsFileBytes + 1, '\0');
    items.read(content.data(), static_cast<std::streamsize>(content.size()));
    if (items.bad()) return Status::InvalidArgument("cannot read " + file.string() + ": " + std::strerror(errno));
    content.resize(static_cast<size_t>(items.gcount()));
    return content;
  };
}

}  // namespace

Result<v1::JobSpec> LoadManifestFile(const std::string& path, DirInputResolver resolve_dir) {
  IG_ASSIGN_OR_RETURN(std::string text, ReadManifestText(path));
  DirInputResolver beside;
  if (resolve_dir) {
    const std::filesystem::path base = std::filesystem::path(path).parent_path();
    beside = [base, resolve = std::move(resolve_dir)](const std::string& dir) {
      const std::filesystem::path p(dir);
      return resolve((p.is_absolute() || base.empty() ? p : base / p).string());
    };
  }
  return ParseManifest(text, path, ItemsBeside(path), std::move(beside));
}

Result<v1::WorkflowSpec> ParseWorkflowManifest(const std::string& yaml_text, const std::string& filename,
                                               ItemsFileReader read_items) {
  return ManifestParser(filename, std::move(read_items)).ParseWorkflow(yaml_text);
}

Result<v1::WorkflowSpec> LoadWorkflowFile(const std::string& path) {
  IG_ASSIGN_OR_RETURN(std::string text, ReadManifestText(path));
  return ParseWorkflowManifest(text, path, ItemsBeside(path));
}

bool IsWorkflowManifest(const std::string& yaml_text) {
  try {
    const YAML::Node root = YAML::Load(yaml_text);
    return root.IsMap() && root["kind"] && root["kind"].IsScalar() && root["kind"].Scalar() == kWorkflowKind;
  } catch (const YAML::Exception&) {
    return false;
  }
}

}  // namespace idlegrid::manifest
