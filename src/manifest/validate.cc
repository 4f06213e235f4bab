// Defaults and semantic validation of a JobSpec, shared by manifests and by
// specs that arrive over gRPC or HTTP/JSON.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/digest.h"
#include "manifest/image_ref.h"
#include "manifest/manifest.h"
#include "manifest/items.h"
#include "manifest/quote.h"
#include "verify/spec.h"

namespace idlegrid::manifest {
namespace {

constexpr std::string_view kReservedEnvPrefix = "IDLEGRID_";
constexpr size_t kMaxPathLength = 4096;

using Violation = std::optional<FieldViolation>;

// A field whose proto and manifest paths are the same.
FieldViolation Bad(const std::string& path, std::string description) { return {path, path, std::move(description)}; }

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool IsValidName(std::string_view name) {
  if (name.empty() || name.size() > 63 || !IsLowerAlnum(name.front())) return false;
  for (char c : name) {
    if (!IsLowerAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

bool IsValidEnvKey(std::string_view key) {
  auto is_start = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (key.empty() || !is_start(key.front())) return false;
  for (char c : key) {
    if (!is_start(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool HasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

// Shortest round-trip form: 0.5 -> "0.5", 2 -> "2".
std::string FormatNumber(double value) {
  char buffer[32];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return error == std::errc() ? std::string(buffer, end) : "?";
}

// Why `image` is not a valid image reference (image_ref.h), or nullopt.
std::optional<std::string> ImageProblem(std::string_view image) {
  Result<ImageRef> ref = ParseImageRef(image);
  if (ref.ok()) return std::nullopt;
  return ref.status().message();
}

// Why `path` is not a normalized absolute path other than "/".
std::optional<std::string> PathProblem(std::string_view path) {
  if (path.empty()) return "must not be empty";
  if (HasNul(path)) return "must not contain NUL characters";
  if (path.size() > kMaxPathLength) return "is too long";
  if (path.front() != '/') return "must be an absolute path, got " + Quote(path);
  if (path == "/") return "must not be \"/\"";
  std::string_view rest = path.substr(1);
  while (true) {
    size_t slash = rest.find('/');
    std::string_view component = rest.substr(0, slash);
    if (component == "..") return "must not contain \"..\", got " + Quote(path);
    if (component.empty() || component == ".") {
      return "must be a normalized path (no \"//\", \"/./\" or trailing \"/\"), got " + Quote(path);
    }
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  return std::nullopt;
}

// True if `path` is `dir` or lies below it (both normalized).
bool IsWithin(std::string_view path, std::string_view dir) {
  return path == dir || (path.starts_with(dir) && path[dir.size()] == '/');
}

Violation CheckStrings(const google::protobuf::RepeatedPtrField<std::string>& list, const std::string& name) {
  for (int i = 0; i < list.size(); ++i) {
    if (HasNul(list[i])) return Bad(name + "[" + std::to_string(i) + "]", "must not contain NUL characters");
  }
  return std::nullopt;
}

Violation CheckIdentity(const v1::JobSpec& spec) {
  if (spec.api_version() != kApiVersion) {
    return FieldViolation{"api_version", "apiVersion",
                          "must be " + Quote(kApiVersion) + ", got " + Quote(spec.api_version())};
  }
  if (!IsValidName(spec.name())) {
    return Bad("name",
               "must be 1 to 63 characters of a-z 0-9 - _ . starting with a letter or "
               "digit, got " +
                   Quote(spec.name()));
  }
  if (std::optional<std::string> problem = ImageProblem(spec.image())) return Bad("image", *problem);
  return std::nullopt;
}

Violation CheckProcess(const v1::JobSpec& spec) {
  if (Violation v = CheckStrings(spec.command(), "command")) return v;
  if (Violation v = CheckStrings(spec.args(), "args")) return v;
  // Iterate in key order so the reported violation is deterministic.
  std::map<std::string, std::string> env(spec.env().begin(), spec.env().end());
  for (const auto& [key, value] : env) {
    FieldViolation where{"env[" + Quote(key) + "]", "env." + key, ""};
    if (!IsValidEnvKey(key)) {
      where.description = "variable names must match [A-Za-z_][A-Za-z0-9_]*, got " + Quote(key);
    } else if (key.starts_with(kReservedEnvPrefix)) {
      where.description = "names starting with IDLEGRID_ are reserved for the platform";
    } else if (HasNul(value)) {
      where.description = "value must not contain NUL characters";
    } else {
      continue;
    }
    return where;
  }
  return std::nullopt;
}

Violation CheckResources(const v1::Resources& r) {
  auto bad = [](const char* proto, const char* manifest, std::string description) {
    return FieldViolation{std::string("resources.") + proto, std::string("resources.") + manifest,
                          std::move(description)};
  };
  if (r.gpus() > kMaxGpus) {
    return bad("gpus", "gpus", "must be at most " + std::to_string(kMaxGpus) + ", got " + std::to_string(r.gpus()));
  }
  if (r.gpu_memory_bytes() > 0 && r.gpus() == 0) {
    return bad("gpu_memory_bytes", "gpuMemory", "is only allowed when gpus is at least 1");
  }
  if (!std::isfinite(r.cpu()) || r.cpu() <= 0 || r.cpu() > kMaxCpu) {
    return bad("cpu", "cpu",
               "must be greater than 0 and at most " + FormatNumber(kMaxCpu) + " cores, got " + FormatNumber(r.cpu()));
  }
  if (r.memory_bytes() < kMinMemoryBytes) {
    return bad("memory_bytes", "memory",
               "must be at least " + std::to_string(kMinMemoryBytes) + " (" + FormatBytes(kMinMemoryBytes) + ")");
  }
  // 0 leaves the total to the node's default.
  if (r.output_bytes() > 0 && r.output_bytes() < kMinDiskBytes) {
    return bad("output_bytes", "disk",
               "must be at least " + std::to_string(kMinDiskBytes) + " (" + FormatBytes(kMinDiskBytes) + "), got " +
                   FormatBytes(r.output_bytes()));
  }
  if (r.disk_bytes() < kMinDiskBytes) {
    return bad("disk_bytes", "maxFileSize",
               "must be at least " + std::to_string(kMinDiskBytes) + " (" + FormatBytes(kMinDiskBytes) + ")");
  }
  // A file larger than the total could never be written whole: the cap
  // would be a promise the node does not keep.
  if (r.output_bytes() > 0 && r.disk_bytes() > r.output_bytes()) {
    return bad("disk_bytes", "maxFileSize",
               "must be at most resources.disk, the total the job may write (" + FormatBytes(r.output_bytes()) +
                   "), got " + FormatBytes(r.disk_bytes()));
  }
  for (const auto& [proto, manifest, bytes] :
       {std::tuple{"shm_bytes", "shm", r.shm_bytes()}, std::tuple{"tmp_bytes", "tmp", r.tmp_bytes()}}) {
    if (bytes < kMinTmpfsBytes) {
      return bad(proto, manifest,
                 "must be at least " + std::to_string(kMinTmpfsBytes) + " (" + FormatBytes(kMinTmpfsBytes) + ")");
    }
  }
  // /dev/shm and /tmp are tmpfs, held in memory: on cgroup hosts their pages
  // count against the job's memory limit, so a job filling both needs that
  // much memory before its processes use any.
  if (r.shm_bytes() > r.memory_bytes() || r.tmp_bytes() > r.memory_bytes() - r.shm_bytes()) {
    const bool shm_alone = r.shm_bytes() > r.memory_bytes();
    return bad(shm_alone ? "shm_bytes" : "tmp_bytes", shm_alone ? "shm" : "tmp",
               "resources.shm (" + FormatBytes(r.shm_bytes()) + ") and resources.tmp (" + FormatBytes(r.tmp_bytes()) +
                   ") are held in memory and must fit in resources.memory (" + FormatBytes(r.memory_bytes()) +
                   ") together");
  }
  if (r.pids() < 1 || r.pids() > kMaxPids) {
    return bad("pids", "pids",
               "must be between 1 and " + std::to_string(kMaxPids) + ", got " + std::to_string(r.pids()));
  }
  return std::nullopt;
}

// The checkpoint directory is writable and restored on retries: it must not
// overlap the outputs or any (read-only) input.
Violation CheckCheckpoint(const v1::JobSpec& spec, const std::vector<v1::InputSpec>& inputs) {
  const std::string& dir = spec.checkpoint_path();
  if (dir.empty()) {
    if (spec.checkpoint_interval_seconds() != 0) {
      return FieldViolation{"checkpoint_interval_seconds", "checkpoint.interval", "is set but checkpoint.path is not"};
    }
    return std::nullopt;
  }
  if (std::optional<std::string> problem = PathProblem(dir)) {
    return FieldViolation{"checkpoint_path", "checkpoint.path", *problem};
  }
  const std::string& output = spec.output_path();
  if (IsWithin(dir, output) || IsWithin(output, dir)) {
    return FieldViolation{"checkpoint_path", "checkpoint.path",
                          Quote(dir) + " overlaps the output directory " + Quote(output)};
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& in = inputs[i].path();
    if (IsWithin(dir, in) || IsWithin(in, dir)) {
      return FieldViolation{"checkpoint_path", "checkpoint.path",
                            Quote(dir) + " overlaps inputs[" + std::to_string(i) + "].path " + Quote(in)};
    }
  }
  if (spec.checkpoint_interval_seconds() < 1 || spec.checkpoint_interval_seconds() > kMaxCheckpointIntervalSeconds) {
    return FieldViolation{"checkpoint_interval_seconds", "checkpoint.interval",
                          "must be between 1 s and " + FormatDuration(kMaxCheckpointIntervalSeconds) + ", got " +
                              FormatDuration(spec.checkpoint_interval_seconds())};
  }
  return std::nullopt;
}

// `inputs` are one task's (items.h InputsForTask): every path checked
// against the output and checkpoint directories and against each other.
Violation CheckInputs(const v1::JobSpec& spec, const std::vector<v1::InputSpec>& inputs) {
  const std::string& output = spec.output_path();
  std::map<std::string_view, size_t> first_input_at;  // path -> index of its first use
  for (size_t i = 0; i < inputs.size(); ++i) first_input_at.emplace(inputs[i].path(), i);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const v1::InputSpec& input = inputs[i];
    const std::string at = "inputs[" + std::to_string(i) + "]";
    if (!IsValidDigest(input.artifact())) {
      return Bad(at + ".artifact",
                 "expected \"sha256:\" followed by 64 lowercase hex characters, got " + Quote(input.artifact()));
    }
    const std::string& path = input.path();
    if (std::optional<std::string> problem = PathProblem(path)) return Bad(at + ".path", *problem);
    if (IsWithin(path, output)) {
      return Bad(at + ".path", Quote(path) + " is inside the output directory " + Quote(output));
    }
    if (IsWithin(output, path)) {
      return Bad(at + ".path", Quote(path) + " contains the output directory " + Quote(output));
    }
    if (size_t first = first_input_at.at(path); first != i) {
      return Bad(at + ".path", "duplicate path " + Quote(path) + " (also inputs[" + std::to_string(first) + "].path)");
    }
    // Any input at an ancestor directory of this one would shadow it.
    for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
      auto ancestor = first_input_at.find(std::string_view(path).substr(0, slash));
      if (ancestor != first_input_at.end()) {
        return Bad(at + ".path", Quote(path) + " is inside inputs[" + std::to_string(ancestor->second) + "].path " +
                                     Quote(ancestor->first));
      }
    }
  }
  return CheckCheckpoint(spec, inputs);
}

// Inputs with placeholders are checked as each item fills them in, the
// violation naming the item: every task's shard must be a digest and a safe
// path, not only the first one's.
Violation CheckFilesystem(const v1::JobSpec& spec) {
  const std::string& output = spec.output_path();
  if (std::optional<std::string> problem = PathProblem(output)) {
    return FieldViolation{"output_path", "output", *problem};
  }
  if (!InputsUsePlaceholders(spec) || spec.items_size() == 0) {
    return CheckInputs(spec, {spec.inputs().begin(), spec.inputs().end()});
  }
  for (int item = 0; item < spec.items_size(); ++item) {
    if (Violation v = CheckInputs(spec, InputsForTask(spec, static_cast<uint32_t>(item)))) {
      v->description = "with array.items[" + std::to_string(item) + "]: " + v->description;
      return v;
    }
  }
  return std::nullopt;
}

// A GPU share is a part of one device; the market terms must make sense.
Violation CheckPlacement(const v1::JobSpec& spec) {
  const v1::Resources& r = spec.resources();
  if (r.gpu_milli() > 0) {
    if (r.gpu_milli() >= 1000) {
      return FieldViolation{"resources.gpu_milli", "resources.gpuMilli",
                            "must be between 1 and 999 (a share of one GPU; ask gpus for whole ones), got " +
                                std::to_string(r.gpu_milli())};
    }
    if (r.gpus() > 1) {
      return FieldViolation{"resources.gpu_milli", "resources.gpuMilli",
                            "is a share of one GPU, but gpus is " + std::to_string(r.gpus())};
    }
    if (spec.exclusive_gpu()) {
      return FieldViolation{"exclusive_gpu", "exclusiveGpu", "contradicts resources.gpuMilli (a shared GPU)"};
    }
  }
  if (!spec.data_class().empty() &&
      std::find(std::begin(kDataClasses), std::end(kDataClasses), spec.data_class()) == std::end(kDataClasses)) {
    return FieldViolation{"data_class", "dataClass",
                          "must be public, private or regulated, got " + Quote(spec.data_class())};
  }
  if (spec.max_cost() > 0 && spec.run_timeout_seconds() == 0) {
    return FieldViolation{"max_cost", "maxCost", "needs a runTimeout to estimate a run's cost"};
  }
  return std::nullopt;
}

Violation CheckExecution(const v1::JobSpec& spec) {
  if (spec.run_timeout_seconds() == 0 || spec.run_timeout_seconds() > kMaxRunTimeoutSeconds) {
    return FieldViolation{"run_timeout_seconds", "runTimeout",
                          "must be more than 0 and at most " + FormatDuration(kMaxRunTimeoutSeconds) + ", got " +
                              FormatDuration(spec.run_timeout_seconds())};
  }
  if (spec.queue_timeout_seconds() == 0 || spec.queue_timeout_seconds() > kMaxQueueTimeoutSeconds) {
    return FieldViolation{"queue_timeout_seconds", "queueTimeout",
                          "must be more than 0 and at most " + FormatDuration(kMaxQueueTimeoutSeconds) + ", got " +
                              FormatDuration(spec.queue_timeout_seconds())};
  }
  if (spec.retries() > kMaxRetries) {
    return Bad("retries", "must be at most " + std::to_string(kMaxRetries) + ", got " + std::to_string(spec.retries()));
  }
  if (spec.array_count() < 1 || spec.array_count() > kMaxArrayCount) {
    return FieldViolation{
        "array_count", "array.count",
        "must be between 1 and " + std::to_string(kMaxArrayCount) + ", got " + std::to_string(spec.array_count())};
  }
  if (!spec.job_class().empty() && spec.job_class() != "io-uring") {
    return Bad("jobClass", "must be \"io-uring\" or absent, got " + Quote(spec.job_class()));
  }
  if (spec.runtime() != "runc" && spec.runtime() != "runsc") {
    return Bad("runtime", "must be \"runc\" or \"runsc\", got " + Quote(spec.runtime()));
  }
  return std::nullopt;
}

}  // namespace

void ApplyDefaults(v1::JobSpec* spec) {
  v1::Resources* resources = spec->mutable_resources();
  if (resources->cpu() == 0) resources->set_cpu(kDefaultCpu);
  if (resources->memory_bytes() == 0) resources->set_memory_bytes(kDefaultMemoryBytes);
  if (resources->pids() == 0) resources->set_pids(kDefaultPids);
  if (spec->output_path().empty()) spec->set_output_path(kDefaultOutputPath);
  if (spec->run_timeout_seconds() == 0) spec->set_run_timeout_seconds(kDefaultRunTimeoutSeconds);
  if (spec->queue_timeout_seconds() == 0) {
    spec->set_queue_timeout_seconds(kDefaultQueueTimeoutSeconds);
  }
  if (spec->array_count() == 0) spec->set_array_count(kDefaultArrayCount);
  if (spec->runtime().empty()) spec->set_runtime(kDefaultRuntime);
  if (!spec->checkpoint_path().empty() && spec->checkpoint_interval_seconds() == 0) {
    spec->set_checkpoint_interval_seconds(kDefaultCheckpointIntervalSeconds);
  }
  ApplyDerivedDefaults(resources);
}

void ApplyDerivedDefaults(v1::Resources* r) {
  const uint64_t tmpfs_share = r->memory_bytes() / kTmpfsDefaultMemoryDivisor;
  if (r->shm_bytes() == 0) r->set_shm_bytes(std::min(kDefaultShmBytes, tmpfs_share));
  if (r->tmp_bytes() == 0) r->set_tmp_bytes(std::min(kDefaultTmpBytes, tmpfs_share));
  if (r->disk_bytes() == 0) {
    const uint64_t total = r->output_bytes();
    r->set_disk_bytes(total > 0 ? std::min(kDefaultMaxFileBytes, total) : kDefaultMaxFileBytes);
  }
}

std::optional<FieldViolation> FindViolation(const v1::JobSpec& spec) {
  if (Violation v = CheckIdentity(spec)) return v;
  if (auto p = FindItemProblem(spec)) return FieldViolation{p->proto_field, p->manifest_field, p->description};
  if (Violation v = CheckProcess(spec)) return v;
  if (Violation v = CheckResources(spec.resources())) return v;
  if (Violation v = CheckFilesystem(spec)) return v;
  if (Violation v = CheckPlacement(spec)) return v;
  if (Violation v = CheckExecution(spec)) return v;
  if (std::optional<verify::Violation> v = verify::FindViolation(spec.verification())) {
    return FieldViolation{v->field, v->manifest_field, v->description};
  }
  return std::nullopt;
}

bool IsValidObjectName(std::string_view name) { return IsValidName(name); }

Status ValidateJobSpec(const v1::JobSpec& spec) {
  std::optional<FieldViolation> violation = FindViolation(spec);
  if (!violation) return Status::Ok();
  return Status::InvalidArgument("spec." + violation->field + ": " + violation->description);
}

std::string ImageDigestOf(const std::string& image) {
  const size_t at = image.rfind('@');
  return at == std::string::npos ? image : image.substr(at + 1);
}

}  // namespace idlegrid::manifest
