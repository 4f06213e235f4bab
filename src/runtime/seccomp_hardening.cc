#include "runtime/seccomp_hardening.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <set>

#include "common/digest.h"
#include "common/embed_file.h"
#include "common/json_writer.h"

#ifndef IDLEGRID_SECCOMP_BASE_PATH
#error "IDLEGRID_SECCOMP_BASE_PATH (containers-common's seccomp.json) must be defined by the build"
#endif

IDLEGRID_EMBED_FILE(seccomp_base, IDLEGRID_SECCOMP_BASE_PATH);

namespace idlegrid::runtime {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

constexpr double kEperm = 1;
constexpr double kEnosys = 38;
// CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER
// | CLONE_NEWPID | CLONE_NEWNET: clone(2) takes its flags in the first
// argument on every architecture we build for (s390 swaps the first two).
constexpr double kCloneNamespaceFlags = 0x7E020000;

const std::vector<std::string>& IoUringSyscalls() {
  static const std::vector<std::string> names = {"io_uring_setup", "io_uring_enter", "io_uring_register"};
  return names;
}

Value StringValue(const std::string& s) {
  Value v;
  v.set_string_value(s);
  return v;
}

Value NumberValue(double d) {
  Value v;
  v.set_number_value(d);
  return v;
}

Value Rule(const std::vector<std::string>& names, const std::string& action) {
  Value rule;
  Struct* r = rule.mutable_struct_value();
  ListValue* list = (*r->mutable_fields())["names"].mutable_list_value();
  for (const std::string& n : names) *list->add_values() = StringValue(n);
  (*r->mutable_fields())["action"] = StringValue(action);
  return rule;
}

Value ErrnoRule(const std::vector<std::string>& names, double errno_ret) {
  Value rule = Rule(names, "SCMP_ACT_ERRNO");
  (*rule.mutable_struct_value()->mutable_fields())["errnoRet"] = NumberValue(errno_ret);
  return rule;
}

// clone without any namespace flag (SCMP_CMP_MASKED_EQ: flags & mask == 0).
Value CloneWithoutNamespaces() {
  Value rule = Rule({"clone"}, "SCMP_ACT_ALLOW");
  Value arg;
  auto& a = *arg.mutable_struct_value()->mutable_fields();
  a["index"] = NumberValue(0);
  a["value"] = NumberValue(kCloneNamespaceFlags);
  a["valueTwo"] = NumberValue(0);
  a["op"] = StringValue("SCMP_CMP_MASKED_EQ");
  *(*rule.mutable_struct_value()->mutable_fields())["args"].mutable_list_value()->add_values() = arg;
  return rule;
}

// Removes `drop` from the names of one rule; false when none is left.
bool StripNames(Struct& rule, const std::set<std::string>& drop) {
  auto names = rule.mutable_fields()->find("names");
  if (names == rule.mutable_fields()->end() || !names->second.has_list_value()) {
    auto legacy = rule.fields().find("name");
    return legacy == rule.fields().end() || drop.count(legacy->second.string_value()) == 0;
  }
  ListValue kept;
  for (const Value& n : names->second.list_value().values()) {
    if (!n.has_string_value() || drop.count(n.string_value()) == 0) *kept.add_values() = n;
  }
  const bool any = kept.values_size() > 0;
  *names->second.mutable_list_value() = std::move(kept);
  return any;
}

std::string ActionOf(const Struct& rule) {
  auto it = rule.fields().find("action");
  return it == rule.fields().end() ? "" : it->second.string_value();
}

// JSON with object keys sorted, so that one profile always has one digest
// (protobuf prints a Struct's map in no fixed order).
void Print(const Value& v, JsonWriter& w) {
  switch (v.kind_case()) {
    case Value::kStructValue: {
      std::vector<std::string> keys;
      for (const auto& [k, _] : v.struct_value().fields()) keys.push_back(k);
      std::sort(keys.begin(), keys.end());
      w.BeginObject();
      for (const std::string& key : keys) {
        w.Key(key);
        Print(v.struct_value().fields().at(key), w);
      }
      w.EndObject();
      return;
    }
    case Value::kListValue:
      w.BeginArray();
      for (const Value& item : v.list_value().values()) Print(item, w);
      w.EndArray();
      return;
    case Value::kStringValue:
      w.String(v.string_value());
      return;
    case Value::kNumberValue:
      // Every number in a profile is an integer below 2^53 (ConvertSeccompProfile checks).
      w.SignedNumber(static_cast<int64_t>(v.number_value()));
      return;
    case Value::kBoolValue:
      w.Bool(v.bool_value());
      return;
    default:
      w.Null();
  }
}

}  // namespace

const std::vector<std::string>& DeniedSyscalls() {
  static const std::vector<std::string> names = {
      // namespaces: creating or joining one
      "unshare", "setns",
      // kernel keyrings
      "keyctl", "add_key", "request_key",
      // BPF, perf, userfaultfd: common exploit primitives
      "bpf", "perf_event_open", "userfaultfd",
      // the mount family, pivot_root and chroot
      "mount", "umount", "umount2", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
      "mount_setattr", "pivot_root", "chroot",
      // other processes' memory and state
      "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
      // the kernel itself
      "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
      // file handles bypass path checks
      "open_by_handle_at", "name_to_handle_at",
      // asynchronous I/O that seccomp cannot see into
      "io_uring_setup", "io_uring_enter", "io_uring_register",
      // host-wide controls
      "reboot", "swapon", "swapoff", "syslog", "acct", "quotactl", "lookup_dcookie", "iopl", "ioperm", "vhangup"};
  return names;
}

Result<std::string> HardenSeccompProfile(std::string_view base, std::string_view job_class) {
  if (!job_class.empty() && job_class != kJobClassIoUring) {
    return Status::InvalidArgument("unknown job class \"" + std::string(job_class) + "\"; known: " + kJobClassIoUring);
  }
  Struct profile;
  auto parsed = google::protobuf::util::JsonStringToMessage(std::string(base), &profile);
  if (!parsed.ok()) return Status::InvalidArgument("seccomp profile is not a JSON object: " + parsed.ToString());
  auto syscalls = profile.mutable_fields()->find("syscalls");
  if (syscalls == profile.mutable_fields()->end() || !syscalls->second.has_list_value()) {
    return Status::InvalidArgument("seccomp profile has no \"syscalls\" list");
  }

  std::vector<std::string> denied = DeniedSyscalls();
  if (job_class == kJobClassIoUring) {
    std::erase_if(denied, [](const std::string& n) {
      const auto& io = IoUringSyscalls();
      return std::find(io.begin(), io.end(), n) != io.end();
    });
  }
  // clone is narrowed, not denied; clone3 answers ENOSYS.
  std::set<std::string> drop(denied.begin(), denied.end());
  drop.insert({"clone", "clone3"});

  ListValue rules;
  for (Value& item : *syscalls->second.mutable_list_value()->mutable_values()) {
    if (!item.has_struct_value()) return Status::InvalidArgument("seccomp profile holds a rule that is not an object");
    Struct& rule = *item.mutable_struct_value();
    // Only allowing rules lose names: an existing ERRNO rule for a denied
    // syscall already refuses it.
    if (ActionOf(rule) == "SCMP_ACT_ALLOW" && !StripNames(rule, drop)) continue;
    *rules.add_values() = std::move(item);
  }
  *rules.add_values() = CloneWithoutNamespaces();
  *rules.add_values() = ErrnoRule({"clone3"}, kEnosys);
  *rules.add_values() = ErrnoRule(denied, kEperm);
  if (job_class == kJobClassIoUring) *rules.add_values() = Rule(IoUringSyscalls(), "SCMP_ACT_ALLOW");
  *syscalls->second.mutable_list_value() = std::move(rules);

  Value root;
  *root.mutable_struct_value() = std::move(profile);
  JsonWriter w;
  Print(root, w);
  return w.Take();
}

std::string_view BuiltInBaseSeccompProfile() { return IDLEGRID_EMBEDDED(seccomp_base); }

std::string SeccompDigest(std::string_view profile_json) { return Sha256Digest(profile_json); }

}  // namespace idlegrid::runtime
