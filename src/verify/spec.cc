#include "verify/spec.h"

#include <cmath>

namespace idlegrid::verify {
namespace {

constexpr uint32_t kMaxReplicas = 16;
constexpr uint32_t kMaxTrustThreshold = 1000;
constexpr size_t kMaxPathLength = 4096;

Violation Bad(const std::string& proto, const std::string& manifest, std::string description) {
  return {"verification." + proto, "verification." + manifest, std::move(description)};
}

std::string Quoted(const std::string& s) { return "\"" + s.substr(0, 80) + (s.size() > 80 ? "...\"" : "\""); }

// Output paths are relative to the output directory and stay inside it.
std::optional<std::string> PathProblem(const std::string& path) {
  if (path.empty()) return "must not be empty";
  if (path.size() > kMaxPathLength) return "is longer than " + std::to_string(kMaxPathLength) + " bytes";
  if (path.front() == '/') return "must be relative to the output directory, got " + Quoted(path);
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(start, end - start);
    if (part == ".." || part == "." || part.empty()) {
      return "must be a plain path inside the output directory, got " + Quoted(path);
    }
    start = end + 1;
  }
  if (path.find('\0') != std::string::npos) return "must not contain NUL";
  return std::nullopt;
}

bool IsBound(double x) { return std::isfinite(x) && x >= 0; }

std::optional<Violation> CheckCompare(const v1::Verification& v) {
  for (int i = 0; i < v.outputs_size(); ++i) {
    if (auto problem = PathProblem(v.outputs(i))) {
      std::string at = "outputs[" + std::to_string(i) + "]";
      return Bad(at, at, *problem);
    }
  }
  for (int i = 0; i < v.tolerances_size(); ++i) {
    const v1::ToleranceRule& t = v.tolerances(i);
    const std::string at = "tolerances[" + std::to_string(i) + "]";
    if (auto problem = PathProblem(t.output())) return Bad(at + ".output", at + ".output", *problem);
    if (t.format() != "json" && t.format() != "csv") {
      return Bad(at + ".format", at + ".format", "must be \"json\" or \"csv\", got " + Quoted(t.format()));
    }
    if (!IsBound(t.relative())) return Bad(at + ".relative", at + ".relative", "must be a number >= 0");
    if (!IsBound(t.absolute())) return Bad(at + ".absolute", at + ".absolute", "must be a number >= 0");
    for (int j = 0; j < t.fields_size(); ++j) {
      if (t.fields(j).empty()) {
        std::string f = at + ".fields[" + std::to_string(j) + "]";
        return Bad(f, f, "must not be empty");
      }
    }
    for (int j = 0; j < i; ++j) {
      if (v.tolerances(j).output() == t.output()) {
        return Bad(at + ".output", at + ".output", "names " + Quoted(t.output()) + " twice");
      }
    }
  }
  return std::nullopt;
}

std::optional<Violation> CheckReplication(const v1::Verification& v, Mode mode) {
  const bool replicates = mode == Mode::kReplicate || mode == Mode::kAdaptive;
  if (!replicates) {
    if (v.replicas() || v.quorum() || v.max_replicas()) {
      return Bad("replicas", "replicas", std::string("has no meaning for mode ") + ModeName(mode));
    }
    return std::nullopt;
  }
  if (v.replicas() != 0 && (v.replicas() < 2 || v.replicas() > kMaxReplicas)) {
    return Bad("replicas", "replicas",
               "must be between 2 and " + std::to_string(kMaxReplicas) + ", got " + std::to_string(v.replicas()));
  }
  const uint32_t replicas = v.replicas() ? v.replicas() : 2;
  if (v.quorum() != 0 && (v.quorum() > replicas || 2 * v.quorum() <= replicas)) {
    return Bad("quorum", "quorum",
               "must be a majority of replicas (" + std::to_string(MajorityOf(replicas)) + " to " +
                   std::to_string(replicas) + "), got " + std::to_string(v.quorum()));
  }
  if (v.max_replicas() != 0 && (v.max_replicas() < replicas || v.max_replicas() > kMaxReplicas)) {
    return Bad("max_replicas", "maxReplicas",
               "must be between replicas (" + std::to_string(replicas) + ") and " + std::to_string(kMaxReplicas) +
                   ", got " + std::to_string(v.max_replicas()));
  }
  return std::nullopt;
}

std::optional<Violation> CheckRates(const v1::Verification& v, Mode mode) {
  if (mode != Mode::kAdaptive && (v.trust_threshold() || v.audit_floor() != 0)) {
    return Bad("trust_threshold", "trustThreshold", std::string("has no meaning for mode ") + ModeName(mode));
  }
  if (v.trust_threshold() > kMaxTrustThreshold) {
    return Bad(
        "trust_threshold", "trustThreshold",
        "must be at most " + std::to_string(kMaxTrustThreshold) + ", got " + std::to_string(v.trust_threshold()));
  }
  if (!(std::isfinite(v.audit_floor()) && v.audit_floor() >= 0 && v.audit_floor() <= 1)) {
    return Bad("audit_floor", "auditFloor", "must be a fraction between 0 and 1");
  }
  if (mode != Mode::kChallenge && v.challenge_rate() != 0) {
    return Bad("challenge_rate", "challengeRate", std::string("has no meaning for mode ") + ModeName(mode));
  }
  if (!(std::isfinite(v.challenge_rate()) && v.challenge_rate() >= 0 && v.challenge_rate() <= 1)) {
    return Bad("challenge_rate", "challengeRate", "must be a fraction between 0 and 1");
  }
  return std::nullopt;
}

}  // namespace

const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kNone:
      return "none";
    case Mode::kReplicate:
      return "replicate";
    case Mode::kAdaptive:
      return "adaptive";
    case Mode::kChallenge:
      return "challenge";
  }
  return "none";
}

std::optional<Mode> ParseMode(const std::string& name) {
  for (Mode m : {Mode::kNone, Mode::kReplicate, Mode::kAdaptive, Mode::kChallenge}) {
    if (name == ModeName(m)) return m;
  }
  return std::nullopt;
}

std::optional<Violation> FindViolation(const v1::Verification& v) {
  if (v.mode().empty()) {
    // The policy decides the mode, so nothing else may be set: its meaning
    // would depend on a mode the job did not choose.
    if (v.ByteSizeLong() != 0) return Bad("mode", "mode", "must be set when other verification fields are");
    return std::nullopt;
  }
  std::optional<Mode> mode = ParseMode(v.mode());
  if (!mode) {
    return Bad("mode", "mode", "must be none, replicate, adaptive or challenge, got " + Quoted(v.mode()));
  }
  if (*mode == Mode::kNone && (v.outputs_size() || v.tolerances_size())) {
    return Bad("outputs", "outputs", "has no meaning for mode none");
  }
  if (auto bad = CheckReplication(v, *mode)) return bad;
  if (auto bad = CheckRates(v, *mode)) return bad;
  return CheckCompare(v);
}

Result<VerificationSpec> Resolve(const v1::Verification& v, const VerificationPolicy& policy) {
  if (std::optional<Violation> bad = FindViolation(v)) {
    return Status::InvalidArgument(bad->field + ": " + bad->description);
  }
  VerificationSpec spec;
  spec.mode = v.mode().empty() ? policy.default_mode : *ParseMode(v.mode());
  if (spec.mode == Mode::kReplicate || spec.mode == Mode::kAdaptive) {
    spec.replicas = v.replicas() ? v.replicas() : policy.replicas;
    spec.quorum = v.quorum() ? v.quorum() : MajorityOf(spec.replicas);
    spec.max_replicas = v.max_replicas() ? v.max_replicas() : spec.replicas + policy.extra_runs;
    spec.margin = policy.dispute_margin;
  }
  if (spec.mode == Mode::kAdaptive) {
    spec.trust_threshold = v.trust_threshold() ? v.trust_threshold() : policy.trust_threshold;
    spec.audit_floor = v.audit_floor() != 0 ? v.audit_floor() : policy.audit_floor;
    // Known-answer checks of trusted providers' lone results (the manifest's
    // challengeRate belongs to challenge mode: the operator sets this one).
    spec.challenge_rate = policy.known_answer_rate;
  }
  if (spec.mode == Mode::kChallenge) {
    spec.challenge_rate = v.challenge_rate() != 0 ? v.challenge_rate() : policy.challenge_rate;
    // The share of results replicated to supply known answers (challenge.h).
    spec.audit_floor = policy.audit_floor;
  }
  spec.compare.outputs.assign(v.outputs().begin(), v.outputs().end());
  for (const v1::ToleranceRule& t : v.tolerances()) {
    ToleranceRule rule;
    rule.output = t.output();
    rule.format = t.format() == "csv" ? TableFormat::kCsv : TableFormat::kJson;
    rule.fields.assign(t.fields().begin(), t.fields().end());
    rule.relative = t.relative();
    rule.absolute = t.absolute();
    spec.compare.tolerances.push_back(std::move(rule));
  }
  return spec;
}

}  // namespace idlegrid::verify
