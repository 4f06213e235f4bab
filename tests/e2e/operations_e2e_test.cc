// Operating a coordinator (docs/operations.md) with real processes: the lines
// it hands out (agent-join.txt, login.txt) at the address it advertises,
// `idlegrid login` from them, the health probes, and a backup taken while it
// runs, restored into a fresh data directory after a kill -9, that takes its
// agents back and finishes its jobs.
#include <gtest/gtest.h>

#include <time.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/fs.h"
#include "e2e/harness.h"

namespace idlegrid::testing {
namespace {

bool Ended(const v1::Job& j) {
  return j.tasks_size() > 0 && (j.state() == v1::SUCCEEDED || j.state() == v1::FAILED || j.state() == v1::CANCELLED);
}

std::string FirstLine(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return "";
  for (size_t at = 0; at < text->size();) {
    size_t end = text->find('\n', at);
    std::string line = text->substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (!line.empty() && line[0] != '#') return line;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return "";
}

TEST(Operations, TheHandedOutLinesLogAUserInAndWrongPinsOrTokensWriteNothing) {
  Grid grid("OpsLogin");
  ASSERT_TRUE(grid.StartCoordinator().ok());
  const std::string url = "https://" + grid.grpc_addr;
  const std::string join = FirstLine(grid.coordinator_dir + "/agent-join.txt");
  EXPECT_EQ(join, "idlegrid agent join " + url + " --token " + grid.join_token + " --ca-hash " + grid.ca_hash);
  const std::string login = FirstLine(grid.coordinator_dir + "/login.txt");
  EXPECT_EQ(login, "idlegrid login " + url + " --ca-hash " + grid.ca_hash + " --token TOKEN");

  ASSERT_EQ(grid.Cli({"account", "create", "alice", "--role", "requester"}).exit_code, 0);
  auto minted = grid.Cli({"token", "create", "--account", "alice"});
  ASSERT_EQ(minted.exit_code, 0) << minted.err;
  const std::string token = Trim(minted.out);

  const std::string config = grid.root + "/alice/config.yaml";
  // A CA hash that is not the coordinator's: nothing written.
  auto wrong_pin = RunCommand({grid.binary(), "login", url, "--ca-hash", "sha256:" + std::string(64, '0'), "--token",
                               token, "--config", config});
  EXPECT_EQ(wrong_pin.exit_code, 1) << wrong_pin.out << wrong_pin.err;
  EXPECT_FALSE(PathExists(config));
  // A token the coordinator does not know: nothing written.
  auto wrong_token = RunCommand(
      {grid.binary(), "login", url, "--ca-hash", grid.ca_hash, "--token", "igt_not-a-token", "--config", config});
  EXPECT_EQ(wrong_token.exit_code, 1) << wrong_token.out << wrong_token.err;
  EXPECT_NE(wrong_token.err.find("did not accept the token"), std::string::npos) << wrong_token.err;
  EXPECT_FALSE(PathExists(grid.root + "/alice")) << "a refused login writes nothing, not even the CA";

  auto ok = RunCommand({grid.binary(), "login", url, "--ca-hash", grid.ca_hash, "--token", token, "--config", config});
  ASSERT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("as alice (requester)"), std::string::npos) << ok.out;
  EXPECT_TRUE(PathExists(grid.root + "/alice/config.ca.crt")) << "the CA beside the config, named after it";
  auto jobs = RunCommand({grid.binary(), "jobs", "--config", config});
  EXPECT_EQ(jobs.exit_code, 0) << "the written config works: " << jobs.err;
  auto again =
      RunCommand({grid.binary(), "login", url, "--ca-hash", grid.ca_hash, "--token", token, "--config", config});
  EXPECT_EQ(again.exit_code, 2) << "an existing config is kept without --force";
  EXPECT_NE(again.err.find("--force"), std::string::npos) << again.err;

  // Health probes: no token needed, nothing but the answer.
  const std::string ca = grid.coordinator_dir + "/pki/ca.crt";
  auto healthz = RunCommand({"curl", "-sS", "--fail", "--cacert", ca, "https://" + grid.http_addr + "/healthz"});
  EXPECT_EQ(healthz.exit_code, 0) << healthz.err;
  EXPECT_EQ(healthz.out, "ok\n");
  auto readyz = RunCommand({"curl", "-sS", "--fail", "--cacert", ca, "https://" + grid.http_addr + "/readyz"});
  EXPECT_EQ(readyz.exit_code, 0) << readyz.err;
  EXPECT_EQ(readyz.out, "ready\n");
}

TEST(Operations, AWildcardListenAdvertisesTheGivenAddressAndKeepsTheOperatorOnLoopback) {
  Grid grid("OpsAdvertise");
  grid.listen_host = "0.0.0.0";
  ASSERT_TRUE(grid.StartCoordinator({"--advertise-address", "grid.example.org:443"}).ok());
  const std::string join = FirstLine(grid.coordinator_dir + "/agent-join.txt");
  EXPECT_EQ(join.rfind("idlegrid agent join https://grid.example.org:443 --token igj_", 0), 0u) << join;
  auto client = ReadFile(grid.client_yaml);
  ASSERT_TRUE(client.ok());
  EXPECT_NE(client->find("address: 127.0.0.1:"), std::string::npos) << *client;
  EXPECT_EQ(client->find("0.0.0.0"), std::string::npos) << *client;
  auto listed = grid.Cli({"jobs"});
  EXPECT_EQ(listed.exit_code, 0) << "the operator's own client.yaml reaches it: " << listed.err;

  auto bad = RunCommand({grid.binary(), "coordinator", "--data-dir", grid.root + "/other", "--listen", "127.0.0.1:0",
                         "--http-listen", "127.0.0.1:0", "--advertise-address", "https://grid.example.org"},
                        30);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--advertise-address"), std::string::npos) << bad.err;
  EXPECT_FALSE(PathExists(grid.root + "/other/state.db")) << "refused before anything was made";
}

TEST(Operations, ARestoredBackupTakesItsAgentsBackAndFinishesItsJobs) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("OpsRestore");
  ASSERT_TRUE(grid.StartCoordinator().ok());
  ASSERT_TRUE(grid.StartAgent(1).ok());
  auto first = grid.Cli({"submit", grid.Manifest("before", {"write", "kept"}, "array: {count: 2}\n")});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string before = Trim(first.out);
  auto first_done = grid.WaitJob(before, Ended);
  ASSERT_TRUE(first_done.ok());
  ASSERT_EQ(first_done->state(), v1::SUCCEEDED);

  // Work in flight when the copy is taken: it must finish after the restore.
  auto submitted = grid.Cli({"submit", grid.Manifest("during", {"sleep", "3"}, "array: {count: 3}\n")});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const std::string during = Trim(submitted.out);
  const std::string backup = grid.root + "/backup";
  auto copied = RunCommand({grid.binary(), "backup", backup, "--data-dir", grid.coordinator_dir});
  ASSERT_EQ(copied.exit_code, 0) << copied.out << copied.err;

  const std::string ca_before = grid.ca_hash;
  const int port = std::stoi(grid.grpc_addr.substr(grid.grpc_addr.rfind(':') + 1));
  grid.StopCoordinator(SIGKILL);
  const std::string fresh = grid.root + "/restored";
  auto restored = RunCommand({grid.binary(), "restore", backup, "--data-dir", fresh});
  ASSERT_EQ(restored.exit_code, 0) << restored.out << restored.err;
  grid.coordinator_dir = fresh;
  grid.listen_port = port;
  ASSERT_TRUE(grid.StartCoordinator().ok());
  EXPECT_EQ(grid.ca_hash, ca_before) << "the same CA, so the agent trusts it without joining again";

  auto finished = grid.WaitJob(during, Ended, 180000);
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  EXPECT_EQ(finished->state(), v1::SUCCEEDED) << finished->DebugString();
  auto nodes = grid.Cli({"nodes", "--json"});
  ASSERT_EQ(nodes.exit_code, 0);
  EXPECT_NE(nodes.out.find(grid.node_ids[0]), std::string::npos) << "the same node, not a new enrollment";
  EXPECT_EQ(ParseJson<v1::ListNodesResponse>(nodes.out).nodes_size(), 1) << nodes.out;
  // The job finished before the backup: its outputs came back with it.
  auto fetched = grid.Cli({"fetch", before, grid.root + "/results"});
  EXPECT_EQ(fetched.exit_code, 0) << fetched.out << fetched.err;
  EXPECT_TRUE(PathExists(grid.root + "/results/task-0.provenance.json")) << fetched.out;
}

// The certificate a TLS server at `address` presents: its notAfter as
// openssl prints it ("notAfter=Dec  7 18:30:00 2026 GMT"; "" if none could be read).
std::string ServedNotAfter(const std::string& address) {
  auto r = RunCommand({"sh", "-c",
                       "openssl s_client -connect " + address +
                           " -servername idlegrid-coordinator </dev/null 2>/dev/null | openssl x509 -noout -enddate"},
                      30);
  return r.exit_code == 0 ? Trim(r.out) : "";
}

// That notAfter as a time point (the epoch if it cannot be parsed).
std::chrono::system_clock::time_point NotAfterTime(const std::string& not_after) {
  struct tm t {};
  const std::string text = not_after.substr(not_after.find('=') + 1);
  if (::strptime(text.c_str(), "%b %d %H:%M:%S %Y GMT", &t) == nullptr) return {};
  return std::chrono::system_clock::from_time_t(::timegm(&t));
}

// Polls `address` (a handshake each time: the event is the server's switch)
// until it serves a certificate other than `old`; "" if none in `limit`.
std::string AwaitNewCertificate(const std::string& address, const std::string& old, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string now = ServedNotAfter(address);
    if (!now.empty() && now != old) return now;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return "";
}

// A server certificate of 20 s, renewed 15 s before its end: renewed while
// the coordinator runs, served on both ports from the next connection, so
// that past the first certificate's end a restarted agent and the CLI, both
// making new handshakes, still work.
TEST(Operations, AServerCertificateIsRenewedWhileItRunsAndServedOnBothPorts) {
  if (std::string why = PodmanMissing(); !why.empty()) GTEST_SKIP() << why;
  Grid grid("OpsRenew");
  ASSERT_TRUE(grid.StartCoordinator({"--tls-cert-lifetime", "20s", "--tls-renew-before", "15s"}).ok());
  const std::string first_http = ServedNotAfter(grid.http_addr);
  ASSERT_FALSE(first_http.empty());
  const auto first_end = NotAfterTime(first_http);
  ASSERT_GT(first_end.time_since_epoch().count(), 0) << first_http;

  const std::string renewed_http = AwaitNewCertificate(grid.http_addr, first_http, std::chrono::seconds(30));
  ASSERT_FALSE(renewed_http.empty()) << "HTTPS served no renewed certificate within 30 s";
  EXPECT_GT(NotAfterTime(renewed_http), first_end);
  // gRPC reads the identity file on its own schedule (every few seconds here).
  const std::string renewed_grpc = AwaitNewCertificate(grid.grpc_addr, first_http, std::chrono::seconds(30));
  ASSERT_FALSE(renewed_grpc.empty()) << "gRPC served no renewed certificate within 30 s";
  EXPECT_GT(NotAfterTime(renewed_grpc), first_end);

  // Past the first certificate's end (the event awaited is a point in time),
  // new handshakes: an agent started now, and the CLI.
  std::this_thread::sleep_until(first_end + std::chrono::seconds(1));
  ASSERT_TRUE(grid.StartAgent(1).ok());
  auto done = grid.Cli({"submit", grid.Manifest("after-renewal", {"write", "ok"}), "--wait"});
  EXPECT_EQ(done.exit_code, 0) << done.out << done.err;
  const std::string ca = grid.coordinator_dir + "/pki/ca.crt";
  auto ready = RunCommand({"curl", "-sS", "--fail", "--cacert", ca, "https://" + grid.http_addr + "/readyz"});
  EXPECT_EQ(ready.exit_code, 0) << ready.err;
}

}  // namespace
}  // namespace idlegrid::testing
