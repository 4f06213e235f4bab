#include "readiness/gpu_readiness.h"

#include "readiness/result_fields.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>

#include "capacity/node_capacity.h"
#include "common/units.h"
#include "readiness/gpu_kernel.h"

namespace idlegrid::readiness {
namespace {

static_assert(kGpuBenchThreads == IG_GPU_THREADS, "the coordinator and the benchmark must agree");

constexpr size_t kMaxResultSize = 4096;
constexpr size_t kMaxQuotedText = 80;
constexpr size_t kMaxDeviceNameSize = 255;
constexpr double kMemoryRelativeTolerance = 0.05;
constexpr uint64_t kGiB = uint64_t{1} << 30;

constexpr uint64_t Gib(double gib) { return static_cast<uint64_t>(gib * static_cast<double>(kGiB)); }

// Bandwidth figures in GB/s (1e9 bytes/s). The minimums are about 40-52% of
// spec_bandwidth_gbps (the test pins that), see GpuClass for why.
constexpr GpuClass kGpuClasses[] = {
    // {name_pattern, spec GB/s, min GB/s, min memory}
    {"GH200", 4000, 2000, Gib(80)},          // 96 GB HBM3 (144 GB HBM3e: 4900)
    {"H200", 4800, 2500, Gib(119)},          // 141 GB HBM3e, SXM and NVL
    {"H100 PCIe", 2000, 900, Gib(68)},       // 80 GB HBM2e
    {"H100", 3350, 1500, Gib(68)},           // SXM 80 GB; NVL 94 GB at 3900
    {"A100", 1555, 700, Gib(34)},            // 40 GB; 80 GB parts 1935-2039
    {"L40S", 864, 380, Gib(40)},             // 48 GB GDDR6, ECC on by default
    {"RTX 4090 Laptop", 576, 250, Gib(13)},  // 16 GB
    {"RTX 4090", 1008, 400, Gib(20)},        // 24 GB, also the 4090 D
    {"RTX 4080 Laptop", 432, 180, Gib(10)},  // 12 GB
    {"RTX 4080", 717, 300, Gib(13)},         // 16 GB; SUPER 736
    {"RTX 3090", 936, 400, Gib(20)},         // 24 GB; Ti 1008
    {"RTX 3060 Laptop", 336, 140, Gib(5)},   // 6 GB
    {"RTX 3060 Ti", 448, 190, Gib(6.5)},     // 8 GB
    {"RTX 3060", 240, 100, Gib(6.5)},        // 8 GB at 240; 12 GB at 360
    {"T4", 320, 130, Gib(13)},               // "Tesla T4", 16 GB GDDR6 with ECC
};

// --- Parsing -------------------------------------------------------------------

bool ParseInto(std::optional<uint64_t> parsed, uint64_t& out) {
  if (parsed) out = *parsed;
  return parsed.has_value();
}

bool ParseInto(std::optional<double> parsed, double& out) {
  if (parsed) out = *parsed;
  return parsed.has_value();
}

bool IsPrintableAscii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

// "<1-3 digits>.<1-3 digits>", as gpu_bench prints major.minor.
bool IsComputeCapability(std::string_view text) {
  size_t dot = text.find('.');
  return dot != std::string_view::npos && ParseUnsigned(text.substr(0, dot), 10, 3) &&
         ParseUnsigned(text.substr(dot + 1), 10, 3);
}

// One key of result.txt: how to store its value, and what a valid one is.
struct Field {
  std::string_view key;
  bool (*parse)(std::string_view value, GpuBenchResult& result);
  const char* expectation;  // completes "<key> must be ..."
};

constexpr Field kFields[] = {
    {"checksum", [](std::string_view v, GpuBenchResult& r) { return ParseInto(ParseUnsigned(v, 16, 16), r.checksum); },
     "1 to 16 hex digits"},
    {"rounds", [](std::string_view v, GpuBenchResult& r) { return ParseInto(ParseUnsigned(v, 10, 20), r.rounds); },
     "a decimal integer below 2^64"},
    {"threads", [](std::string_view v, GpuBenchResult& r) { return ParseInto(ParseUnsigned(v, 10, 20), r.threads); },
     "a decimal integer below 2^64"},
    {"kernel_seconds",
     [](std::string_view v, GpuBenchResult& r) { return ParseInto(ParseNonNegativeDecimal(v), r.kernel_seconds); },
     "a finite, non-negative decimal number"},
    {"fp32_gflops",
     [](std::string_view v, GpuBenchResult& r) { return ParseInto(ParseNonNegativeDecimal(v), r.fp32_gflops); },
     "a finite, non-negative decimal number"},
    {"bandwidth_gbps",
     [](std::string_view v, GpuBenchResult& r) { return ParseInto(ParseNonNegativeDecimal(v), r.bandwidth_gbps); },
     "a finite, non-negative decimal number"},
    {"h2d_gbps",
     [](std::string_view v, GpuBenchResult& r) { return ParseInto(ParseNonNegativeDecimal(v), r.h2d_gbps); },
     "a finite, non-negative decimal number"},
    {"d2h_gbps",
     [](std::string_view v, GpuBenchResult& r) { return ParseInto(ParseNonNegativeDecimal(v), r.d2h_gbps); },
     "a finite, non-negative decimal number"},
    {"device_name",
     [](std::string_view v, GpuBenchResult& r) {
       if (v.empty() || v.size() > kMaxDeviceNameSize || !IsPrintableAscii(v)) return false;
       r.device_name = std::string(v);
       return true;
     },
     "1 to 255 printable ASCII characters"},
    {"memory_bytes",
     [](std::string_view v, GpuBenchResult& r) { return ParseInto(ParseUnsigned(v, 10, 20), r.memory_bytes); },
     "a decimal integer below 2^64"},
    {"allocatable_bytes",
     [](std::string_view v, GpuBenchResult& r) { return ParseInto(ParseUnsigned(v, 10, 20), r.allocatable_bytes); },
     "a decimal integer below 2^64"},
    {"compute_capability",
     [](std::string_view v, GpuBenchResult& r) {
       if (!IsComputeCapability(v)) return false;
       r.compute_capability = std::string(v);
       return true;
     },
     "MAJOR.MINOR, each 1 to 3 decimal digits"},
};
constexpr size_t kFieldCount = sizeof(kFields) / sizeof(kFields[0]);

const Field* FindField(std::string_view key) {
  for (const Field& field : kFields) {
    if (field.key == key) return &field;
  }
  return nullptr;
}

std::string Quote(std::string_view text) {
  if (text.size() <= kMaxQuotedText) return "\"" + std::string(text) + "\"";
  return "\"" + std::string(text.substr(0, kMaxQuotedText)) + "...\"";
}

// --- Judging -------------------------------------------------------------------

std::string Hex(uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof(text), "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

std::string Fixed(double value, int fraction_digits) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", fraction_digits, value);
  return text;
}

// One fraction digit, truncated (so a reading just below a minimum never
// prints as the minimum itself), without a trailing ".0": 310 -> "310",
// 399.96 -> "399.9".
std::string Short(double value) {
  std::string text = Fixed(std::floor(value * 10) / 10, 1);
  if (text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0) text.resize(text.size() - 2);
  return text;
}

char LowerAscii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool IsAlnumAscii(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Lower-case alphanumeric words, without a "nvidia" word: "NVIDIA GeForce
// RTX 4090" and "nvidia geforce rtx-4090" both give {geforce, rtx, 4090}.
std::vector<std::string> NameWords(std::string_view name) {
  std::vector<std::string> words;
  std::string word;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i < name.size() && IsAlnumAscii(name[i])) {
      word += LowerAscii(name[i]);
      continue;
    }
    if (!word.empty() && word != "nvidia") words.push_back(word);
    word.clear();
  }
  return words;
}

// Case-insensitive substring of `text` that starts and ends on a word
// boundary (no letter or digit just outside it).
bool ContainsWord(std::string_view text, std::string_view pattern) {
  if (pattern.empty() || pattern.size() > text.size()) return false;
  for (size_t start = 0; start + pattern.size() <= text.size(); ++start) {
    size_t end = start + pattern.size();
    bool equal = std::equal(pattern.begin(), pattern.end(), text.begin() + start,
                            [](char a, char b) { return LowerAscii(a) == LowerAscii(b); });
    if (equal && (start == 0 || !IsAlnumAscii(text[start - 1])) && (end == text.size() || !IsAlnumAscii(text[end]))) {
      return true;
    }
  }
  return false;
}

bool MemoryAgrees(uint64_t measured, uint64_t claimed) {
  double larger = static_cast<double>(std::max(measured, claimed));
  double difference = static_cast<double>(measured > claimed ? measured - claimed : claimed - measured);
  return difference <= kMemoryRelativeTolerance * larger;
}

// The first reason the result does not show the claimed device, or "".
std::string IdentityMismatch(const GpuBenchResult& result, const v1::GpuDevice& claimed) {
  if (NameWords(result.device_name) != NameWords(claimed.name())) {
    return "device name mismatch: the benchmark ran on " + Quote(result.device_name) + ", the node claims " +
           Quote(claimed.name());
  }
  if (!MemoryAgrees(result.memory_bytes, claimed.memory_total_bytes())) {
    return "device memory mismatch: the benchmark saw " + std::to_string(result.memory_bytes) + " bytes (" +
           FormatGiB(result.memory_bytes) + "), the node claims " + std::to_string(claimed.memory_total_bytes()) +
           " bytes (" + FormatGiB(claimed.memory_total_bytes()) + "); they must agree within 5%";
  }
  if (!claimed.compute_capability().empty() && result.compute_capability != claimed.compute_capability()) {
    return "compute capability mismatch: the benchmark saw " + result.compute_capability + ", the node claims " +
           Quote(claimed.compute_capability());
  }
  return "";
}

}  // namespace

std::vector<std::string> GpuBenchArgs(uint64_t rounds, uint64_t seed, const std::string& output_dir,
                                      uint32_t device_index) {
  return {std::to_string(rounds), std::to_string(seed), output_dir, std::to_string(device_index)};
}

uint64_t ExpectedGpuChecksum(uint64_t seed, uint64_t rounds) {
  uint64_t checksum = 0;
  for (uint32_t thread = 0; thread < IG_GPU_THREADS; ++thread) {
    checksum ^= ig_gpu_thread_result(seed, thread, rounds);
  }
  return checksum;
}

Result<GpuBenchResult> ParseGpuBenchResult(const std::string& text) {
  if (text.size() > kMaxResultSize) {
    return Status::InvalidArgument("GPU benchmark result is " + std::to_string(text.size()) + " bytes; at most " +
                                   std::to_string(kMaxResultSize) + " are expected");
  }
  int seen_on_line[kFieldCount] = {};
  GpuBenchResult result;
  size_t start = 0;
  for (int line_number = 1; start < text.size(); ++line_number) {
    size_t newline = text.find('\n', start);
    std::string_view line(text.data() + start, (newline == std::string::npos ? text.size() : newline) - start);
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument("GPU benchmark result line " + std::to_string(line_number) + " " + Quote(line) +
                                     ": " + why);
    };
    if (newline == std::string::npos) return bad("not ended by a newline");
    start = newline + 1;
    size_t equals = line.find('=');
    if (equals == std::string_view::npos) return bad("expected key=value");
    std::string_view key = line.substr(0, equals);
    const Field* field = FindField(key);
    if (field == nullptr) {
      return bad(
          "unknown key; expected checksum, rounds, threads, kernel_seconds, fp32_gflops, "
          "bandwidth_gbps, h2d_gbps, d2h_gbps, device_name, memory_bytes, allocatable_bytes or "
          "compute_capability");
    }
    int& seen = seen_on_line[field - kFields];
    if (seen != 0) {
      return bad("repeats " + std::string(key) + " (first on line " + std::to_string(seen) + ")");
    }
    seen = line_number;
    if (!field->parse(line.substr(equals + 1), result)) {
      return bad(std::string(key) + " must be " + field->expectation);
    }
  }
  for (size_t i = 0; i < kFieldCount; ++i) {
    if (seen_on_line[i] == 0) {
      return Status::InvalidArgument("GPU benchmark result has no " + std::string(kFields[i].key) + " line");
    }
  }
  return result;
}

std::string BenchErrorLine(std::string_view error_txt) {
  constexpr size_t kMaxLine = 300;
  std::string line;
  for (char c : error_txt.substr(0, error_txt.find('\n'))) {
    if (line.size() == kMaxLine) return line + "...";
    line += (c >= 0x20 && c <= 0x7e) ? c : '?';
  }
  return line.empty() ? "(error.txt is empty)" : line;
}

std::span<const GpuClass> GpuClasses() { return kGpuClasses; }

const GpuClass* FindGpuClass(std::string_view model) {
  for (const GpuClass& gpu_class : kGpuClasses) {
    if (ContainsWord(model, gpu_class.name_pattern)) return &gpu_class;
  }
  return nullptr;
}

GpuJudgement JudgeGpu(const GpuBenchResult& result, uint64_t seed, uint64_t rounds, const v1::GpuDevice& claimed) {
  GpuJudgement judgement;
  judgement.bandwidth_gbps = result.bandwidth_gbps;
  judgement.kernel_seconds = result.kernel_seconds;
  judgement.fp32_gflops = result.fp32_gflops;
  judgement.h2d_gbps = result.h2d_gbps;
  judgement.d2h_gbps = result.d2h_gbps;
  judgement.allocatable_bytes = result.allocatable_bytes;
  auto fail = [&judgement](const std::string& reason) {
    judgement.passed = false;
    judgement.reason = reason;
    return judgement;
  };
  if (result.rounds != rounds) {
    return fail("wrong round count: got " + std::to_string(result.rounds) + ", expected " + std::to_string(rounds));
  }
  if (result.threads != kGpuBenchThreads) {
    return fail("wrong thread count: got " + std::to_string(result.threads) + ", expected " +
                std::to_string(kGpuBenchThreads));
  }
  uint64_t expected = ExpectedGpuChecksum(seed, rounds);
  if (result.checksum != expected) {
    return fail("wrong checksum: got " + Hex(result.checksum) + ", expected " + Hex(expected));
  }
  if (!(result.kernel_seconds > 0) || !std::isfinite(result.kernel_seconds)) {
    return fail("no plausible kernel time: kernel_seconds is " + Fixed(result.kernel_seconds, 9) +
                "; it must be above 0");
  }
  if (!(result.bandwidth_gbps > 0) || !std::isfinite(result.bandwidth_gbps)) {
    return fail("no plausible bandwidth: bandwidth_gbps is " + Fixed(result.bandwidth_gbps, 3) +
                "; it must be above 0");
  }
  for (auto [name, value] : {std::pair{"fp32_gflops", result.fp32_gflops}, std::pair{"h2d_gbps", result.h2d_gbps},
                             std::pair{"d2h_gbps", result.d2h_gbps}}) {
    if (!(value > 0) || !std::isfinite(value)) {
      return fail(std::string("no plausible throughput: ") + name + " is " + Fixed(value, 3) + "; it must be above 0");
    }
  }
  if (std::string mismatch = IdentityMismatch(result, claimed); !mismatch.empty()) {
    return fail(mismatch);
  }
  // A job can use only what the driver lets it allocate: a device that
  // hands out far less than it claims (another process holds it, or the
  // claim is false) is not what the node advertised.
  const uint64_t promised = capacity::UsableVram(claimed.memory_total_bytes(), claimed.reserved_memory_bytes());
  if (result.allocatable_bytes < promised / 2) {
    return fail("only " + FormatGiB(result.allocatable_bytes) +
                " of device memory could be allocated; the node offers " + FormatGiB(promised));
  }
  const GpuClass* gpu_class = FindGpuClass(claimed.name());
  if (gpu_class == nullptr) {
    judgement.passed = true;
    judgement.reason =
        "no plausibility figures for " + Quote(claimed.name()) + "; passed on checksum and device identity alone";
    return judgement;
  }
  if (!(result.bandwidth_gbps >= gpu_class->min_bandwidth_gbps)) {
    return fail("implausible for " + std::string(gpu_class->name_pattern) + ": " + Short(result.bandwidth_gbps) +
                " GB/s device bandwidth, expected at least " + Short(gpu_class->min_bandwidth_gbps));
  }
  if (result.memory_bytes < gpu_class->min_memory_bytes) {
    return fail("implausible for " + std::string(gpu_class->name_pattern) + ": " + FormatGiB(result.memory_bytes) +
                " of device memory, expected at least " + FormatGiB(gpu_class->min_memory_bytes));
  }
  judgement.passed = true;
  return judgement;
}

}  // namespace idlegrid::readiness
