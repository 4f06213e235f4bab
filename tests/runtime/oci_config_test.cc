// Pure tests for the runc path's config: BuildOciConfig (the OCI config.json
// for one attempt) and ConvertSeccompProfile (podman's docker-format profile
// to the OCI form). The profile tests read the real podman profile when it is
// installed, and a small inline one always.
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "common/fs.h"
#include "runtime/oci_config.h"
#include "runtime/seccomp_profile.h"

namespace idlegrid::runtime {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

Struct Parse(const std::string& json) {
  Struct s;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &s).ok()) << json;
  return s;
}

// The value at a dotted path of objects, e.g. "process.user.uid".
const Value& At(const Struct& doc, const std::string& path) {
  static const Value kMissing;
  const Struct* s = &doc;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    auto it = s->fields().find(path.substr(start, dot - start));
    if (it == s->fields().end()) return kMissing;
    if (dot == std::string::npos) return it->second;
    s = &it->second.struct_value();
    start = dot + 1;
  }
}

std::vector<std::string> Strings(const Value& v) {
  std::vector<std::string> out;
  for (const Value& item : v.list_value().values()) out.push_back(item.string_value());
  return out;
}

bool Has(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

v1::Enforcement Enforcement(const std::string& memory, const std::string& pids, const std::string& cpu) {
  v1::Enforcement e;
  e.set_memory(memory);
  e.set_pids(pids);
  e.set_cpu(cpu);
  e.set_disk("rlimit");
  return e;
}

RunSpec Spec() {
  RunSpec spec;
  spec.container_name = "idlegrid-a-1";
  spec.image_id = std::string(64, 'a');
  spec.resources.set_memory_bytes(256 << 20);
  spec.resources.set_pids(100);
  spec.resources.set_cpu(1.5);
  spec.resources.set_disk_bytes(64 << 20);
  spec.host_user_processes = 7;
  spec.mounts = {{"/data/out", "/out", false, ""}, {"/data/in.csv", "/in/data.csv", true, ""}};
  spec.env = {{"IG_VALUE", "x y"}, {"PATH", "/bin"}};
  spec.args = {"--flag", "a b"};
  return spec;
}

OciHostContext Host() {
  OciHostContext host;
  host.uid_mappings = NamespaceIdMappings(1234, {});
  host.gid_mappings = NamespaceIdMappings(2345, {});
  host.rootfs_path = "/agent/bundles/aaa/rootfs";
  host.hosts_file = "/agent/bundles/containers/idlegrid-a-1/hosts";
  host.hostname_file = "/agent/bundles/containers/idlegrid-a-1/hostname";
  return host;
}

SeccompProfile TinyProfile() {
  SeccompProfile p;
  p.default_action = "SCMP_ACT_ERRNO";
  p.default_errno_ret = 38;
  p.architectures = {"SCMP_ARCH_X86_64"};
  p.syscalls = {{{"read", "write"}, "SCMP_ACT_ALLOW", std::nullopt, {}},
                {{"personality"}, "SCMP_ACT_ALLOW", std::nullopt, {{0, 8, 0, "SCMP_CMP_EQ"}}}};
  return p;
}

image::ImageConfig Image() {
  image::ImageConfig c;
  c.entrypoint = {"/job"};
  c.cmd = {"default-arg"};
  c.env = {"PATH=/usr/bin", "LANG=C.UTF-8"};
  c.working_dir = "/work";
  return c;
}

Struct Build(const RunSpec& spec, const v1::Enforcement& e, const image::ImageConfig& image = Image()) {
  Result<std::string> json = BuildOciConfig(spec, e, image, TinyProfile(), Host());
  EXPECT_TRUE(json.ok()) << json.status().ToString();
  return json.ok() ? Parse(*json) : Struct();
}

std::map<std::string, std::pair<double, double>> Rlimits(const Struct& doc) {
  std::map<std::string, std::pair<double, double>> out;
  for (const Value& v : At(doc, "process.rlimits").list_value().values()) {
    const Struct& r = v.struct_value();
    out[r.fields().at("type").string_value()] = {r.fields().at("soft").number_value(),
                                                 r.fields().at("hard").number_value()};
  }
  return out;
}

TEST(BuildOciConfigTest, HardeningMatchesPodman) {
  const Struct doc = Build(Spec(), Enforcement("rlimit", "rlimit", ""));
  EXPECT_TRUE(At(doc, "process.noNewPrivileges").bool_value());
  EXPECT_FALSE(At(doc, "process.terminal").bool_value());
  for (const char* set : {"bounding", "effective", "inheritable", "permitted", "ambient"}) {
    const Value& caps = At(doc, std::string("process.capabilities.") + set);
    ASSERT_TRUE(caps.has_list_value()) << set;
    EXPECT_EQ(caps.list_value().values_size(), 0) << set;
  }
  EXPECT_TRUE(At(doc, "root.readonly").bool_value());
  EXPECT_EQ(At(doc, "root.path").string_value(), "/agent/bundles/aaa/rootfs");
  std::vector<std::string> namespaces;
  for (const Value& ns : At(doc, "linux.namespaces").list_value().values()) {
    namespaces.push_back(ns.struct_value().fields().at("type").string_value());
    EXPECT_EQ(ns.struct_value().fields().count("path"), 0u) << "joins an existing namespace";
  }
  EXPECT_EQ(namespaces, (std::vector<std::string>{"pid", "network", "ipc", "uts", "mount", "user"}));
  const Value& uid_map = At(doc, "linux.uidMappings").list_value().values(0);
  EXPECT_EQ(At(doc, "linux.uidMappings").list_value().values_size(), 1);
  EXPECT_EQ(uid_map.struct_value().fields().at("containerID").number_value(), 0);
  EXPECT_EQ(uid_map.struct_value().fields().at("hostID").number_value(), 1234);
  EXPECT_EQ(uid_map.struct_value().fields().at("size").number_value(), 1);
  EXPECT_EQ(At(doc, "linux.gidMappings").list_value().values(0).struct_value().fields().at("hostID").number_value(),
            2345);
  const std::vector<std::string> masked = Strings(At(doc, "linux.maskedPaths"));
  for (const char* p : {"/proc/kcore", "/proc/keys", "/sys/firmware", "/proc/acpi", "/proc/timer_list"}) {
    EXPECT_TRUE(Has(masked, p)) << p;
  }
  const std::vector<std::string> readonly = Strings(At(doc, "linux.readonlyPaths"));
  for (const char* p : {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"})
    EXPECT_TRUE(Has(readonly, p)) << p;
  EXPECT_EQ(At(doc, "linux.seccomp.defaultAction").string_value(), "SCMP_ACT_ERRNO");
  EXPECT_EQ(At(doc, "linux.seccomp.defaultErrnoRet").number_value(), 38);
  EXPECT_EQ(At(doc, "linux.seccomp.syscalls").list_value().values_size(), 2);
  EXPECT_EQ(At(doc, "process.user.uid").number_value(), 0);
  EXPECT_EQ(At(doc, "process.cwd").string_value(), "/work");
}

TEST(BuildOciConfigTest, RlimitHostGetsPodmansUlimitsAndNoCgroups) {
  const Struct doc = Build(Spec(), Enforcement("rlimit", "rlimit", ""));
  auto limits = Rlimits(doc);
  EXPECT_EQ(limits["RLIMIT_NOFILE"], std::make_pair(double{kNofileLimit}, double{kNofileLimit}));
  EXPECT_EQ(limits["RLIMIT_DATA"].first, 256 << 20);
  EXPECT_EQ(limits["RLIMIT_NPROC"], std::make_pair(107.0, 107.0));  // pids + host_user_processes
  EXPECT_EQ(limits["RLIMIT_FSIZE"].second, 64 << 20);
  EXPECT_EQ(limits.size(), 4u);
  EXPECT_EQ(doc.fields().at("linux").struct_value().fields().count("resources"), 0u);
  EXPECT_EQ(doc.fields().at("linux").struct_value().fields().count("cgroupsPath"), 0u);

  RunSpec tiny = Spec();
  tiny.resources.set_memory_bytes(1 << 20);
  EXPECT_EQ(Rlimits(Build(tiny, Enforcement("rlimit", "rlimit", "")))["RLIMIT_DATA"].first, kMinDataRlimitBytes);
}

TEST(BuildOciConfigTest, CgroupHostGetsResources) {
  const Struct doc = Build(Spec(), Enforcement("cgroup", "cgroup", "cgroup"));
  auto limits = Rlimits(doc);
  EXPECT_EQ(limits.count("RLIMIT_DATA"), 0u);
  EXPECT_EQ(limits.count("RLIMIT_NPROC"), 1u);  // as podman: set even when cgroups cap pids
  EXPECT_EQ(At(doc, "linux.resources.memory.limit").number_value(), 256 << 20);
  EXPECT_EQ(At(doc, "linux.resources.memory.swap").number_value(), 256 << 20);
  EXPECT_EQ(At(doc, "linux.resources.pids.limit").number_value(), 100);
  EXPECT_EQ(At(doc, "linux.resources.cpu.quota").number_value(), 150000);
  EXPECT_EQ(At(doc, "linux.resources.cpu.period").number_value(), 100000);
  EXPECT_EQ(At(doc, "linux.cgroupsPath").string_value(), "/idlegrid/idlegrid-a-1");
  EXPECT_FALSE(
      At(doc, "linux.resources.devices").list_value().values(0).struct_value().fields().at("allow").bool_value());
}

TEST(BuildOciConfigTest, ZeroLimitsEmitNoCaps) {
  RunSpec spec = Spec();
  spec.resources = v1::Resources();
  const Struct doc = Build(spec, Enforcement("cgroup", "cgroup", "cgroup"));
  EXPECT_EQ(Rlimits(doc).size(), 1u);  // NOFILE only
  EXPECT_EQ(doc.fields().at("linux").struct_value().fields().count("resources"), 0u);
}

struct MountView {
  std::string type, source;
  std::vector<std::string> options;
};

std::map<std::string, MountView> Mounts(const Struct& doc) {
  std::map<std::string, MountView> out;
  for (const Value& v : At(doc, "mounts").list_value().values()) {
    const auto& f = v.struct_value().fields();
    out[f.at("destination").string_value()] = {f.at("type").string_value(), f.at("source").string_value(),
                                               Strings(f.at("options"))};
  }
  return out;
}

TEST(BuildOciConfigTest, MountsMatchPodmansReadOnlyContainer) {
  auto mounts = Mounts(Build(Spec(), Enforcement("rlimit", "rlimit", "")));
  EXPECT_EQ(mounts["/tmp"].type, "tmpfs");
  // The spec gives no sizes (a coordinator older than resources.shm/tmp): 64 MiB, as before.
  for (const char* o : {"rw", "size=65536k", "mode=1777", "nosuid", "nodev"})
    EXPECT_TRUE(Has(mounts["/tmp"].options, o)) << o;
  EXPECT_TRUE(Has(mounts["/var/tmp"].options, "size=65536k"));
  EXPECT_TRUE(Has(mounts["/dev/shm"].options, "size=65536k"));
  EXPECT_EQ(mounts["/proc"].type, "proc");
  EXPECT_EQ(mounts["/sys"].type, "sysfs");
  EXPECT_TRUE(Has(mounts["/sys"].options, "ro"));
  EXPECT_EQ(mounts["/run"].type, "tmpfs");
  EXPECT_EQ(mounts["/var/tmp"].type, "tmpfs");
  EXPECT_EQ(mounts["/dev/shm"].type, "tmpfs");
  EXPECT_FALSE(Has(mounts["/dev/pts"].options, "gid=5")) << "gid 5 is not mapped in the user namespace";
  EXPECT_EQ(mounts["/etc/hosts"].source, Host().hosts_file);
  EXPECT_TRUE(Has(mounts["/etc/hosts"].options, "ro"));
  EXPECT_EQ(mounts["/out"].type, "bind");
  EXPECT_EQ(mounts["/out"].source, "/data/out");
  for (const char* o : {"rbind", "rw", "nosuid", "nodev"}) EXPECT_TRUE(Has(mounts["/out"].options, o)) << o;
  EXPECT_TRUE(Has(mounts["/in/data.csv"].options, "ro"));
  EXPECT_FALSE(Has(mounts["/in/data.csv"].options, "rw"));
}

TEST(BuildOciConfigTest, TmpfsSizesAreTheSpecs) {
  RunSpec spec = Spec();
  spec.resources.set_shm_bytes(256ull << 20);
  spec.resources.set_tmp_bytes((128ull << 20) + 1);  // a part of a KiB rounds up: never smaller than asked
  auto mounts = Mounts(Build(spec, Enforcement("cgroup", "cgroup", "cgroup")));
  EXPECT_TRUE(Has(mounts["/dev/shm"].options, "size=262144k"));
  EXPECT_FALSE(Has(mounts["/dev/shm"].options, "size=65536k"));
  for (const char* dir : {"/tmp", "/var/tmp"}) {
    EXPECT_TRUE(Has(mounts[dir].options, "size=131073k")) << dir;
    EXPECT_TRUE(Has(mounts[dir].options, "mode=1777")) << dir;
  }
  EXPECT_TRUE(Has(mounts["/dev"].options, "size=65536k")) << "/dev holds only device nodes: not the job's size";
}

TEST(BuildOciConfigTest, JobMountsComeParentsFirst) {
  RunSpec spec = Spec();
  // As the agent lists them: outputs (inside HOME here), an input, then HOME last.
  spec.mounts = {{"/s/out", "/home/job/out", false, ""},
                 {"/s/input-0", "/data/x", true, "sha256:x"},
                 {"/s/home", "/home/job", false, ""}};
  std::vector<std::string> order;
  const Struct doc = Build(spec, Enforcement("rlimit", "rlimit", ""));
  for (const Value& v : At(doc, "mounts").list_value().values()) {
    const std::string& at = v.struct_value().fields().at("destination").string_value();
    if (at == "/home/job" || at == "/home/job/out" || at == "/data/x") order.push_back(at);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"/data/x", "/home/job", "/home/job/out"}))
      << "a mount listed before its parent would be hidden by it";
}

TEST(BuildOciConfigTest, ArgvFollowsPodmansEntrypointRules) {
  image::ImageConfig image = Image();
  RunSpec spec = Spec();
  spec.args.clear();
  EXPECT_EQ(ContainerArgv(spec, image), (std::vector<std::string>{"/job", "default-arg"}));
  spec.args = {"x"};
  EXPECT_EQ(ContainerArgv(spec, image), (std::vector<std::string>{"/job", "x"}));
  spec.command = {"/other", "-c"};
  EXPECT_EQ(ContainerArgv(spec, image), (std::vector<std::string>{"/other", "-c", "x"}));
  spec.args.clear();  // an explicit entrypoint drops the image's cmd
  EXPECT_EQ(ContainerArgv(spec, image), (std::vector<std::string>{"/other", "-c"}));
  image.entrypoint = {""};
  spec.command.clear();
  EXPECT_EQ(ContainerArgv(spec, image), (std::vector<std::string>{"default-arg"}));
  image.cmd.clear();
  EXPECT_TRUE(ContainerArgv(spec, image).empty());
  EXPECT_EQ(BuildOciConfig(spec, Enforcement("rlimit", "rlimit", ""), image, TinyProfile(), Host()).status().code(),
            Code::kInvalidArgument);
}

TEST(BuildOciConfigTest, EnvLayersDefaultsImageAndJob) {
  const std::vector<std::string> env = ContainerEnv(Spec(), Image(), "idlegrid-a-1");
  EXPECT_EQ(env, (std::vector<std::string>{"PATH=/bin", "TERM=xterm", "LANG=C.UTF-8", "container=podman",
                                           "HOSTNAME=idlegrid-a-1", "IG_VALUE=x y"}));
}

TEST(BuildOciConfigTest, TheJobsHomeReplacesTheImages) {
  image::ImageConfig image = Image();
  image.env.push_back("HOME=/root");  // read-only in the container
  RunSpec spec = Spec();
  spec.env.push_back({"HOME", "/home/job"});
  const std::vector<std::string> env = ContainerEnv(spec, image, "idlegrid-a-1");
  EXPECT_EQ(std::count(env.begin(), env.end(), "HOME=/home/job"), 1);
  EXPECT_FALSE(Has(env, "HOME=/root"));
}

TEST(BuildOciConfigTest, RefusesWhatOnlyPodmanCanDo) {
  const v1::Enforcement e = Enforcement("cgroup", "cgroup", "cgroup");
  RunSpec runsc = Spec();
  runsc.runtime = "runsc";
  EXPECT_EQ(BuildOciConfig(runsc, e, Image(), TinyProfile(), Host()).status().code(), Code::kFailedPrecondition);
  RunSpec gpu = Spec();
  gpu.gpu_uuids = {"GPU-1"};
  EXPECT_EQ(BuildOciConfig(gpu, e, Image(), TinyProfile(), Host()).status().code(), Code::kFailedPrecondition);
  image::ImageConfig user = Image();
  for (const char* refused : {"1000", "nobody", "1000:1000", "0:x"}) {
    user.user = refused;  // a name, a uid without gid, or ids not mapped
    Status s = BuildOciConfig(Spec(), e, user, TinyProfile(), Host()).status();
    EXPECT_EQ(s.code(), Code::kFailedPrecondition) << refused;
    EXPECT_NE(s.message().find(std::string("\"") + refused + "\""), std::string::npos) << s.message();
  }
  for (const char* root : {"root", "0:0", ""}) {
    user.user = root;
    EXPECT_TRUE(BuildOciConfig(Spec(), e, user, TinyProfile(), Host()).ok()) << root;
  }
}

TEST(BuildOciConfigTest, SubordinateIdsMapLikeRootlessPodman) {
  const std::string subuid = "other:100000:65536\nagent:200000:65536\n1234:300000:10\nbad line\nagent:x:1\n";
  const std::vector<SubordinateRange> ranges = ParseSubordinateIds(subuid, "agent", 1234);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].start, 200000u);
  EXPECT_EQ(ranges[1].count, 10u);
  const std::vector<IdMapping> maps = NamespaceIdMappings(1234, ranges);
  ASSERT_EQ(maps.size(), 3u);
  EXPECT_EQ(maps[1].container_id, 1u);
  EXPECT_EQ(maps[1].host_id, 200000u);
  EXPECT_EQ(maps[2].container_id, 65537u);
  EXPECT_TRUE(ParseSubordinateIds(subuid, "nobody", 99).empty());

  OciHostContext host = Host();
  host.uid_mappings = maps;
  host.gid_mappings = NamespaceIdMappings(2345, ranges);
  image::ImageConfig image = Image();
  image.user = "1000:1000";
  Result<std::string> json = BuildOciConfig(Spec(), Enforcement("rlimit", "rlimit", ""), image, TinyProfile(), host);
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  const Struct doc = Parse(*json);
  EXPECT_EQ(At(doc, "process.user.uid").number_value(), 1000);
  EXPECT_EQ(At(doc, "linux.uidMappings").list_value().values_size(), 3);
  EXPECT_TRUE(Has(Mounts(doc)["/dev/pts"].options, "gid=5")) << "tty group is mapped, as under podman";
}

TEST(BuildOciConfigTest, HostileStringsStayInsideTheirJsonStrings) {
  RunSpec spec = Spec();
  spec.args = {"\"},\"x\":{\"", "tab\there", std::string("ctl\x01")};
  spec.env = {{"V", "\\\"\n"}};
  const Struct doc = Build(spec, Enforcement("rlimit", "rlimit", ""));
  EXPECT_EQ(Strings(At(doc, "process.args")),
            (std::vector<std::string>{"/job", "\"},\"x\":{\"", "tab\there", std::string("ctl\x01")}));
  EXPECT_TRUE(Has(Strings(At(doc, "process.env")), "V=\\\"\n"));
  EXPECT_EQ(doc.fields().count("x"), 0u);
}

// ---------------------------------------------------------------- seccomp

constexpr char kMiniProfile[] = R"({
  "defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38,
  "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]},
              {"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": ["SCMP_ARCH_ARM"]}],
  "syscalls": [
    {"names": ["read", "unshare"], "action": "SCMP_ACT_ALLOW", "args": [], "includes": {}, "excludes": {}},
    {"names": ["arch_prctl"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["amd64", "x32"]}},
    {"names": ["mount"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
    {"names": ["chroot"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1, "excludes": {"caps": ["CAP_SYS_CHROOT"]}},
    {"names": ["newthing"], "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "7.2"}},
    {"names": ["notonarm"], "action": "SCMP_ACT_ALLOW", "excludes": {"arches": ["arm64"]}},
    {"names": ["socket"], "action": "SCMP_ACT_ERRNO", "errnoRet": 22,
     "args": [{"index": 0, "value": 16, "valueTwo": 0, "op": "SCMP_CMP_EQ"},
              {"index": 2, "value": 4294967295, "valueTwo": 7, "op": "SCMP_CMP_MASKED_EQ"}]}
  ]})";

std::vector<std::string> AllNames(const SeccompProfile& p) {
  std::vector<std::string> out;
  for (const SeccompRule& r : p.syscalls) out.insert(out.end(), r.names.begin(), r.names.end());
  return out;
}

TEST(ConvertSeccompProfileTest, KeepsOnlyRulesForNoCapabilitiesAndThisArch) {
  Result<SeccompProfile> p = ConvertSeccompProfile(kMiniProfile, "amd64", {6, 1});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->default_action, "SCMP_ACT_ERRNO");
  EXPECT_EQ(p->default_errno_ret, 38u);
  EXPECT_EQ(p->architectures, (std::vector<std::string>{"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"}));
  EXPECT_EQ(AllNames(*p), (std::vector<std::string>{"read", "unshare", "arch_prctl", "chroot", "notonarm", "socket"}));
  const SeccompRule& socket = p->syscalls.back();
  EXPECT_EQ(socket.errno_ret, 22u);
  ASSERT_EQ(socket.args.size(), 2u);
  EXPECT_EQ(socket.args[1].value, 4294967295u);
  EXPECT_EQ(socket.args[1].value_two, 7u);
  EXPECT_EQ(socket.args[1].op, "SCMP_CMP_MASKED_EQ");

  Result<SeccompProfile> arm = ConvertSeccompProfile(kMiniProfile, "arm64", {7, 3});
  ASSERT_TRUE(arm.ok());
  EXPECT_EQ(arm->architectures, (std::vector<std::string>{"SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"}));
  EXPECT_EQ(AllNames(*arm), (std::vector<std::string>{"read", "unshare", "chroot", "newthing", "socket"}));
}

TEST(ConvertSeccompProfileTest, RejectsMalformedProfiles) {
  EXPECT_EQ(ConvertSeccompProfile("not json", "amd64", {6, 1}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ConvertSeccompProfile(R"({"syscalls": []})", "amd64", {6, 1}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ConvertSeccompProfile(R"({"defaultAction": "SCMP_ACT_ALLOW"})", "vax", {6, 1}).status().code(),
            Code::kInvalidArgument);
  Status bad =
      ConvertSeccompProfile(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["x"], "action": "ALLOW"}]})",
                            "amd64", {6, 1})
          .status();
  EXPECT_NE(bad.message().find("syscalls[0]"), std::string::npos) << bad.ToString();
  EXPECT_EQ(ConvertSeccompProfile(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["x"],
             "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 1e300, "op": "SCMP_CMP_EQ"}]}]})",
                                  "amd64", {6, 1})
                .status()
                .code(),
            Code::kInvalidArgument);
}

TEST(ConvertSeccompProfileTest, ParsesKernelReleases) {
  EXPECT_EQ(ParseKernelRelease("6.1.0-18-amd64")->minor, 1);
  EXPECT_EQ(ParseKernelRelease("5.14")->major, 5);
  EXPECT_FALSE(ParseKernelRelease("linux").has_value());
}

// The real profile podman uses, when installed: what podman hands runc for
// `--cap-drop all` on this host (read from podman's own config.json once).
TEST(ConvertSeccompProfileTest, PodmansProfileForNoCapabilities) {
  Result<std::string> text = ReadFile(kPodmanSeccompProfilePath);
  if (!text.ok()) GTEST_SKIP() << kPodmanSeccompProfilePath << " is not installed (golang-github-containers-common)";
  if (HostGoArch() != "amd64") GTEST_SKIP() << "the expectations below are for amd64";
  Result<SeccompProfile> p = ConvertSeccompProfile(*text, "amd64", {6, 1});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->default_errno_ret, 38u);
  EXPECT_EQ(p->architectures, (std::vector<std::string>{"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"}));
  const std::vector<std::string> names = AllNames(*p);
  // Allowed without any capability (the big list), denied without them.
  for (const char* allowed : {"unshare", "clone", "read", "arch_prctl", "modify_ldt", "socket", "personality"}) {
    EXPECT_TRUE(Has(names, allowed)) << allowed;
  }
  for (const SeccompRule& r : p->syscalls) {
    if (Has(r.names, "bpf") || Has(r.names, "chroot") || Has(r.names, "init_module")) {
      EXPECT_EQ(r.action, "SCMP_ACT_ERRNO") << r.names[0];
      EXPECT_EQ(r.errno_ret, 1u);
    }
    EXPECT_FALSE(Has(r.names, "sync_file_range2")) << "ppc64le only";
    EXPECT_FALSE(Has(r.names, "s390_runtime_instr")) << "s390 only";
  }
  // podman 4.3 hands runc exactly 22 rules for `--cap-drop all` on amd64.
  EXPECT_EQ(p->syscalls.size(), 22u);
}

}  // namespace
}  // namespace idlegrid::runtime
