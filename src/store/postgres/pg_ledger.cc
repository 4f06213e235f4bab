// The ledger's books in PostgreSQL (issue 13): executes postings planned by
// src/ledger; decides nothing but the rules the core exports (CheckBalanced,
// BalanceAfter). Ledger writers from every coordinator serialise on one
// transaction-scoped advisory lock: their read-modify-write of balances is
// then safe under READ COMMITTED, and seq (allocated under the lock) follows
// commit order, which settlement cursors need. Ledger writes are rare (a few
// per attempt), so one lock costs little.
#include "ledger/plans.h"
#include "store/postgres/postgres_store.h"

namespace idlegrid::store {

using pg::Connection;
using pg::Isolation;
using pg::Params;
using pg::Rows;

namespace {

// Any constant, shared by every idlegrid binary: "idlg" "ledg" in ASCII.
constexpr int64_t kLedgerLockKey = 0x69646c676c656467;

Result<ledger::AccountKey> ReadAccountKey(const Rows& q, int row, int first_col) {
  IG_ASSIGN_OR_RETURN(ledger::Kind kind, ledger::KindFromName(q.Text(row, first_col + 1)));
  return ledger::AccountKey{q.Text(row, first_col), kind, q.Text(row, first_col + 2)};
}

// Applies one posting inside the caller's transaction (holding the ledger
// lock); false if its key was applied before (nothing changed).
Result<bool> ApplyPosting(Connection& c, const ledger::Posting& posting, int64_t now_ms) {
  IG_RETURN_IF_ERROR(ledger::CheckBalanced(posting));
  IG_ASSIGN_OR_RETURN(Rows ins, c.Exec("INSERT INTO ledger_postings(key, reason, job_id, memo, applied_ms) "
                                       "VALUES($1, $2, $3, $4, $5) ON CONFLICT(key) DO NOTHING RETURNING seq",
                                       Params()
                                           .Text(posting.key)
                                           .Text(ledger::ReasonName(posting.reason))
                                           .Text(posting.job_id)
                                           .Text(posting.memo)
                                           .Int(now_ms)));
  if (ins.empty()) return false;
  int64_t seq = ins.Int(0, 0);
  for (size_t i = 0; i < posting.entries.size(); ++i) {
    const ledger::Entry& e = posting.entries[i];
    const char* kind = ledger::KindName(e.account.kind);
    IG_ASSIGN_OR_RETURN(Rows read, c.Exec("SELECT balance FROM ledger_balances WHERE owner = $1 AND kind = $2 "
                                          "AND scope = $3",
                                          Params().Text(e.account.owner).Text(kind).Text(e.account.scope)));
    ledger::Micros balance = read.empty() ? 0 : read.Int(0, 0);
    IG_ASSIGN_OR_RETURN(ledger::Micros after, ledger::BalanceAfter(e, balance, posting.key));
    IG_RETURN_IF_ERROR(c.Exec("INSERT INTO ledger_balances(owner, kind, scope, balance) VALUES($1, $2, $3, $4) "
                              "ON CONFLICT(owner, kind, scope) DO UPDATE SET balance = excluded.balance",
                              Params().Text(e.account.owner).Text(kind).Text(e.account.scope).Int(after))
                           .status());
    IG_RETURN_IF_ERROR(c.Exec("INSERT INTO ledger_entries(seq, idx, owner, kind, scope, amount) "
                              "VALUES($1, $2, $3, $4, $5, $6)",
                              Params()
                                  .Int(seq)
                                  .Int(static_cast<int64_t>(i))
                                  .Text(e.account.owner)
                                  .Text(kind)
                                  .Text(e.account.scope)
                                  .Int(e.amount))
                           .status());
  }
  return true;
}

}  // namespace

Result<int> PgLedger::ApplyPostings(const std::vector<ledger::Posting>& postings, int64_t now_ms) {
  int applied = 0;
  IG_RETURN_IF_ERROR(Tx(Isolation::kReadCommitted, [&](Connection& c) -> Status {
    applied = 0;  // the body may run again after a retryable failure
    IG_RETURN_IF_ERROR(c.Exec("SELECT pg_advisory_xact_lock($1)", Params().Int(kLedgerLockKey)).status());
    for (const ledger::Posting& posting : postings) {
      if (posting.empty()) continue;
      IG_ASSIGN_OR_RETURN(bool now, ApplyPosting(c, posting, now_ms));
      applied += now ? 1 : 0;
    }
    return Status::Ok();
  }));
  return applied;
}

Result<std::map<ledger::AccountKey, ledger::Micros>> PgLedger::LedgerBalances(const std::optional<std::string>& owner) {
  std::map<ledger::AccountKey, ledger::Micros> balances;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    balances.clear();
    IG_ASSIGN_OR_RETURN(Rows q, owner ? c.Exec("SELECT owner, kind, scope, balance FROM ledger_balances "
                                               "WHERE owner = $1",
                                               Params().Text(*owner))
                                      : c.Exec("SELECT owner, kind, scope, balance FROM ledger_balances"));
    for (int r = 0; r < q.size(); ++r) {
      IG_ASSIGN_OR_RETURN(ledger::AccountKey key, ReadAccountKey(q, r, 0));
      balances[key] = q.Int(r, 3);
    }
    return Status::Ok();
  }));
  return balances;
}

Result<std::vector<ledger::BookedPosting>> PgLedger::LedgerPostings(int64_t after_seq, size_t limit,
                                                                    const std::optional<std::string>& owner) {
  std::vector<ledger::BookedPosting> booked;
  IG_RETURN_IF_ERROR(Tx(Isolation::kReadOnlySnapshot, [&](Connection& c) -> Status {
    booked.clear();
    IG_ASSIGN_OR_RETURN(Rows q,
                        owner ? c.Exec("SELECT seq, key, reason, job_id, memo, applied_ms FROM ledger_postings "
                                       "WHERE seq > $1 AND seq IN (SELECT seq FROM ledger_entries WHERE owner = $2 "
                                       "AND seq > $1) ORDER BY seq LIMIT $3",
                                       Params().Int(after_seq).Text(*owner).Int(static_cast<int64_t>(limit)))
                              : c.Exec("SELECT seq, key, reason, job_id, memo, applied_ms FROM ledger_postings "
                                       "WHERE seq > $1 ORDER BY seq LIMIT $2",
                                       Params().Int(after_seq).Int(static_cast<int64_t>(limit))));
    if (q.empty()) return Status::Ok();
    std::map<int64_t, size_t> by_seq;
    for (int r = 0; r < q.size(); ++r) {
      ledger::BookedPosting b;
      b.seq = q.Int(r, 0);
      b.posting.key = q.Text(r, 1);
      IG_ASSIGN_OR_RETURN(b.posting.reason, ledger::ReasonFromName(q.Text(r, 2)));
      b.posting.job_id = q.Text(r, 3);
      b.posting.memo = q.Text(r, 4);
      b.applied_ms = q.Int(r, 5);
      by_seq[b.seq] = booked.size();
      booked.push_back(std::move(b));
    }
    IG_ASSIGN_OR_RETURN(Rows entries, c.Exec("SELECT seq, owner, kind, scope, amount FROM ledger_entries "
                                             "WHERE seq >= $1 AND seq <= $2 ORDER BY seq, idx",
                                             Params().Int(booked.front().seq).Int(booked.back().seq)));
    for (int r = 0; r < entries.size(); ++r) {
      auto it = by_seq.find(entries.Int(r, 0));
      if (it == by_seq.end()) continue;  // another owner's posting in the range
      IG_ASSIGN_OR_RETURN(ledger::AccountKey key, ReadAccountKey(entries, r, 1));
      booked[it->second].posting.entries.push_back({std::move(key), entries.Int(r, 4)});
    }
    return Status::Ok();
  }));
  return booked;
}

Result<std::vector<PendingCharge>> PgLedger::PendingCharges(int64_t charged_before_ms, size_t limit) {
  std::vector<PendingCharge> charges;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    charges.clear();
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT b.owner, b.scope, p.job_id, b.balance, p.applied_ms "
                                       "FROM ledger_balances b JOIN ledger_postings p ON p.key = $1 || b.scope "
                                       "WHERE b.kind = $2 AND b.balance > 0 AND p.applied_ms < $3 "
                                       "ORDER BY p.applied_ms, p.seq LIMIT $4",
                                       Params()
                                           .Text(ledger::ChargeKey(""))
                                           .Text(ledger::KindName(ledger::Kind::kPending))
                                           .Int(charged_before_ms)
                                           .Int(static_cast<int64_t>(limit))));
    for (int r = 0; r < q.size(); ++r) {
      charges.push_back({q.Text(r, 0), q.Text(r, 1), q.Text(r, 2), q.Int(r, 3), q.Int(r, 4)});
    }
    return Status::Ok();
  }));
  return charges;
}

Result<int64_t> PgLedger::SettlementCursor(const std::string& sink) {
  int64_t last = 0;
  IG_RETURN_IF_ERROR(Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    IG_ASSIGN_OR_RETURN(Rows q, c.Exec("SELECT last_seq FROM ledger_settlement WHERE sink = $1", Params().Text(sink)));
    last = q.empty() ? 0 : q.Int(0, 0);
    return Status::Ok();
  }));
  return last;
}

Status PgLedger::SetSettlementCursor(const std::string& sink, int64_t last_seq) {
  return Tx(Isolation::kAutocommit, [&](Connection& c) -> Status {
    return c
        .Exec(
            "INSERT INTO ledger_settlement(sink, last_seq) VALUES($1, $2) "
            "ON CONFLICT(sink) DO UPDATE SET last_seq = excluded.last_seq",
            Params().Text(sink).Int(last_seq))
        .status();
  });
}

}  // namespace idlegrid::store
