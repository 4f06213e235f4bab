#include "store/postgres/pg_pool.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <random>
#include <thread>

namespace idlegrid::store::pg {

PooledConnection::~PooledConnection() {
  if (conn_) pool_->Release(std::move(conn_));
}

namespace {

// A connection still inside a transaction must not be used again as it is:
// roll it back, or, if even that fails, reconnect (a failed reconnect leaves
// it unhealthy, and Acquire tries again before anyone uses it).
void RollBackOrReset(Connection* conn) {
  if (!conn->healthy() || !conn->in_transaction()) return;
  if (Status st = conn->ExecScript("ROLLBACK"); !st.ok()) {
    spdlog::warn("postgres: rollback failed ({}); reconnecting", st.message());
    if (Status reset = conn->Reset(); !reset.ok()) spdlog::warn("postgres: reconnect failed: {}", reset.message());
  }
}

}  // namespace

Result<PooledConnection> ConnectionPool::Acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  available_.wait(lock, [&] { return !idle_.empty() || open_ < size_; });
  if (!idle_.empty()) {
    std::unique_ptr<Connection> conn = std::move(idle_.back());
    idle_.pop_back();
    lock.unlock();
    // A connection the server dropped while it sat idle (the server
    // restarted) is replaced before anyone uses it (the PostgreSQL fault
    // test: a token lookup on a stale connection failed a client's call).
    if (!conn->StillOpen()) {
      if (Status st = conn->Reset(); !st.ok()) {
        Release(std::move(conn));
        return st;
      }
    }
    return PooledConnection(this, std::move(conn));
  }
  ++open_;  // reserve the slot, connect outside the lock
  lock.unlock();
  auto conn = Connection::Open(conninfo_);
  if (!conn.ok()) {
    std::lock_guard<std::mutex> relock(mu_);
    --open_;
    available_.notify_one();
    return conn.status();
  }
  return PooledConnection(this, std::move(conn).value());
}

void ConnectionPool::Release(std::unique_ptr<Connection> conn) {
  // A connection left inside a transaction (its owner failed mid-way) is
  // rolled back before anyone else may use it.
  RollBackOrReset(conn.get());
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(std::move(conn));
  available_.notify_one();
}

namespace {

const char* BeginStatement(Isolation isolation) {
  switch (isolation) {
    case Isolation::kAutocommit:
      return "";
    case Isolation::kReadCommitted:
      return "BEGIN ISOLATION LEVEL READ COMMITTED";
    case Isolation::kReadOnlySnapshot:
      return "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
    case Isolation::kSerializable:
      return "BEGIN ISOLATION LEVEL SERIALIZABLE";
  }
  return "BEGIN";
}

constexpr int kMaxTries = 30;
// A transaction whose connection was lost runs again at most this often: one
// reconnect per stale pooled connection is the usual case after a restart.
constexpr int kMaxReconnects = 3;

}  // namespace

Status RunTransaction(ConnectionPool& pool, Isolation isolation, const std::function<Status(Connection&)>& body) {
  thread_local std::minstd_rand jitter(std::random_device{}());
  Status last;
  int reconnects = 0;
  for (int attempt = 0; attempt < kMaxTries; ++attempt) {
    if (attempt > 0) {
      // Contending transactions back off by random, growing amounts so they
      // do not collide again in lockstep.
      int cap_us = 200 * std::min(attempt, 20);
      std::this_thread::sleep_for(std::chrono::microseconds(jitter() % cap_us + 50));
    }
    IG_ASSIGN_OR_RETURN(PooledConnection conn, pool.Acquire());
    conn->clear_last_sqlstate();
    const bool explicit_tx = isolation != Isolation::kAutocommit;
    bool committing = false;
    Status st = explicit_tx ? conn->ExecScript(BeginStatement(isolation)) : Status::Ok();
    if (st.ok()) st = body(*conn);
    if (st.ok() && explicit_tx) {
      committing = true;
      st = conn->ExecScript("COMMIT");
    }
    if (st.ok()) return st;
    std::string sqlstate = conn->last_sqlstate();
    // The connection broke (the server restarted, the network was cut) inside
    // an explicit transaction before its COMMIT was sent: the server rolled it
    // back, so it runs again on a new connection, as a conflict would. Bodies
    // are written to be run again (serialization failures retry them too). At
    // COMMIT its fate is unknown: the caller gets the error (agents resend
    // their reports, which the store applies idempotently).
    // libpq may report a lost server before PQstatus turns bad: StillOpen
    // reads the socket (a body's own error leaves the connection open).
    const bool connection_lost = !conn->StillOpen();
    if (explicit_tx && !committing && connection_lost && ++reconnects <= kMaxReconnects) {
      spdlog::warn("postgres: connection lost mid-transaction ({}); running it again on a new one", st.message());
      if (Status reset = conn->Reset(); !reset.ok()) return reset.WithContext("after a lost connection");
      last = st;
      continue;
    }
    RollBackOrReset(&*conn);
    if (!IsRetryable(sqlstate)) return st;
    last = st;
  }
  return last.WithContext("gave up after " + std::to_string(kMaxTries) + " conflicting tries");
}

}  // namespace idlegrid::store::pg
