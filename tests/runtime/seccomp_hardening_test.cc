// idlegrid's seccomp profile and job user (issue 12), on plain data: the
// profile made from the built-in base allows none of the denied syscalls,
// narrows clone, and widens only for an approved job class.
#include "runtime/seccomp_hardening.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "runtime/job_sandbox.h"
#include "runtime/podman_args.h"
#include "runtime/seccomp_profile.h"

namespace idlegrid::runtime {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

struct Rule {
  std::vector<std::string> names;
  std::string action;
  double errno_ret = -1;
  bool has_args = false;
  std::string first_op;
  double first_value = 0;
};

std::vector<Rule> Rules(const std::string& json) {
  Struct profile;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &profile).ok());
  std::vector<Rule> out;
  for (const Value& v : profile.fields().at("syscalls").list_value().values()) {
    const auto& f = v.struct_value().fields();
    Rule r;
    for (const Value& n : f.at("names").list_value().values()) r.names.push_back(n.string_value());
    r.action = f.at("action").string_value();
    if (f.count("errnoRet")) r.errno_ret = f.at("errnoRet").number_value();
    if (f.count("args") && f.at("args").list_value().values_size() > 0) {
      r.has_args = true;
      const auto& a = f.at("args").list_value().values(0).struct_value().fields();
      r.first_op = a.at("op").string_value();
      r.first_value = a.at("value").number_value();
    }
    out.push_back(r);
  }
  return out;
}

bool Names(const Rule& r, const std::string& name) {
  return std::find(r.names.begin(), r.names.end(), name) != r.names.end();
}

std::string Hardened(const std::string& job_class = "") {
  Result<std::string> json = HardenSeccompProfile(BuiltInBaseSeccompProfile(), job_class);
  EXPECT_TRUE(json.ok()) << json.status().message();
  return json.ok() ? *json : "";
}

TEST(SeccompHardeningTest, TheBaseIsPodmansDefaultAndAllowsWhatWeDeny) {
  // The reason for the profile: podman's default lets these through to a
  // process in a user namespace.
  const std::vector<Rule> base = Rules(std::string(BuiltInBaseSeccompProfile()));
  for (const char* name : {"unshare", "keyctl", "mount", "ptrace", "setns", "clone"}) {
    EXPECT_TRUE(std::any_of(base.begin(), base.end(), [&](const Rule& r) {
      return r.action == "SCMP_ACT_ALLOW" && Names(r, name);
    })) << name;
  }
}

TEST(SeccompHardeningTest, NoAllowingRuleNamesADeniedSyscallAndEachIsRefusedWithEperm) {
  const std::vector<Rule> rules = Rules(Hardened());
  for (const std::string& name : DeniedSyscalls()) {
    for (const Rule& r : rules) {
      EXPECT_FALSE(r.action == "SCMP_ACT_ALLOW" && Names(r, name)) << name << " is still allowed";
    }
    EXPECT_TRUE(
        std::any_of(rules.begin(), rules.end(),
                    [&](const Rule& r) { return r.action == "SCMP_ACT_ERRNO" && r.errno_ret == 1 && Names(r, name); }))
        << name << " is not refused with EPERM";
  }
  EXPECT_GE(DeniedSyscalls().size(), 40u);
}

TEST(SeccompHardeningTest, CloneIsAllowedOnlyWithoutNamespaceFlagsAndClone3FallsBack) {
  const std::vector<Rule> rules = Rules(Hardened());
  int clone_rules = 0;
  for (const Rule& r : rules) {
    if (r.action != "SCMP_ACT_ALLOW" || !Names(r, "clone")) continue;
    ++clone_rules;
    EXPECT_EQ(r.names.size(), 1u);
    ASSERT_TRUE(r.has_args) << "an unconditional clone allows CLONE_NEWUSER";
    EXPECT_EQ(r.first_op, "SCMP_CMP_MASKED_EQ");
    EXPECT_EQ(static_cast<uint64_t>(r.first_value), 0x7E020000u);
  }
  EXPECT_EQ(clone_rules, 1);
  EXPECT_TRUE(std::any_of(rules.begin(), rules.end(), [](const Rule& r) {
    return r.action == "SCMP_ACT_ERRNO" && r.errno_ret == 38 && Names(r, "clone3");
  }));
  // Everything else the base allowed stays allowed (read, write, ioctl for GPUs).
  for (const char* kept : {"read", "write", "ioctl", "openat", "mmap", "futex", "execve"}) {
    EXPECT_TRUE(std::any_of(rules.begin(), rules.end(), [&](const Rule& r) {
      return r.action == "SCMP_ACT_ALLOW" && Names(r, kept);
    })) << kept;
  }
}

TEST(SeccompHardeningTest, TheIoUringClassAllowsIoUringAndNothingElseMore) {
  const std::vector<Rule> rules = Rules(Hardened(kJobClassIoUring));
  for (const char* name : {"io_uring_setup", "io_uring_enter", "io_uring_register"}) {
    EXPECT_TRUE(std::any_of(rules.begin(), rules.end(), [&](const Rule& r) {
      return r.action == "SCMP_ACT_ALLOW" && Names(r, name);
    })) << name;
  }
  for (const char* still : {"unshare", "keyctl", "bpf", "mount", "ptrace"}) {
    for (const Rule& r : rules) EXPECT_FALSE(r.action == "SCMP_ACT_ALLOW" && Names(r, still)) << still;
  }
  EXPECT_NE(SeccompDigest(Hardened()), SeccompDigest(Hardened(kJobClassIoUring)));
  EXPECT_EQ(SeccompDigest(Hardened()), SeccompDigest(Hardened())) << "the profile must be deterministic";
}

TEST(SeccompHardeningTest, BadInputIsAnErrorThatSaysWhat) {
  Result<std::string> unknown = HardenSeccompProfile(BuiltInBaseSeccompProfile(), "gpu-everything");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown job class \"gpu-everything\""), std::string::npos);
  EXPECT_FALSE(HardenSeccompProfile("not json", "").ok());
  Result<std::string> no_list = HardenSeccompProfile(R"({"defaultAction":"SCMP_ACT_ERRNO"})", "");
  ASSERT_FALSE(no_list.ok());
  EXPECT_NE(no_list.status().message().find("syscalls"), std::string::npos);
}

TEST(SeccompHardeningTest, RuncGetsTheSameRulesThroughTheConversion) {
  Result<SeccompProfile> converted = ConvertSeccompProfile(Hardened(), "amd64", KernelVersion{6, 1});
  ASSERT_TRUE(converted.ok()) << converted.status().message();
  for (const SeccompRule& r : converted->syscalls) {
    if (r.action != "SCMP_ACT_ALLOW") continue;
    for (const char* denied : {"unshare", "setns", "keyctl", "mount", "ptrace", "bpf"}) {
      EXPECT_EQ(std::count(r.names.begin(), r.names.end(), denied), 0) << denied;
    }
    if (std::count(r.names.begin(), r.names.end(), "clone")) {
      ASSERT_EQ(r.args.size(), 1u);
      EXPECT_EQ(r.args[0].op, "SCMP_CMP_MASKED_EQ");
    }
  }
}

TEST(JobUserTest, RunsAsASubordinateIdWhenTheAgentHasThem) {
  const std::vector<IdMapping> uids = {{0, 1005, 1}, {1, 362144, 65536}};
  const std::vector<IdMapping> gids = {{0, 1005, 1}, {1, 362144, 65536}};
  auto user = JobUserFor(uids, gids);
  ASSERT_TRUE(user.has_value());
  EXPECT_EQ(user->first, kJobUid);
  EXPECT_EQ(HostIdOf(uids, kJobUid), 362144u + kJobUid - 1);
  EXPECT_EQ(DescribeJobUser(user, uids), "1000:1000 (host uid 363143)");
  // Root, or a user without ranges: only id 0 exists inside.
  EXPECT_FALSE(JobUserFor({{0, 1005, 1}}, {{0, 1005, 1}}).has_value());
  EXPECT_FALSE(JobUserFor({{0, 0, 1}}, {{0, 0, 1}}).has_value());
}

TEST(JobUserTest, PodmanGetsTheProfileAndTheUser) {
  RunSpec spec;
  spec.container_name = "idlegrid-a1";
  spec.image_id = std::string(64, 'a');
  v1::Enforcement e;
  e.set_memory("rlimit");
  const std::vector<std::string> args = BuildPodmanRunArgs(spec, e, PodmanSandbox{"/tmp/p/default.json", "1000:1000"});
  auto has = [&](const std::string& flag, const std::string& value) {
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == flag && args[i + 1] == value) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("--security-opt", "seccomp=/tmp/p/default.json"));
  EXPECT_TRUE(has("--user", "1000:1000"));
  // Flags come before the image: podman stops parsing at the image.
  const auto image = std::find(args.begin(), args.end(), spec.image_id);
  EXPECT_LT(std::find(args.begin(), args.end(), "--user"), image);
}

}  // namespace
}  // namespace idlegrid::runtime
