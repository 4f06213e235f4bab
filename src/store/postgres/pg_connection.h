#pragma once
// Thin RAII wrappers over libpq with Status errors: statement parameters, a
// result set read in binary format, and one connection that prepares each
// distinct SQL text once and reuses it.
#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace idlegrid::store::pg {

// Positional parameters $1, $2, ... Numbers and text travel in text format
// (the server casts them from context); bytes travel as binary bytea.
class Params {
 public:
  Params& Int(int64_t v);
  Params& Double(double v);
  Params& Text(std::string_view v);
  Params& Bytes(std::string_view v);
  // A PostgreSQL array literal of text elements ({"a","b"}); cast with $n::text[]
  // (or ::bigint[] etc. for numbers written as text).
  Params& TextArray(const std::vector<std::string>& v);
  // A PostgreSQL array literal of numbers ({1,2}); cast with $n::integer[] or ::bigint[].
  Params& IntArray(const std::vector<int64_t>& v);

  int size() const { return static_cast<int>(values_.size()); }
  const char* const* values() const;
  const int* lengths() const { return lengths_.data(); }
  const int* formats() const { return formats_.data(); }
  // Type OIDs for PQprepare: bytea for binary parameters, 0 (inferred) otherwise.
  const std::vector<unsigned>& types() const { return types_; }

 private:
  Params& Add(std::string value, int format, unsigned type);

  std::vector<std::string> values_;
  mutable std::vector<const char*> pointers_;  // into values_, rebuilt by values()
  std::vector<int> lengths_;
  std::vector<int> formats_;
  std::vector<unsigned> types_;
};

// A finished statement's rows, in binary result format. Column accessors
// decode int2/int4/int8, float8, bool, text and bytea by the column's type.
class Rows {
 public:
  explicit Rows(PGresult* result) : result_(result) {}
  Rows(Rows&& other) noexcept : result_(other.result_) { other.result_ = nullptr; }
  Rows& operator=(Rows&& other) noexcept;
  Rows(const Rows&) = delete;
  Rows& operator=(const Rows&) = delete;
  ~Rows() { PQclear(result_); }

  int size() const { return result_ ? PQntuples(result_) : 0; }
  bool empty() const { return size() == 0; }
  // Rows changed by INSERT/UPDATE/DELETE (without RETURNING).
  int64_t affected() const;
  int64_t Int(int row, int col) const;
  double Double(int row, int col) const;
  std::string Text(int row, int col) const;  // text or bytea, raw bytes
  bool IsNull(int row, int col) const { return PQgetisnull(result_, row, col) != 0; }

 private:
  PGresult* result_;
};

// One server connection. Not thread-safe: the pool hands it to one thread at
// a time.
class Connection {
 public:
  // Connects with a libpq conninfo string or postgresql:// URL.
  static Result<std::unique_ptr<Connection>> Open(const std::string& conninfo);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one statement (prepared on first use on this connection). Errors
  // carry the server's message; the SQLSTATE of the last failure stays in
  // last_sqlstate() so callers can tell a serialization failure from a bug.
  Result<Rows> Exec(const char* sql, const Params& params = Params());
  // Runs statements without parameters (may hold several, separated by ';').
  Status ExecScript(const char* sql);

  const std::string& last_sqlstate() const { return last_sqlstate_; }
  void clear_last_sqlstate() { last_sqlstate_.clear(); }
  // True while the server is reachable; after a network or server failure the
  // pool reconnects through Reset().
  bool healthy() const { return PQstatus(conn_) == CONNECTION_OK; }
  // Whether the server still holds this idle connection: libpq learns that
  // the server closed it (a restart) only by reading, so this reads what is
  // pending without blocking. False also when it was unhealthy already.
  bool StillOpen() {
    if (!healthy()) return false;
    return PQconsumeInput(conn_) == 1 && healthy();
  }
  bool in_transaction() const;
  Status Reset();

 private:
  explicit Connection(PGconn* conn) : conn_(conn) {}
  Status ErrorFrom(PGresult* result, const char* what, const char* sql);

  PGconn* conn_;
  std::unordered_map<std::string, std::string> prepared_;  // sql -> statement name
  std::string last_sqlstate_;
};

// SQLSTATEs after which a transaction is simply run again.
bool IsRetryable(const std::string& sqlstate);

}  // namespace idlegrid::store::pg
