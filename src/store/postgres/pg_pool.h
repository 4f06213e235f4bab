#pragma once
// A fixed-size pool of PostgreSQL connections and the transaction runner
// every store method goes through.
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/postgres/pg_connection.h"

namespace idlegrid::store::pg {

class ConnectionPool;

// A connection checked out of the pool; returned on destruction.
class PooledConnection {
 public:
  PooledConnection(ConnectionPool* pool, std::unique_ptr<Connection> conn) : pool_(pool), conn_(std::move(conn)) {}
  PooledConnection(PooledConnection&&) = default;
  ~PooledConnection();
  Connection& operator*() { return *conn_; }
  Connection* operator->() { return conn_.get(); }

 private:
  ConnectionPool* pool_;
  std::unique_ptr<Connection> conn_;
};

// Up to `size` connections to one server, opened on demand. Acquire() blocks
// while all are checked out. Thread-safe.
class ConnectionPool {
 public:
  ConnectionPool(std::string conninfo, size_t size) : conninfo_(std::move(conninfo)), size_(size) {}

  // A healthy connection (reconnecting a broken idle one). Unavailable if the
  // server cannot be reached.
  Result<PooledConnection> Acquire();

 private:
  friend class PooledConnection;
  void Release(std::unique_ptr<Connection> conn);

  // Constant after construction.
  const std::string conninfo_;
  const size_t size_;

  std::mutex mu_;
  std::condition_variable available_;
  std::vector<std::unique_ptr<Connection>> idle_;  // guarded by mu_
  size_t open_ = 0;                                // guarded by mu_; idle + checked out
};

enum class Isolation {
  // One statement, committed on its own (no BEGIN/COMMIT round trips): reads,
  // and conditional writes whose WHERE clause is re-checked on the newest row
  // version when a concurrent writer got there first.
  kAutocommit,
  // Several statements made safe by their conditions and row locks.
  kReadCommitted,
  // Several reads that must agree with each other (one snapshot), no writes.
  kReadOnlySnapshot,
  // Read-modify-write transactions: the outcome equals some serial order of
  // all transactions, as with SQLite's single writer; conflicts are retried.
  kSerializable,
};

// Runs `body` inside BEGIN ... COMMIT on one pooled connection (kAutocommit:
// without them). A
// serialization failure or deadlock (from the body or the COMMIT) rolls back
// and runs `body` again, a bounded number of times with a short randomised
// backoff, so `body` must reset anything it fills in. Any other error rolls
// back and is returned.
Status RunTransaction(ConnectionPool& pool, Isolation isolation, const std::function<Status(Connection&)>& body);

}  // namespace idlegrid::store::pg
