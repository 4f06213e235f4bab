#include "store/sqlite/db.h"

#include <spdlog/spdlog.h>

namespace idlegrid::store {
namespace {

// A full disk is the coordinator's passing state, not the caller's error:
// Unavailable, which agents and clients retry, and which names the cause.
Status Failure(int rc, const std::string& what) {
  if ((rc & 0xff) == SQLITE_FULL) {
    return Status::Unavailable(what + " (the coordinator's database disk is full; nothing was written, call again " +
                               "once its operator frees space)");
  }
  return Status::Internal(what);
}

}  // namespace

Stmt::Stmt(sqlite3* db, const char* sql) : db_(db) {
  if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) {
    status_ = Status::Internal(std::string("sqlite prepare: ") + sqlite3_errmsg(db) + " in: " + sql);
    stmt_ = nullptr;
  }
}

Stmt::~Stmt() { sqlite3_finalize(stmt_); }

Stmt& Stmt::Bind(int i, int64_t v) {
  if (stmt_) sqlite3_bind_int64(stmt_, i, v);
  return *this;
}
Stmt& Stmt::Bind(int i, double v) {
  if (stmt_) sqlite3_bind_double(stmt_, i, v);
  return *this;
}
Stmt& Stmt::Bind(int i, std::string_view v) {
  if (stmt_) sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::BindBlob(int i, std::string_view v) {
  if (stmt_) sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}

bool Stmt::Step() {
  if (!stmt_) return false;
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) status_ = Failure(rc, std::string("sqlite step: ") + sqlite3_errmsg(db_));
  return false;
}

Stmt& Stmt::Reset() {
  if (stmt_) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  return *this;
}

int64_t Stmt::Int(int col) const { return sqlite3_column_int64(stmt_, col); }
double Stmt::Double(int col) const { return sqlite3_column_double(stmt_, col); }
std::string Stmt::Text(int col) const {
  const unsigned char* t = sqlite3_column_text(stmt_, col);
  return t ? std::string(reinterpret_cast<const char*>(t), sqlite3_column_bytes(stmt_, col)) : "";
}
std::string Stmt::Blob(int col) const {
  const void* b = sqlite3_column_blob(stmt_, col);
  return b ? std::string(static_cast<const char*>(b), sqlite3_column_bytes(stmt_, col)) : "";
}
bool Stmt::IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

Status Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err); rc != SQLITE_OK) {
    std::string msg = err ? err : "unknown";
    sqlite3_free(err);
    return Failure(rc, "sqlite: " + msg);
  }
  return Status::Ok();
}

Transaction::Transaction(sqlite3* db) : db_(db) { status_ = Exec(db, "BEGIN IMMEDIATE"); }

Transaction::~Transaction() {
  if (done_ || !status_.ok()) return;
  // Should it fail, the transaction stays open and the next BEGIN IMMEDIATE
  // fails with that error: nothing is committed by accident.
  if (Status st = Exec(db_, "ROLLBACK"); !st.ok()) spdlog::error("sqlite: rollback failed: {}", st.message());
}

Status Transaction::Commit() {
  Status st = Exec(db_, "COMMIT");
  // On failure the destructor rolls back, so the connection never stays inside a transaction.
  if (st.ok()) done_ = true;
  return st;
}

}  // namespace idlegrid::store
