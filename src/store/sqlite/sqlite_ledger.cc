// The ledger's books in SQLite (issue 13): executes postings planned by
// src/ledger under the store's one writer; decides nothing but the rules the
// core exports (CheckBalanced, BalanceAfter).
#include "ledger/plans.h"
#include "store/sqlite/sqlite_store.h"

namespace idlegrid::store {

namespace {

Result<ledger::AccountKey> ReadAccountKey(const Stmt& q, int first_col) {
  IG_ASSIGN_OR_RETURN(ledger::Kind kind, ledger::KindFromName(q.Text(first_col + 1)));
  return ledger::AccountKey{q.Text(first_col), kind, q.Text(first_col + 2)};
}

// Applies one posting inside the caller's transaction; false if its key was
// applied before (nothing changed).
Result<bool> ApplyPostingLocked(sqlite3* db, const ledger::Posting& posting, int64_t now_ms) {
  IG_RETURN_IF_ERROR(ledger::CheckBalanced(posting));
  {
    Stmt seen(db, "SELECT 1 FROM ledger_postings WHERE key = ?");
    if (seen.Bind(1, posting.key).Step()) return false;
    IG_RETURN_IF_ERROR(seen.status());
  }
  Stmt ins(db, "INSERT INTO ledger_postings(key, reason, job_id, memo, applied_ms) VALUES(?, ?, ?, ?, ?)");
  ins.Bind(1, posting.key).Bind(2, std::string_view(ledger::ReasonName(posting.reason))).Bind(3, posting.job_id);
  ins.Bind(4, posting.memo).Bind(5, now_ms).Step();
  IG_RETURN_IF_ERROR(ins.status());
  int64_t seq = sqlite3_last_insert_rowid(db);
  Stmt read(db, "SELECT balance FROM ledger_balances WHERE owner = ? AND kind = ? AND scope = ?");
  Stmt write(db,
             "INSERT INTO ledger_balances(owner, kind, scope, balance) VALUES(?, ?, ?, ?) "
             "ON CONFLICT(owner, kind, scope) DO UPDATE SET balance = excluded.balance");
  Stmt entry(db, "INSERT INTO ledger_entries(seq, idx, owner, kind, scope, amount) VALUES(?, ?, ?, ?, ?, ?)");
  for (size_t i = 0; i < posting.entries.size(); ++i) {
    const ledger::Entry& e = posting.entries[i];
    std::string_view kind = ledger::KindName(e.account.kind);
    read.Reset().Bind(1, e.account.owner).Bind(2, kind).Bind(3, e.account.scope);
    ledger::Micros balance = read.Step() ? read.Int(0) : 0;
    IG_RETURN_IF_ERROR(read.status());
    IG_ASSIGN_OR_RETURN(ledger::Micros after, ledger::BalanceAfter(e, balance, posting.key));
    write.Reset().Bind(1, e.account.owner).Bind(2, kind).Bind(3, e.account.scope).Bind(4, after).Step();
    IG_RETURN_IF_ERROR(write.status());
    entry.Reset().Bind(1, seq).Bind(2, static_cast<int64_t>(i)).Bind(3, e.account.owner).Bind(4, kind);
    entry.Bind(5, e.account.scope).Bind(6, e.amount).Step();
    IG_RETURN_IF_ERROR(entry.status());
  }
  return true;
}

}  // namespace

Result<int> SqliteLedger::ApplyPostings(const std::vector<ledger::Posting>& postings, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  Transaction tx(db_);
  IG_RETURN_IF_ERROR(tx.status());
  int applied = 0;
  for (const ledger::Posting& posting : postings) {
    if (posting.empty()) continue;
    IG_ASSIGN_OR_RETURN(bool now, ApplyPostingLocked(db_, posting, now_ms));
    applied += now ? 1 : 0;
  }
  IG_RETURN_IF_ERROR(tx.Commit());
  return applied;
}

Result<std::map<ledger::AccountKey, ledger::Micros>> SqliteLedger::LedgerBalances(
    const std::optional<std::string>& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, owner ? "SELECT owner, kind, scope, balance FROM ledger_balances WHERE owner = ?"
                    : "SELECT owner, kind, scope, balance FROM ledger_balances");
  if (owner) q.Bind(1, *owner);
  std::map<ledger::AccountKey, ledger::Micros> balances;
  while (q.Step()) {
    IG_ASSIGN_OR_RETURN(ledger::AccountKey key, ReadAccountKey(q, 0));
    balances[key] = q.Int(3);
  }
  IG_RETURN_IF_ERROR(q.status());
  return balances;
}

Result<std::vector<ledger::BookedPosting>> SqliteLedger::LedgerPostings(int64_t after_seq, size_t limit,
                                                                        const std::optional<std::string>& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, owner ? "SELECT seq, key, reason, job_id, memo, applied_ms FROM ledger_postings WHERE seq > ? "
                      "AND seq IN (SELECT seq FROM ledger_entries WHERE owner = ? AND seq > ?) ORDER BY seq LIMIT ?"
                    : "SELECT seq, key, reason, job_id, memo, applied_ms FROM ledger_postings WHERE seq > ? "
                      "ORDER BY seq LIMIT ?");
  q.Bind(1, after_seq);
  if (owner) {
    q.Bind(2, *owner).Bind(3, after_seq).Bind(4, static_cast<int64_t>(limit));
  } else {
    q.Bind(2, static_cast<int64_t>(limit));
  }
  std::vector<ledger::BookedPosting> booked;
  while (q.Step()) {
    ledger::BookedPosting b;
    b.seq = q.Int(0);
    b.posting.key = q.Text(1);
    IG_ASSIGN_OR_RETURN(b.posting.reason, ledger::ReasonFromName(q.Text(2)));
    b.posting.job_id = q.Text(3);
    b.posting.memo = q.Text(4);
    b.applied_ms = q.Int(5);
    booked.push_back(std::move(b));
  }
  IG_RETURN_IF_ERROR(q.status());
  Stmt entries(db_, "SELECT owner, kind, scope, amount FROM ledger_entries WHERE seq = ? ORDER BY idx");
  for (ledger::BookedPosting& b : booked) {
    entries.Reset().Bind(1, b.seq);
    while (entries.Step()) {
      IG_ASSIGN_OR_RETURN(ledger::AccountKey key, ReadAccountKey(entries, 0));
      b.posting.entries.push_back({std::move(key), entries.Int(3)});
    }
    IG_RETURN_IF_ERROR(entries.status());
  }
  return booked;
}

Result<std::vector<PendingCharge>> SqliteLedger::PendingCharges(int64_t charged_before_ms, size_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_,
         "SELECT b.owner, b.scope, p.job_id, b.balance, p.applied_ms FROM ledger_balances b "
         "JOIN ledger_postings p ON p.key = ? || b.scope "
         "WHERE b.kind = ? AND b.balance > 0 AND p.applied_ms < ? ORDER BY p.applied_ms, p.seq LIMIT ?");
  q.Bind(1, ledger::ChargeKey("")).Bind(2, std::string_view(ledger::KindName(ledger::Kind::kPending)));
  q.Bind(3, charged_before_ms).Bind(4, static_cast<int64_t>(limit));
  std::vector<PendingCharge> charges;
  while (q.Step()) charges.push_back({q.Text(0), q.Text(1), q.Text(2), q.Int(3), q.Int(4)});
  IG_RETURN_IF_ERROR(q.status());
  return charges;
}

Result<int64_t> SqliteLedger::SettlementCursor(const std::string& sink) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_, "SELECT last_seq FROM ledger_settlement WHERE sink = ?");
  int64_t last = q.Bind(1, sink).Step() ? q.Int(0) : 0;
  IG_RETURN_IF_ERROR(q.status());
  return last;
}

Status SqliteLedger::SetSettlementCursor(const std::string& sink, int64_t last_seq) {
  std::lock_guard<std::mutex> lock(mu_);
  Stmt q(db_,
         "INSERT INTO ledger_settlement(sink, last_seq) VALUES(?, ?) "
         "ON CONFLICT(sink) DO UPDATE SET last_seq = excluded.last_seq");
  q.Bind(1, sink).Bind(2, last_seq).Step();
  return q.status();
}

}  // namespace idlegrid::store
