// `idlegrid ledger balance|history|deposit|withdraw|stake` (issue 13).
#include <cstdio>
#include <ctime>
#include <iostream>

#include "cli/commands.h"
#include "cli/support.h"
#include "common/grpc_status.h"
#include "common/random.h"
#include "ledger/accounts.h"

namespace idlegrid::cli {
namespace {

void PrintBalance(const CommonFlags& f, const v1::LedgerBalanceResponse& out) {
  if (f.json) return PrintJson(out);
  std::printf("account    %s\n", out.account().c_str());
  std::printf("available  %s\n", ledger::FormatCredits(out.available_micros()).c_str());
  std::printf("escrow     %s\n", ledger::FormatCredits(out.escrow_micros()).c_str());
  std::printf("pending    %s\n", ledger::FormatCredits(out.pending_micros()).c_str());
  std::printf("stake      %s\n", ledger::FormatCredits(out.stake_micros()).c_str());
}

std::string TimeOf(int64_t ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::gmtime(&t));
  return buf;
}

}  // namespace

int LedgerBalance(const CommonFlags& f, const std::string& account) {
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::LedgerAccountRequest req;
  req.set_account(account);
  v1::LedgerBalanceResponse out;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->LedgerBalance(ctx.get(), req, &out));
  if (!st.ok()) return Fail(st);
  PrintBalance(f, out);
  return 0;
}

int LedgerHistory(const CommonFlags& f, const std::string& account, int64_t after_seq, uint32_t limit) {
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::LedgerHistoryRequest req;
  req.set_account(account);
  req.set_after_seq(after_seq);
  req.set_limit(limit);
  v1::LedgerHistoryResponse out;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->LedgerHistory(ctx.get(), req, &out));
  if (!st.ok()) return Fail(st);
  if (f.json) return PrintJson(out), 0;
  std::printf("%6s  %-19s  %-9s  %s\n", "SEQ", "WHEN (UTC)", "REASON", "MEMO");
  for (const auto& p : out.postings()) {
    std::printf("%6lld  %-19s  %-9s  %s\n", static_cast<long long>(p.seq()), TimeOf(p.applied_at_ms()).c_str(),
                p.reason().c_str(), p.memo().c_str());
    for (const auto& e : p.entries()) {
      std::string name = e.owner() + "/" + e.kind() + (e.scope().empty() ? "" : "/" + e.scope());
      std::printf("        %18s  %s\n", ledger::FormatCredits(e.micros()).c_str(), name.c_str());
    }
  }
  return 0;
}

int LedgerTransfer(const CommonFlags& f, const std::string& account, const std::string& amount, bool deposit) {
  auto micros = ledger::ParseCredits(amount);
  if (!micros.ok()) return Fail(micros.status());
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::LedgerTransferRequest req;
  req.set_account(account);
  req.set_micros(*micros);
  req.set_request_id(RandomHex(12));  // one transfer per command, whatever retries the RPC makes
  v1::LedgerBalanceResponse out;
  auto ctx = (*client)->Context();
  Status st = FromGrpc(deposit ? (*client)->stub()->LedgerDeposit(ctx.get(), req, &out)
                               : (*client)->stub()->LedgerWithdraw(ctx.get(), req, &out));
  if (!st.ok()) return Fail(st);
  PrintBalance(f, out);
  return 0;
}

int LedgerStake(const CommonFlags& f, const std::string& account, const std::string& amount, bool unstake) {
  auto micros = ledger::ParseCredits(amount);
  if (!micros.ok()) return Fail(micros.status());
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  v1::LedgerStakeRequest req;
  req.set_account(account);
  req.set_micros(*micros);
  req.set_unstake(unstake);
  req.set_request_id(RandomHex(12));
  v1::LedgerBalanceResponse out;
  auto ctx = (*client)->Context();
  Status st = FromGrpc((*client)->stub()->LedgerStake(ctx.get(), req, &out));
  if (!st.ok()) return Fail(st);
  PrintBalance(f, out);
  return 0;
}

}  // namespace idlegrid::cli
