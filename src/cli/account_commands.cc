// Accounts, tokens, join tokens and job deletion (issue 11).
#include <ctime>
#include <iostream>

#include "cli/commands.h"
#include "cli/support.h"
#include "common/grpc_status.h"
#include "common/units.h"
#include "manifest/manifest.h"

namespace idlegrid::cli {

namespace {

std::string WhenOf(int64_t ms) {
  if (ms == 0) return "never";
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&t));
  return buf;
}

// "30d" -> seconds; "" -> 0 (never).
Result<uint32_t> ExpiresOf(const std::string& text) {
  if (text.empty()) return uint32_t{0};
  auto secs = manifest::ParseDurationSeconds(text);
  if (!secs.ok()) return Status::InvalidArgument("--expires: " + secs.status().message());
  return static_cast<uint32_t>(*secs);
}

std::string Join(const google::protobuf::RepeatedPtrField<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ",") + s;
  return out.empty() ? "-" : out;
}

}  // namespace

int AccountCreate(const CommonFlags& f, const AccountFlags& a) {
  v1::CreateAccountRequest req;
  req.mutable_account()->set_name(a.name);
  req.mutable_account()->set_role(a.role);
  req.mutable_account()->set_weight(a.weight);
  req.mutable_account()->mutable_quota()->set_max_queued_tasks(a.max_queued_tasks);
  req.mutable_account()->mutable_quota()->set_max_running_tasks(a.max_running_tasks);
  req.mutable_account()->mutable_quota()->set_max_stored_bytes(a.max_stored_bytes);
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::Account out;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->CreateAccount(ctx.get(), req, &out));
  if (!st.ok()) return Fail(st);
  if (f.json)
    PrintJson(out);
  else
    std::cout << "account " << out.name() << " (" << out.role() << ") created\n";
  return 0;
}

int AccountList(const CommonFlags& f) {
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::ListAccountsResponse out;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->ListAccounts(ctx.get(), v1::ListAccountsRequest(), &out));
  if (!st.ok()) return Fail(st);
  if (f.json) return PrintJson(out), 0;
  std::printf("%-20s %-10s %6s %8s %8s %12s\n", "ACCOUNT", "ROLE", "WEIGHT", "QUEUED", "RUNNING", "STORED");
  for (const auto& acc : out.accounts()) {
    std::string queued = std::to_string(acc.queued_tasks());
    if (acc.quota().max_queued_tasks()) queued += "/" + std::to_string(acc.quota().max_queued_tasks());
    std::string running = std::to_string(acc.running_tasks());
    if (acc.quota().max_running_tasks()) running += "/" + std::to_string(acc.quota().max_running_tasks());
    std::printf("%-20s %-10s %6.2f %8s %8s %12s\n", acc.name().c_str(), acc.role().c_str(), acc.weight(),
                queued.c_str(), running.c_str(), FormatGiB(acc.stored_bytes()).c_str());
  }
  return 0;
}

int TokenCreate(const CommonFlags& f, const std::string& account, const std::vector<std::string>& scopes,
                const std::string& expires, const std::string& name) {
  v1::CreateTokenRequest req;
  req.set_account(account);
  for (const auto& s : scopes) req.add_scopes(s);
  auto secs = ExpiresOf(expires);
  if (!secs.ok()) return Fail(secs.status());
  req.set_expires_seconds(*secs);
  req.set_name(name);
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::CreateTokenResponse out;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->CreateToken(ctx.get(), req, &out));
  if (!st.ok()) return Fail(st);
  if (f.json) return PrintJson(out), 0;
  std::cout << out.token() << "\n";
  std::cerr << "token " << out.info().id() << " for " << out.info().account() << ", scopes "
            << Join(out.info().scopes()) << ", expires " << WhenOf(out.info().expires_at_ms())
            << ". It is shown only now: the coordinator keeps only its hash.\n";
  return 0;
}

int TokenList(const CommonFlags& f, const std::string& account) {
  v1::ListTokensRequest req;
  req.set_account(account);
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::ListTokensResponse out;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->ListTokens(ctx.get(), req, &out));
  if (!st.ok()) return Fail(st);
  if (f.json) return PrintJson(out), 0;
  std::printf("%-16s %-16s %-24s %-20s %s\n", "ID", "ACCOUNT", "SCOPES", "EXPIRES", "NAME");
  for (const auto& t : out.tokens()) {
    std::string expires = t.revoked() ? "revoked" : WhenOf(t.expires_at_ms());
    std::printf("%-16s %-16s %-24s %-20s %s\n", t.id().c_str(), t.account().c_str(), Join(t.scopes()).c_str(),
                expires.c_str(), t.name().c_str());
  }
  return 0;
}

int TokenRevoke(const CommonFlags& f, const std::string& token_id) {
  v1::RevokeTokenRequest req;
  req.set_token_id(token_id);
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::TokenInfo out;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->RevokeToken(ctx.get(), req, &out));
  if (!st.ok()) return Fail(st);
  if (f.json)
    PrintJson(out);
  else
    std::cout << "token " << out.id() << " of " << out.account() << " revoked\n";
  return 0;
}

int JoinTokenCreate(const CommonFlags& f, const std::string& provider, const std::string& expires) {
  v1::CreateJoinTokenRequest req;
  req.set_provider(provider);
  auto secs = ExpiresOf(expires);
  if (!secs.ok()) return Fail(secs.status());
  req.set_expires_seconds(*secs);
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::CreateJoinTokenResponse out;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->CreateJoinToken(ctx.get(), req, &out));
  if (!st.ok()) return Fail(st);
  if (f.json) return PrintJson(out), 0;
  std::cout << out.token() << "\n";
  std::cerr << "join token for provider " << out.provider() << ", expires " << WhenOf(out.expires_at_ms())
            << "; nodes that join with it belong to " << out.provider() << ".\n";
  return 0;
}

int Delete(const CommonFlags& f, const std::string& job_id) {
  v1::DeleteJobRequest req;
  req.set_job_id(job_id);
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::DeleteJobResponse out;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->DeleteJob(ctx.get(), req, &out));
  if (!st.ok()) return Fail(st);
  if (f.json)
    PrintJson(out);
  else
    std::cout << "job " << out.job_id() << " deleted; " << out.artifacts_removed() << " artifact(s), "
              << FormatGiB(out.bytes_freed()) << " freed\n";
  return 0;
}

}  // namespace idlegrid::cli
