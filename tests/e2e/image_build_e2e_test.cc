// End to end: `idlegrid image build` with the real podman and a real
// coordinator. A FROM scratch image around a static program is built, pushed
// and run by an agent from the printed reference; a RUN step reaches the
// network only with --allow-network. Both leave no local image and no
// archive behind.
#include <arpa/inet.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/unique_fd.h"
#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

// Connects to argv[1]:argv[2] over TCP, the way a RUN step fetching something
// would; perror's words are what the build's error shows.
constexpr char kConnectProbe[] = R"(#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
int main(int argc, char** argv) {
  if (argc != 3) return 2;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons((unsigned short)atoi(argv[2]));
  if (s < 0 || inet_pton(AF_INET, argv[1], &a.sin_addr) != 1) return 3;
  if (connect(s, (struct sockaddr*)&a, sizeof a) != 0) { perror("connect"); return 1; }
  printf("connected to %s:%s\n", argv[1], argv[2]);
  return 0;
}
)";

// An IPv4 address of this host other than loopback: a RUN step with a
// network reaches it; "" when there is none.
std::string HostAddress() {
  struct ifaddrs* all = nullptr;
  if (::getifaddrs(&all) != 0) return "";
  std::string found;
  for (struct ifaddrs* i = all; i && found.empty(); i = i->ifa_next) {
    const bool up = (i->ifa_flags & IFF_UP) && !(i->ifa_flags & IFF_LOOPBACK);
    if (!up || !i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &reinterpret_cast<struct sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof text);
    found = text;
  }
  ::freeifaddrs(all);
  return found;
}

class ImageBuildE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(grid_->StartCoordinator().ok());
    context_ = grid_->root + "/context";
    tmp_ = grid_->root + "/tmp";
    ASSERT_TRUE(MakeDirs(context_).ok());
    ASSERT_TRUE(MakeDirs(tmp_, 0700).ok());
  }

  // A static program in the build context, as `name`.
  void CompileStatic(const std::string& source, const std::string& name) {
    auto cc = RunCommand({"gcc", "-static", "-O2", "-o", context_ + "/" + name, source});
    ASSERT_EQ(cc.exit_code, 0) << "gcc -static (libc.a) is needed: " << cc.err;
  }
  void WriteContext(const std::string& name, const std::string& text) { std::ofstream(context_ + "/" + name) << text; }

  // `idlegrid image build CONTEXT ARGS` with its temp files under tmp_.
  CmdResult Build(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"env", "TMPDIR=" + tmp_, grid_->binary(), "image", "build", context_};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--config", grid_->client_yaml});
    return RunCommand(argv);
  }

  // Nothing of a build is left on this host: no archive, no image named `name`.
  void ExpectNothingLeft(const std::string& name) {
    std::error_code ec;
    EXPECT_TRUE(std::filesystem::is_empty(tmp_, ec)) << "the temp archive was left in " << tmp_;
    auto images = RunCommand({"podman", "images", "--format", "{{.Repository}}:{{.Tag}}"});
    ASSERT_EQ(images.exit_code, 0) << images.err;
    EXPECT_EQ(images.out.find("localhost/" + name + ":"), std::string::npos) << images.out;
  }

  std::unique_ptr<Grid> grid_;
  std::string context_, tmp_;
};

TEST_F(ImageBuildE2E, BuildsPushesAndTheJobRunsFromThePrintedReference) {
  Status st = grid_->StartAgent(1);
  ASSERT_TRUE(st.ok()) << st.message();
  CompileStatic(std::string(IDLEGRID_SOURCE_DIR) + "/tests/e2e/testprog.c", "sim");
  WriteContext("Containerfile", "FROM scratch\nCOPY sim /sim\nENTRYPOINT [\"/sim\"]\n");
  const std::string name = "igtest-built-" + std::to_string(::getpid());

  auto built = Build({"--name", name});
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;
  const std::string reference = Trim(built.out);
  ASSERT_EQ(reference.rfind(name + "@sha256:", 0), 0u) << "one line, NAME@DIGEST: " << built.out;
  EXPECT_EQ(reference.size(), name.size() + 1 + 7 + 64) << reference;
  ExpectNothingLeft(name);

  const std::string manifest =
      grid_->WriteFile("built.yaml", "apiVersion: idlegrid/v1\nname: built\nimage: " + reference +
                                         "\ncommand: [\"/sim\"]\nargs: [\"write\", \"built-by-image-build\"]\n"
                                         "resources:\n  cpu: 1\n  memory: 256Mi\n  pids: 64\noutput: /out\n");
  auto run = grid_->Cli({"submit", manifest, "--wait", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  v1::Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(run.out, &job).ok()) << run.out;
  ASSERT_EQ(job.state(), v1::SUCCEEDED) << run.out;
  const std::string out_dir = grid_->root + "/fetched";
  auto fetched = grid_->Cli({"fetch", job.id(), out_dir});
  ASSERT_EQ(fetched.exit_code, 0) << fetched.err;
  auto hello = ReadFile(out_dir + "/task-0/hello.txt");
  ASSERT_TRUE(hello.ok()) << hello.status().message();
  EXPECT_EQ(*hello, "built-by-image-build from task 0\n");
}

// The same Containerfile fails without --allow-network (saying to use it) and
// reaches a listener of ours with it.
TEST_F(ImageBuildE2E, RunStepsReachTheNetworkOnlyWithAllowNetwork) {
  const std::string host = HostAddress();
  if (host.empty()) GTEST_SKIP() << "no non-loopback IPv4 address here for a RUN step to reach";
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  struct sockaddr_in any = {};
  any.sin_family = AF_INET;
  socklen_t len = sizeof any;
  ASSERT_EQ(::bind(listener.get(), reinterpret_cast<struct sockaddr*>(&any), sizeof any), 0);
  ASSERT_EQ(::listen(listener.get(), 4), 0);
  ASSERT_EQ(::getsockname(listener.get(), reinterpret_cast<struct sockaddr*>(&any), &len), 0);
  const std::string port = std::to_string(ntohs(any.sin_port));

  const std::string source = grid_->root + "/probe.c";
  std::ofstream(source) << kConnectProbe;
  CompileStatic(source, "probe");
  WriteContext("Containerfile",
               "FROM scratch\nCOPY probe /probe\nRUN [\"/probe\", \"" + host + "\", \"" + port + "\"]\n");
  const std::string name = "igtest-net-" + std::to_string(::getpid());
  struct pollfd waiting = {listener.get(), POLLIN, 0};

  auto refused = Build({"--name", name});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE(refused.err.find("podman build failed"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("connect: Network is unreachable"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--allow-network"), std::string::npos) << refused.err;
  EXPECT_EQ(::poll(&waiting, 1, 0), 0) << "a RUN step without --allow-network reached " << host << ":" << port;
  ExpectNothingLeft(name);

  auto allowed = Build({"--name", name, "--allow-network", "--json"});
  ASSERT_EQ(allowed.exit_code, 0) << allowed.out << allowed.err;
  ASSERT_EQ(::poll(&waiting, 1, 10000), 1) << "the RUN step never connected";
  UniqueFd accepted(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  EXPECT_GE(accepted.get(), 0);
  v1::PushImageResponse pushed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(allowed.out, &pushed).ok()) << allowed.out;
  EXPECT_EQ(pushed.image().rfind("sha256:", 0), 0u) << allowed.out;
  EXPECT_FALSE(pushed.config_digest().empty()) << allowed.out;
  ExpectNothingLeft(name);
}

}  // namespace
}  // namespace idlegrid::testing
