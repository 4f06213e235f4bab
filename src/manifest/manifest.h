#pragma once
// Job manifests: the YAML file a requester writes, parsed into the JobSpec that
// travels over the wire. docs/manifest.md is the user-facing reference.
//
// Everything here is pure (no I/O except LoadManifestFile) and thread-safe.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::manifest {

inline constexpr char kApiVersion[] = "idlegrid/v1";

// Defaults ApplyDefaults fills in.
inline constexpr double kDefaultCpu = 1.0;
// Room for ordinary Python ML code. Measured under podman with a cgroup
// memory limit on the python3-torch image examples/ml-sweep builds on (torch
// 1.13): `import torch` peaks at 227 MiB resident; a 2-worker DataLoader over
// 256 float 3x224x224 images in batches of 64 peaks at 378 MiB in the main
// process, and ran within 512Mi but was killed within 384Mi. 2Gi leaves room
// for a model and data beyond that, and for /dev/shm and /tmp, whose pages
// count against this limit on cgroup hosts (256Mi each by default, below).
inline constexpr uint64_t kDefaultMemoryBytes = 2ull << 30;
// resources.maxFileSize (proto disk_bytes, RLIMIT_FSIZE): the largest file,
// unless resources.disk (the total) is smaller, which then caps it too.
inline constexpr uint64_t kDefaultMaxFileBytes = 1ull << 30;
// resources.shm and resources.tmp (memory-backed tmpfs): each a quarter of
// the job's memory, at most 256Mi. PyTorch's DataLoader workers hand batches
// over in /dev/shm: the loader above failed with the 64Mi docker and podman
// give (and idlegrid gave before), its workers gone ("DataLoader worker
// exited unexpectedly"), and ran with 128Mi; 256Mi leaves room for larger
// batches, and /tmp as much for pip's and torch's unpacked temporaries. A
// quarter each leaves at least half the memory to the processes.
inline constexpr uint64_t kDefaultShmBytes = 256ull << 20;
inline constexpr uint64_t kDefaultTmpBytes = 256ull << 20;
inline constexpr uint64_t kTmpfsDefaultMemoryDivisor = 4;
inline constexpr uint32_t kDefaultPids = 256;
inline constexpr char kDefaultOutputPath[] = "/out";
inline constexpr uint32_t kDefaultRunTimeoutSeconds = 60 * 60;
inline constexpr uint32_t kDefaultQueueTimeoutSeconds = 24 * 60 * 60;
inline constexpr uint32_t kDefaultArrayCount = 1;
inline constexpr char kDefaultRuntime[] = "runc";

// The data classes a job may name (dataClass); "" leaves the choice to the
// coordinator's data policy, whose default is public. The coordinator's rules
// for them live in sched/data_policy.h, which names the same three.
inline constexpr const char* kDataClasses[] = {"public", "private", "regulated"};

// Limits ValidateJobSpec enforces.
inline constexpr uint32_t kMaxGpus = 64;
inline constexpr double kMaxCpu = 1024;
inline constexpr uint64_t kMinMemoryBytes = 4ull << 20;
inline constexpr uint64_t kMinDiskBytes = 1ull << 20;   // disk and maxFileSize
inline constexpr uint64_t kMinTmpfsBytes = 1ull << 20;  // shm and tmp
inline constexpr uint32_t kMaxPids = 65536;
inline constexpr uint32_t kMaxRunTimeoutSeconds = 7 * 24 * 60 * 60;
inline constexpr uint32_t kMaxQueueTimeoutSeconds = 30 * 24 * 60 * 60;
inline constexpr uint32_t kMaxRetries = 100;
inline constexpr uint32_t kDefaultCheckpointIntervalSeconds = 60;
inline constexpr uint32_t kMaxCheckpointIntervalSeconds = 3600;
inline constexpr uint32_t kMaxArrayCount = 100000;
inline constexpr size_t kMaxManifestBytes = 1 << 20;

// Parses a manifest. Unset fields get their defaults, and the result passes
// ValidateJobSpec. On failure returns InvalidArgument whose message is exactly
// "<filename>:<line>:<column>: <what is wrong>", 1-based, pointing at the
// offending value (or key, for unknown and duplicate keys; or the enclosing
// map, for missing fields). Never throws.
// An item array's `items: FILE` is read through `read_items` (the file's
// name as written -> its bytes); without one such a manifest is refused.
// An input `{dir: DIR, path: P}` names a local directory: `resolve_dir`
// (DIR -> the digest of its tar, uploaded; `idlegrid submit` packs and
// uploads it) makes it the input `{artifact: DIGEST, path: P, unpack: true}`,
// its error reported at the `dir` value. Without one such a manifest is
// refused.
using ItemsFileReader = std::function<Result<std::string>(const std::string& name)>;
using DirInputResolver = std::function<Result<std::string>(const std::string& dir)>;
Result<v1::JobSpec> ParseManifest(const std::string& yaml_text, const std::string& filename,
                                  ItemsFileReader read_items = nullptr, DirInputResolver resolve_dir = nullptr);

// Reads `path` and parses it with ParseManifest; an items file and a `dir:`
// input are named relative to the manifest's directory. A file that cannot
// be read is InvalidArgument "<path>: cannot read: <reason>".
Result<v1::JobSpec> LoadManifestFile(const std::string& path, DirInputResolver resolve_dir = nullptr);

// Sets every unset (zero/empty) field that has a default. Proto3 cannot tell
// "unset" from zero, so for a spec built from JSON, `memory_bytes: 0` means
// "default". ParseManifest does not have that ambiguity: there an explicit 0
// is kept and rejected by validation. Ends with ApplyDerivedDefaults.
void ApplyDefaults(v1::JobSpec* spec);

// The defaults that follow other fields, each set only when 0: shm_bytes and
// tmp_bytes min(256Mi, memory_bytes / 4); disk_bytes (maxFileSize) 1Gi, or
// output_bytes (disk, the total) when that is set and smaller. Call after
// memory_bytes and output_bytes hold their final values.
void ApplyDerivedDefaults(v1::Resources* resources);

// One broken rule of a JobSpec, named both ways.
struct FieldViolation {
  std::string field;           // proto path: "resources.memory_bytes", "inputs[2].path"
  std::string manifest_field;  // manifest path: "resources.memory", "inputs[2].path"
  std::string description;     // "must be at least 4194304 (4Mi)"
};

// The first rule `spec` breaks, or nullopt if it is valid. Expects defaults to
// have been applied (a zero memory_bytes is a violation).
std::optional<FieldViolation> FindViolation(const v1::JobSpec& spec);

// Whether `name` is a valid job (or workflow, or step) name: 1-63 characters
// of a-z 0-9 - _ . starting with a letter or digit.
bool IsValidObjectName(std::string_view name);

// FindViolation as a Status: InvalidArgument
// "spec.<field>: <description>", e.g.
// "spec.resources.memory_bytes: must be at least 4194304 (4Mi)".
Status ValidateJobSpec(const v1::JobSpec& spec);

// Byte quantities: a whole number, optionally with a decimal fraction, then an
// optional unit: k M G T P E (powers of 1000) or Ki Mi Gi Ti Pi Ei (powers of
// 1024). "256Mi", "1.5Gi", "2G", "500k", "1024". The result must be a whole
// number of bytes that fits in 64 bits. Errors are InvalidArgument.
Result<uint64_t> ParseBytes(const std::string& s);

// Durations: a plain number of seconds ("90"), or one or more <number><unit>
// parts with units d h m s in that order ("30s", "10m", "2h", "1d", "1h30m").
// Errors are InvalidArgument, including results beyond uint32 seconds.
Result<uint32_t> ParseDurationSeconds(const std::string& s);

// CPU cores: "1", "0.5", "2.25", or millicores "500m". Must be a finite,
// non-negative number; the range is checked by ValidateJobSpec.
Result<double> ParseCpu(const std::string& s);

// Renders bytes in the largest binary unit that divides them exactly:
// 4194304 -> "4Mi", 1000 -> "1000".
std::string FormatBytes(uint64_t bytes);

// Renders seconds as "1h30m", "7d", "45s", "0s".
std::string FormatDuration(uint32_t seconds);

// The digest part of a validated image reference ("name@sha256:..." ->
// "sha256:..."); a bare digest is returned as is.
std::string ImageDigestOf(const std::string& image);

// "sha256:<hex>" of the spec's deterministic serialization (map entries such
// as env sorted by key), so the same spec always has the same digest: the
// job's spec_digest, and what an attempt's provenance names as its job spec.
std::string SpecDigest(const v1::JobSpec& spec);

}  // namespace idlegrid::manifest
