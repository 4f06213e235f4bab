#include "runtime/seccomp_profile.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>

namespace idlegrid::runtime {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

// Integers above 2^53 do not survive the JSON parser's doubles exactly.
constexpr double kMaxExactInteger = 9007199254740992.0;

const Value* Field(const Struct& object, const std::string& key) {
  auto it = object.fields().find(key);
  return it == object.fields().end() ? nullptr : &it->second;
}

std::string StringField(const Struct& object, const std::string& key) {
  const Value* v = Field(object, key);
  return v && v->has_string_value() ? v->string_value() : "";
}

// A list field as strings; null or absent is empty, other kinds are errors.
Result<std::vector<std::string>> StringList(const Struct& object, const std::string& key, const std::string& where) {
  std::vector<std::string> out;
  const Value* v = Field(object, key);
  if (v == nullptr || v->has_null_value()) return out;
  if (!v->has_list_value()) return Status::InvalidArgument(where + "." + key + " is not a list");
  for (const Value& item : v->list_value().values()) {
    if (!item.has_string_value()) return Status::InvalidArgument(where + "." + key + " holds a non-string");
    out.push_back(item.string_value());
  }
  return out;
}

Result<uint64_t> Integer(const Value* v, const std::string& where) {
  if (v == nullptr || !v->has_number_value()) return Status::InvalidArgument(where + " is not a number");
  double d = v->number_value();
  if (d < 0 || d > kMaxExactInteger || std::floor(d) != d) {
    return Status::InvalidArgument(where + " = " + std::to_string(d) + " is not an integer in [0, 2^53]");
  }
  return static_cast<uint64_t>(d);
}

// The optional errno field ("errnoRet"/"defaultErrnoRet").
Result<std::optional<uint32_t>> OptionalErrno(const Struct& object, const std::string& key, const std::string& where) {
  const Value* v = Field(object, key);
  if (v == nullptr || v->has_null_value()) return std::optional<uint32_t>();
  IG_ASSIGN_OR_RETURN(uint64_t n, Integer(v, where + "." + key));
  if (n > 4095) return Status::InvalidArgument(where + "." + key + " is not an errno");
  return std::optional<uint32_t>(static_cast<uint32_t>(n));
}

Status CheckAction(const std::string& action, const std::string& where) {
  if (action.rfind("SCMP_ACT_", 0) == 0) return Status::Ok();
  return Status::InvalidArgument(where + " has action \"" + action + "\", not SCMP_ACT_*");
}

// The nested includes/excludes object; absent means empty.
const Struct* Filter(const Struct& rule, const std::string& key) {
  const Value* v = Field(rule, key);
  return v && v->has_struct_value() ? &v->struct_value() : nullptr;
}

bool Contains(const std::vector<std::string>& items, std::string_view item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// Whether a rule applies to a process with no capabilities on go_arch/kernel.
Result<bool> RuleApplies(const Struct& rule, std::string_view go_arch, KernelVersion kernel, const std::string& where) {
  if (const Struct* inc = Filter(rule, "includes")) {
    IG_ASSIGN_OR_RETURN(std::vector<std::string> caps, StringList(*inc, "caps", where + ".includes"));
    if (!caps.empty()) return false;  // needs a capability we never grant
    IG_ASSIGN_OR_RETURN(std::vector<std::string> arches, StringList(*inc, "arches", where + ".includes"));
    if (!arches.empty() && !Contains(arches, go_arch)) return false;
    const std::string min_kernel = StringField(*inc, "minKernel");
    if (!min_kernel.empty()) {
      std::optional<KernelVersion> min = ParseKernelRelease(min_kernel);
      if (!min) return Status::InvalidArgument(where + ".includes.minKernel \"" + min_kernel + "\" is not N.N");
      if (std::pair(kernel.major, kernel.minor) < std::pair(min->major, min->minor)) return false;
    }
  }
  if (const Struct* exc = Filter(rule, "excludes")) {
    IG_ASSIGN_OR_RETURN(std::vector<std::string> arches, StringList(*exc, "arches", where + ".excludes"));
    if (Contains(arches, go_arch)) return false;
  }
  return true;
}

Result<std::vector<SeccompArg>> ParseArgs(const Struct& rule, const std::string& where) {
  std::vector<SeccompArg> out;
  const Value* v = Field(rule, "args");
  if (v == nullptr || v->has_null_value()) return out;
  if (!v->has_list_value()) return Status::InvalidArgument(where + ".args is not a list");
  for (int i = 0; i < v->list_value().values_size(); ++i) {
    const std::string at = where + ".args[" + std::to_string(i) + "]";
    const Value& item = v->list_value().values(i);
    if (!item.has_struct_value()) return Status::InvalidArgument(at + " is not an object");
    const Struct& arg = item.struct_value();
    SeccompArg a;
    IG_ASSIGN_OR_RETURN(uint64_t index, Integer(Field(arg, "index"), at + ".index"));
    if (index > 5) return Status::InvalidArgument(at + ".index is above 5");
    a.index = static_cast<uint32_t>(index);
    IG_ASSIGN_OR_RETURN(a.value, Integer(Field(arg, "value"), at + ".value"));
    if (Field(arg, "valueTwo") != nullptr) {
      IG_ASSIGN_OR_RETURN(a.value_two, Integer(Field(arg, "valueTwo"), at + ".valueTwo"));
    }
    a.op = StringField(arg, "op");
    if (a.op.rfind("SCMP_CMP_", 0) != 0) return Status::InvalidArgument(at + ".op is not SCMP_CMP_*");
    out.push_back(std::move(a));
  }
  return out;
}

Result<std::vector<std::string>> Architectures(const Struct& profile, std::string_view go_arch) {
  const std::string host = ScmpArchForGoArch(go_arch);
  if (host.empty())
    return Status::InvalidArgument("no seccomp architecture is known for \"" + std::string(go_arch) + "\"");
  const Value* arch_map = Field(profile, "archMap");
  if (arch_map && arch_map->has_list_value()) {
    for (const Value& entry : arch_map->list_value().values()) {
      if (!entry.has_struct_value() || StringField(entry.struct_value(), "architecture") != host) continue;
      std::vector<std::string> out = {host};
      IG_ASSIGN_OR_RETURN(std::vector<std::string> subs,
                          StringList(entry.struct_value(), "subArchitectures", "archMap"));
      out.insert(out.end(), subs.begin(), subs.end());
      return out;
    }
    return std::vector<std::string>{host};  // the map does not know the host: the native ABI only
  }
  IG_ASSIGN_OR_RETURN(std::vector<std::string> legacy, StringList(profile, "architectures", "profile"));
  return legacy.empty() ? std::vector<std::string>{host} : legacy;
}

}  // namespace

std::string ScmpArchForGoArch(std::string_view go_arch) {
  static const std::pair<const char*, const char*> kArches[] = {
      {"amd64", "SCMP_ARCH_X86_64"},    {"386", "SCMP_ARCH_X86"},           {"arm64", "SCMP_ARCH_AARCH64"},
      {"arm", "SCMP_ARCH_ARM"},         {"ppc64le", "SCMP_ARCH_PPC64LE"},   {"s390x", "SCMP_ARCH_S390X"},
      {"riscv64", "SCMP_ARCH_RISCV64"}, {"mips64le", "SCMP_ARCH_MIPSEL64"}, {"mips64", "SCMP_ARCH_MIPS64"},
  };
  for (const auto& [go, scmp] : kArches) {
    if (go_arch == go) return scmp;
  }
  return "";
}

std::string HostGoArch() {
#if defined(__x86_64__)
  return "amd64";
#elif defined(__aarch64__)
  return "arm64";
#elif defined(__i386__)
  return "386";
#elif defined(__arm__)
  return "arm";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return "ppc64le";
#elif defined(__s390x__)
  return "s390x";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#else
  return "";
#endif
}

std::optional<KernelVersion> ParseKernelRelease(std::string_view release) {
  KernelVersion v;
  size_t i = 0;
  auto number = [&](int* out) {
    size_t start = i;
    long n = 0;
    while (i < release.size() && release[i] >= '0' && release[i] <= '9' && i - start < 6) {
      n = n * 10 + (release[i++] - '0');
    }
    *out = static_cast<int>(n);
    return i > start;
  };
  if (!number(&v.major) || i >= release.size() || release[i++] != '.' || !number(&v.minor)) return std::nullopt;
  return v;
}

Result<SeccompProfile> ConvertSeccompProfile(std::string_view profile_json, std::string_view go_arch,
                                             KernelVersion kernel) {
  Struct profile;
  auto parsed = google::protobuf::util::JsonStringToMessage(std::string(profile_json), &profile);
  if (!parsed.ok()) return Status::InvalidArgument("seccomp profile is not a JSON object: " + parsed.ToString());
  SeccompProfile out;
  out.default_action = StringField(profile, "defaultAction");
  IG_RETURN_IF_ERROR(CheckAction(out.default_action, "seccomp profile defaultAction"));
  IG_ASSIGN_OR_RETURN(out.default_errno_ret, OptionalErrno(profile, "defaultErrnoRet", "seccomp profile"));
  IG_ASSIGN_OR_RETURN(out.architectures, Architectures(profile, go_arch));

  const Value* syscalls = Field(profile, "syscalls");
  if (syscalls == nullptr || !syscalls->has_list_value()) return out;  // the default action alone
  for (int i = 0; i < syscalls->list_value().values_size(); ++i) {
    const std::string where = "seccomp profile syscalls[" + std::to_string(i) + "]";
    const Value& item = syscalls->list_value().values(i);
    if (!item.has_struct_value()) return Status::InvalidArgument(where + " is not an object");
    const Struct& rule = item.struct_value();
    IG_ASSIGN_OR_RETURN(bool applies, RuleApplies(rule, go_arch, kernel, where));
    if (!applies) continue;
    SeccompRule r;
    IG_ASSIGN_OR_RETURN(r.names, StringList(rule, "names", where));
    if (std::string legacy = StringField(rule, "name"); !legacy.empty()) r.names.push_back(legacy);
    if (r.names.empty()) return Status::InvalidArgument(where + " names no syscall");
    r.action = StringField(rule, "action");
    IG_RETURN_IF_ERROR(CheckAction(r.action, where));
    IG_ASSIGN_OR_RETURN(r.errno_ret, OptionalErrno(rule, "errnoRet", where));
    IG_ASSIGN_OR_RETURN(r.args, ParseArgs(rule, where));
    out.syscalls.push_back(std::move(r));
  }
  return out;
}

}  // namespace idlegrid::runtime
