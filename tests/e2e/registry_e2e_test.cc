// End to end with images from an OCI registry: a real registry
// (docker-registry over TLS with its own self-signed CA, e2e/registry_support.h)
// holding the e2e test image, a real coordinator resolving references through
// skopeo, and real agents pulling by digest as unprivileged users.
#include <gtest/gtest.h>
#include <google/protobuf/util/json_util.h>

#include <fstream>

#include "common/digest.h"
#include "common/fs.h"
#include "e2e/harness.h"
#include "e2e/registry_support.h"
#include "image/oci_archive.h"
#include "image/oci_builder.h"

namespace idlegrid::testing {
namespace {

bool Ended(const v1::Job& j) {
  return j.tasks_size() > 0 && (j.state() == v1::SUCCEEDED || j.state() == v1::FAILED || j.state() == v1::CANCELLED);
}

bool Mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class RegistryE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
    if (std::string why = RegistryToolsMissing(); !why.empty()) GTEST_SKIP() << why;
    grid_ = std::make_unique<Grid>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    auto registry = TestRegistry::Start(grid_->root);
    ASSERT_TRUE(registry.ok()) << registry.status().ToString();
    registry_ = std::move(*registry);
    archive_ = Grid::TestImageArchive();
    ASSERT_FALSE(archive_.empty());
    auto info = image::InspectOciArchive(archive_);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    config_ = info->config_digest;
    auto pushed = registry_->Push(archive_, "igtest/prog:v1");
    ASSERT_TRUE(pushed.ok()) << pushed.status().ToString() << "\n" << registry_->Log();
    digest_ = *pushed;
    ASSERT_EQ(digest_, info->manifest_digest);
  }

  std::string Host() const { return registry_->host(); }
  std::string ByDigest() const { return Host() + "/igtest/prog@" + digest_; }

  // A coordinator that allows this registry and trusts its CA, plus `extra`.
  void StartCoordinator(std::vector<std::string> extra = {}, bool allow = true) {
    std::vector<std::string> flags = {"--registry-ca", Host() + "=" + registry_->ca_file()};
    if (allow) flags.insert(flags.end(), {"--allow-registry", Host()});
    flags.insert(flags.end(), extra.begin(), extra.end());
    Status st = grid_->StartCoordinator(flags);
    ASSERT_TRUE(st.ok()) << st.message();
  }
  // Agent n with the owner's policy `policy_yaml` (its own file, which the
  // test may rewrite) and this registry's CA.
  void StartAgent(int n, const std::string& policy_yaml) {
    const std::string policy = WritePolicy(n, policy_yaml);
    Status st = grid_->StartAgent(n, {"--policy", policy, "--registry-ca", Host() + "=" + registry_->ca_file()});
    ASSERT_TRUE(st.ok()) << st.message();
  }
  std::string WritePolicy(int n, const std::string& yaml) {
    const std::string path = grid_->root + "/policy-agent" + std::to_string(n) + ".yaml";
    EXPECT_TRUE(WriteFileAtomic(path, yaml, 0644).ok());
    return path;
  }
  std::string AllowThisRegistry() const { return "allowedRegistries: [\"" + Host() + "\"]\n"; }

  std::string Manifest(const std::string& name, const std::string& image, const std::string& args,
                       const std::string& extra = "") {
    return grid_->WriteFile(name + ".yaml", "apiVersion: idlegrid/v1\nname: " + name + "\nimage: " + image +
                                                "\ncommand: [\"/sim\"]\nargs: [" + args +
                                                "]\nresources:\n  cpu: 1\n  memory: 256Mi\n  pids: 64\noutput: /out\n" +
                                                extra);
  }
  std::string Submit(const std::string& manifest) {
    auto r = grid_->Cli({"submit", manifest});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return Trim(r.out);
  }
  v1::Job StatusJson(const std::string& job_id) {
    auto r = grid_->Cli({"status", job_id, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    v1::Job job;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &job).ok()) << r.out;
    return job;
  }
  int JobCount() {
    auto r = grid_->Cli({"jobs", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    v1::ListJobsResponse jobs;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &jobs).ok()) << r.out;
    return jobs.jobs_size();
  }
  // Whether agent n's image cache marks `digest` as verified and loaded.
  bool Cached(int n, const std::string& digest) {
    return PathExists(grid_->AgentDataDir(n) + "/state/images/" + DigestHex(digest));
  }
  // What agent n's image cache holds besides markers (archives mid-fetch or
  // left by a failure); a marker's name has no dot.
  std::vector<std::string> CacheLeftovers(int n) {
    std::vector<std::string> out;
    for (const auto& f : RegularFilesUnder(grid_->AgentDataDir(n) + "/state/images")) {
      if (f.find('.') != std::string::npos) out.push_back(f);
    }
    return out;
  }
  // A small image that is not the test program (no /sim), for tags moved
  // and manifests deleted.
  std::string OtherImage() {
    auto built = image::BuildOciArchive({{"/note", "not the test program\n", 0644}}, {"/note"}, "igtest/other:v1",
                                        grid_->root + "/other.tar");
    EXPECT_TRUE(built.ok()) << built.status().ToString();
    return built.ok() ? built->archive_path : "";
  }

  std::unique_ptr<Grid> grid_;
  std::unique_ptr<TestRegistry> registry_;
  std::string archive_, digest_, config_;
};

TEST_F(RegistryE2E, ADigestFromTheRegistryRunsEndToEndAndIsCached) {
  StartCoordinator();
  StartAgent(1, AllowThisRegistry());
  auto r = grid_->Cli({"submit", Manifest("pulled", ByDigest(), "\"write\", \"pulled\""), "--wait", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  v1::Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &job).ok()) << r.out;
  ASSERT_EQ(job.state(), v1::SUCCEEDED) << r.out;
  EXPECT_EQ(job.spec().image(), ByDigest());
  EXPECT_EQ(job.spec().registry_image().registry(), Host());
  EXPECT_EQ(job.spec().registry_image().requested(), ByDigest());
  EXPECT_EQ(job.spec().registry_image().config_digest(), config_);
  EXPECT_EQ(job.tasks(0).attempts(0).node_id(), grid_->node_ids[0]);

  const std::string out_dir = grid_->root + "/fetched";
  auto f = grid_->Cli({"fetch", job.id(), out_dir});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  auto hello = ReadFile(out_dir + "/task-0/hello.txt");
  ASSERT_TRUE(hello.ok());
  EXPECT_EQ(*hello, "pulled from task 0\n");
  // Cached like a pushed image: a marker under its manifest digest, the
  // pulled archive gone.
  EXPECT_TRUE(Cached(1, digest_));
  EXPECT_TRUE(CacheLeftovers(1).empty());

  // The next job of that image runs from the cache: pulled and loaded once.
  auto again = grid_->Cli({"submit", Manifest("cached", ByDigest(), "\"write\", \"cached\""), "--wait", "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  v1::Job second;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(again.out, &second).ok()) << again.out;
  EXPECT_EQ(second.state(), v1::SUCCEEDED) << again.out;
  EXPECT_EQ(second.tasks(0).attempts(0).node_id(), grid_->node_ids[0]);
  auto agent_log = ReadFile(grid_->root + "/agent1.err");
  ASSERT_TRUE(agent_log.ok());
  size_t loads = 0;
  const std::string loaded = "image " + digest_ + " verified and loaded";
  for (size_t at = agent_log->find(loaded); at != std::string::npos; at = agent_log->find(loaded, at + 1)) ++loads;
  EXPECT_EQ(loads, 1u) << *agent_log;
}

TEST_F(RegistryE2E, ARegistryNotOnTheOperatorsListIsRefusedAtSubmit) {
  StartCoordinator({"--allow-registry", "ghcr.io"}, /*allow=*/false);
  auto r = grid_->Cli({"submit", Manifest("refused", ByDigest(), "\"write\", \"x\"")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(Mentions(r.err, "registry " + Host() + " ")) << r.err;
  EXPECT_TRUE(Mentions(r.err, "is not on this coordinator's allow-list")) << r.err;
  EXPECT_TRUE(Mentions(r.err, "--allow-registry " + Host())) << r.err;
  EXPECT_EQ(JobCount(), 0);
}

TEST_F(RegistryE2E, AnAgentWhoseOwnerDoesNotAllowTheRegistryNeverRunsItAndStatusSaysWhy) {
  StartCoordinator({"--heartbeat-interval-ms", "1000"});
  StartAgent(1, "acceptJobs: true\n");
  const std::string job_id = Submit(Manifest("owner", ByDigest(), "\"write\", \"owner\""));
  const std::string why = "registry " + Host() + " not in the owner's allowedRegistries";
  auto waiting = grid_->WaitJob(job_id, [&](const v1::Job& j) {
    return Ended(j) || (j.tasks_size() > 0 && Mentions(j.tasks(0).message(), why));
  });
  ASSERT_TRUE(waiting.ok()) << waiting.status().ToString();
  ASSERT_EQ(waiting->state(), v1::QUEUED);
  EXPECT_EQ(waiting->tasks(0).attempts_size(), 0);  // never offered to the node
  auto status = grid_->Cli({"status", job_id});
  EXPECT_TRUE(Mentions(status.out, why)) << status.out;
  auto explain = grid_->Cli({"status", job_id, "--explain"});
  EXPECT_TRUE(Mentions(explain.out, "owner-policy")) << explain.out;
  EXPECT_TRUE(Mentions(explain.out, why)) << explain.out;
  EXPECT_FALSE(Cached(1, digest_));

  // The setting the message names is the one that lets it run.
  WritePolicy(1, "acceptJobs: true\n" + AllowThisRegistry());
  auto done = grid_->WaitJob(job_id, Ended);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
  EXPECT_EQ(done->tasks(0).attempts_size(), 1);
}

TEST_F(RegistryE2E, TagsAreRefusedByDefaultAndWhenAllowedResolvedOnceAtSubmit) {
  StartCoordinator();
  const std::string by_tag = Host() + "/igtest/prog:v1";
  auto refused = grid_->Cli({"submit", Manifest("tag", by_tag, "\"write\", \"tag\"")});
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_TRUE(Mentions(refused.err, "names a tag")) << refused.err;
  EXPECT_TRUE(Mentions(refused.err, Host() + "/igtest/prog@sha256:<64 hex>")) << refused.err;
  EXPECT_TRUE(Mentions(refused.err, "--allow-registry-tags")) << refused.err;
  EXPECT_EQ(JobCount(), 0);

  grid_->StopCoordinator();
  StartCoordinator({"--allow-registry-tags"});
  const std::string job_id = Submit(Manifest("tag", by_tag, "\"write\", \"tag\""));
  v1::Job job = StatusJson(job_id);
  EXPECT_EQ(job.spec().image(), ByDigest());
  EXPECT_EQ(job.spec().registry_image().requested(), by_tag);
  EXPECT_EQ(job.spec().registry_image().config_digest(), config_);
  auto text = grid_->Cli({"status", job_id});
  EXPECT_TRUE(Mentions(text.out, "image " + by_tag + " resolved at submit to " + ByDigest())) << text.out;

  // The tag moves to another image before any node runs the job: the job
  // still runs the digest it was resolved to.
  const std::string other = OtherImage();
  ASSERT_FALSE(other.empty());
  auto moved = registry_->Push(other, "igtest/prog:v1");
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  ASSERT_NE(*moved, digest_);
  StartAgent(1, AllowThisRegistry());
  auto done = grid_->WaitJob(job_id, Ended);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->state(), v1::SUCCEEDED) << done->DebugString();
  EXPECT_TRUE(Cached(1, digest_));
  EXPECT_FALSE(Cached(1, *moved));
}

TEST_F(RegistryE2E, ADigestNotInTheRegistryFailsWithItsReasonAndLosesNothing) {
  StartCoordinator();
  // At submit: refused, naming the registry and the digest; no job stored.
  const std::string missing = "sha256:" + std::string(64, '0');
  auto r = grid_->Cli({"submit", Manifest("missing", Host() + "/igtest/prog@" + missing, "\"write\", \"x\"")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(Mentions(r.err, "registry " + Host())) << r.err;
  EXPECT_TRUE(Mentions(r.err, missing)) << r.err;
  EXPECT_TRUE(Mentions(r.err, "no such image")) << r.err;
  EXPECT_EQ(JobCount(), 0);

  // Deleted from the registry after submit: the attempt fails with the
  // registry's reason, and nothing of it stays on the node.
  auto gone = registry_->Push(OtherImage(), "igtest/gone:v1");
  ASSERT_TRUE(gone.ok()) << gone.status().ToString();
  const std::string gone_job =
      Submit(Manifest("gone", Host() + "/igtest/gone@" + *gone, "\"write\", \"x\"", "retries: 0\n"));
  ASSERT_TRUE(registry_->Delete("igtest/gone", *gone).ok());
  StartAgent(1, AllowThisRegistry());
  auto failed = grid_->WaitJob(gone_job, Ended);
  ASSERT_TRUE(failed.ok()) << failed.status().ToString();
  ASSERT_EQ(failed->state(), v1::FAILED) << failed->DebugString();
  EXPECT_EQ(failed->tasks(0).failure_reason(), v1::PLATFORM_FAILURE);
  const std::string& message = failed->tasks(0).message();
  EXPECT_TRUE(Mentions(message, "registry " + Host())) << message;
  EXPECT_TRUE(Mentions(message, *gone)) << message;
  EXPECT_TRUE(Mentions(message, "no such image")) << message;
  EXPECT_FALSE(Cached(1, *gone));
  EXPECT_TRUE(CacheLeftovers(1).empty());
  EXPECT_TRUE(RegularFilesUnder(grid_->AgentDataDir(1) + "/state/attempts").empty());

  // The node lost nothing either: the next job runs there.
  auto next = grid_->Cli({"submit", Manifest("next", ByDigest(), "\"write\", \"next\""), "--wait", "--json"});
  ASSERT_EQ(next.exit_code, 0) << next.out << next.err;
  v1::Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(next.out, &job).ok()) << next.out;
  EXPECT_EQ(job.state(), v1::SUCCEEDED);
  EXPECT_EQ(job.tasks(0).attempts(0).node_id(), grid_->node_ids[0]);
}

// docs/workflows.md, "Resumption": a step whose image is a registry tag is
// cached by the digest the tag names when the step is ready, not by the tag:
// resubmitted unchanged it is reused; once the tag has moved it runs again,
// pinned to the new digest.
TEST_F(RegistryE2E, AWorkflowStepNamedByTagIsCachedByTheDigestTheTagNames) {
  StartCoordinator({"--allow-registry-tags"});
  StartAgent(1, AllowThisRegistry());
  const std::string by_tag = Host() + "/igtest/prog:v1";
  const std::string wf_yaml = grid_->WriteFile(
      "wf.yaml", "apiVersion: idlegrid/v1\nkind: Workflow\nname: tagged\nsteps:\n  - name: only\n    image: " + by_tag +
                     "\n    command: [\"/sim\"]\n    args: [write, tagged]\n"
                     "    resources: {cpu: 1, memory: 256Mi, pids: 64}\n");
  auto step_of = [&](int want_exit) {
    auto r = grid_->Cli({"submit", wf_yaml, "--wait", "--json"});
    EXPECT_EQ(r.exit_code, want_exit) << r.out << r.err;
    v1::Workflow wf;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &wf).ok()) << r.out;
    return wf.steps_size() == 1 ? wf.steps(0) : v1::WorkflowStep();
  };
  const v1::WorkflowStep first = step_of(0);
  ASSERT_FALSE(first.job_id().empty());
  EXPECT_FALSE(first.cached());
  EXPECT_EQ(StatusJson(first.job_id()).spec().image(), ByDigest());

  const v1::WorkflowStep again = step_of(0);
  EXPECT_TRUE(again.cached());
  EXPECT_EQ(again.job_id(), first.job_id());
  EXPECT_EQ(again.cache_key(), first.cache_key());

  // The tag moves to another build of the same program (one more file).
  const std::string sim = grid_->root + "/sim-rebuilt";
  auto cc = runtime::RunCommand(
      {"gcc", "-static", "-O2", "-o", sim, std::string(IDLEGRID_SOURCE_DIR) + "/tests/e2e/testprog.c"},
      std::chrono::seconds(120));
  ASSERT_TRUE(cc.ok() && cc->exit_code == 0) << (cc.ok() ? cc->stderr_text : cc.status().ToString());
  auto program = ReadFile(sim);
  ASSERT_TRUE(program.ok());
  auto rebuilt = image::BuildOciArchive({{"/sim", *program, 0755}, {"/rebuilt", "yes\n", 0644}}, {"/sim"},
                                        "igtest/prog:v2", grid_->root + "/rebuilt.tar");
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
  auto moved = registry_->Push(rebuilt->archive_path, "igtest/prog:v1");
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  ASSERT_NE(*moved, digest_);
  const v1::WorkflowStep rerun = step_of(0);
  EXPECT_FALSE(rerun.cached());
  EXPECT_NE(rerun.cache_key(), first.cache_key());
  ASSERT_FALSE(rerun.job_id().empty());
  EXPECT_NE(rerun.job_id(), first.job_id());
  EXPECT_EQ(StatusJson(rerun.job_id()).spec().image(), Host() + "/igtest/prog@" + *moved);
}

}  // namespace
}  // namespace idlegrid::testing
