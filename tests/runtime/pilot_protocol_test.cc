// The pure parts of the pilot path: who may share a sandbox, the key of the
// sandbox, and the frames exchanged with the pilot (whose replies are
// untrusted: it runs inside the job's sandbox).
#include "runtime/pilot_protocol.h"

#include <gtest/gtest.h>

namespace idlegrid::runtime {
namespace {

RunSpec Spec() {
  RunSpec s;
  s.container_name = "idlegrid-a1";
  s.image_id = std::string(64, 'a');
  s.sandbox_group = "job-1";
  s.mounts = {{"/data/a1/out", "/out", false, ""}, {"/data/a1/input-0", "/in/x", true, "sha256:1"}};
  s.resources.set_cpu(0.25);
  return s;
}

TEST(PilotEligibleTest, NeedsAGroupRuncNoGpusAndKnownReadOnlyContents) {
  EXPECT_TRUE(PilotEligible(Spec()).ok());
  RunSpec s = Spec();
  s.sandbox_group.clear();
  EXPECT_FALSE(PilotEligible(s).ok());
  s = Spec();
  s.runtime = "runsc";
  EXPECT_FALSE(PilotEligible(s).ok());
  s = Spec();
  s.gpu_uuids = {"GPU-1"};
  EXPECT_FALSE(PilotEligible(s).ok());
  s = Spec();
  s.mounts[1].content_digest.clear();
  EXPECT_NE(PilotEligible(s).message().find("/in/x"), std::string::npos);
  s = Spec();
  s.mounts.push_back({"/x", "/.idlegrid/pilot", true, "sha256:2"});
  EXPECT_FALSE(PilotEligible(s).ok());
}

TEST(PilotKeyTest, SameSandboxSameKeyAnyDifferenceAnotherKey) {
  RunSpec other_task = Spec();
  other_task.container_name = "idlegrid-a2";
  other_task.mounts[0].host_path = "/data/a2/out";
  other_task.mounts[1].host_path = "/data/a2/input-0";
  other_task.env = {{"IDLEGRID_TASK_INDEX", "7"}};
  other_task.args = {"x"};
  EXPECT_EQ(PilotKey(Spec()), PilotKey(other_task)) << "what differs per task does not split the pool";
  std::vector<RunSpec> different(6, Spec());
  different[0].sandbox_group = "job-2";
  different[1].image_id = std::string(64, 'b');
  different[2].resources.set_memory_bytes(1);
  different[3].mounts[0].container_path = "/out2";
  different[4].mounts[1].content_digest = "sha256:9";
  different[5].mounts.pop_back();
  for (size_t i = 0; i < different.size(); ++i) EXPECT_NE(PilotKey(Spec()), PilotKey(different[i])) << i;
  // Length-prefixed: moving bytes between fields changes the key.
  RunSpec a = Spec(), b = Spec();
  a.sandbox_group = "ab";
  a.image_id = "c";
  b.sandbox_group = "a";
  b.image_id = "bc";
  EXPECT_NE(PilotKey(a), PilotKey(b));
}

TEST(PilotRequestTest, EncodesFramedNulSeparatedFields) {
  auto frame = EncodePilotRequest("/w", {"/bin/x", "a b"}, {"A=1"});
  ASSERT_TRUE(frame.ok()) << frame.status().ToString();
  const std::string payload = std::string(
      "run\0/w\0"
      "2\0/bin/x\0a b\0"
      "1\0A=1\0",
      26);
  ASSERT_EQ(frame->size(), 4 + payload.size());
  EXPECT_EQ(static_cast<unsigned char>((*frame)[0]), payload.size());
  EXPECT_EQ((*frame)[1], 0);
  EXPECT_EQ(frame->substr(4), payload);
}

TEST(PilotRequestTest, RefusesNulBytesEmptyArgvAndHugeFrames) {
  EXPECT_EQ(EncodePilotRequest("/", {}, {}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(EncodePilotRequest("/", {std::string("a\0b", 3)}, {}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(EncodePilotRequest("/", {"x"}, {std::string(kMaxPilotFrame, 'e')}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(EncodePilotRequest("/", {"x"}, std::vector<std::string>(kMaxPilotFrame / 64, "A=1")).status().code(),
            Code::kInvalidArgument);
}

std::string Frame(const std::string& payload) {
  std::string f(4, '\0');
  for (int i = 0; i < 4; ++i) f[i] = static_cast<char>((payload.size() >> (8 * i)) & 0xff);
  return f + payload;
}

TEST(PilotReplyReaderTest, ReadsTheThreeKindsEvenByteByByte) {
  const std::string exit =
      Frame(std::string("exit\0"
                        "42\0",
                        8));
  PilotReplyReader reader;
  std::optional<Result<PilotReply>> got;
  for (size_t i = 0; i < exit.size(); ++i) {
    EXPECT_FALSE(got.has_value()) << "complete before byte " << i;
    got = reader.Feed(exit.substr(i, 1));
  }
  ASSERT_TRUE(got && got->ok());
  EXPECT_EQ((*got)->kind, PilotReply::Kind::kExit);
  EXPECT_EQ((*got)->exit_code, 42);

  EXPECT_FALSE((*got)->cpu_usec.has_value()) << "a pilot that does not say measured nothing";

  // The task's CPU time, as the pilot measured it.
  auto timed =
      PilotReplyReader().Feed(Frame(std::string("exit\0"
                                                "0\0"
                                                "1250000\0",
                                                15)));
  ASSERT_TRUE(timed && timed->ok()) << (timed ? timed->status().ToString() : "incomplete");
  EXPECT_EQ((*timed)->exit_code, 0);
  ASSERT_TRUE((*timed)->cpu_usec.has_value());
  EXPECT_EQ(*(*timed)->cpu_usec, 1'250'000u);

  auto failed = PilotReplyReader().Feed(Frame(std::string("execfail\0no such file\0", 22)));
  ASSERT_TRUE(failed && failed->ok());
  EXPECT_EQ((*failed)->kind, PilotReply::Kind::kExecFailed);
  EXPECT_EQ((*failed)->text, "no such file");
  auto unclean = PilotReplyReader().Feed(Frame(std::string("unclean\0/tmp\0", 13)));
  ASSERT_TRUE(unclean && unclean->ok());
  EXPECT_EQ((*unclean)->kind, PilotReply::Kind::kUnclean);
}

TEST(PilotReplyReaderTest, AnythingButOneWellFormedFrameIsDataLoss) {
  const std::vector<std::string> bad = {
      Frame(std::string("exit\0"
                        "256\0",
                        9)),
      Frame(std::string("exit\0-1\0", 8)),
      Frame(std::string("exit\0"
                        "4x\0",
                        8)),
      Frame(std::string("exit\0", 5)),
      Frame(std::string("boom\0"
                        "1\0",
                        7)),
      Frame(std::string("exit\0"
                        "1\0extra\0",
                        14)),
      Frame(std::string("exit\0"
                        "1",
                        6)),
      Frame(std::string("exit\0"
                        "1\0",
                        7)) +
          "x",
      std::string("\xff\xff\xff\x7f", 4) + "exit",
      // CPU time: only on "exit", a plain decimal, not past kMaxPilotCpuUsec.
      Frame(std::string("exit\0"
                        "0\0"
                        "-5\0",
                        10)),
      Frame(std::string("exit\0"
                        "0\0\0",
                        8)),
      Frame(std::string("exit\0"
                        "0\0"
                        "12x\0",
                        11)),
      Frame(std::string("exit\0"
                        "0\0"
                        "9999999999999999999\0",
                        27)),
      Frame(std::string("execfail\0no\0"
                        "5\0",
                        14)),
      Frame(std::string("exit\0"
                        "0\0"
                        "1\0"
                        "2\0",
                        11)),
  };
  for (const std::string& bytes : bad) {
    auto got = PilotReplyReader().Feed(bytes);
    ASSERT_TRUE(got.has_value()) << testing::PrintToString(bytes);
    EXPECT_EQ(got->status().code(), Code::kDataLoss) << testing::PrintToString(bytes);
  }
}

}  // namespace
}  // namespace idlegrid::runtime
