#pragma once
// Thin RAII wrappers over the SQLite C API with Status errors.
#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace idlegrid::store {

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool prepared() const { return stmt_ != nullptr; }
  Stmt& Bind(int i, int64_t v);
  Stmt& Bind(int i, double v);
  Stmt& Bind(int i, std::string_view v);  // TEXT
  Stmt& BindBlob(int i, std::string_view v);
  // SQLITE_ROW -> true, SQLITE_DONE -> false; errors in status().
  bool Step();
  // Back to before the first Step, bindings cleared, to run again (a
  // statement prepared once for a whole batch).
  Stmt& Reset();
  const Status& status() const { return status_; }
  int64_t Int(int col) const;
  double Double(int col) const;
  std::string Text(int col) const;
  std::string Blob(int col) const;
  bool IsNull(int col) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  Status status_;
};

Status Exec(sqlite3* db, const char* sql);

// BEGIN IMMEDIATE ... COMMIT, rolled back on destruction unless committed.
class Transaction {
 public:
  explicit Transaction(sqlite3* db);
  ~Transaction();
  const Status& status() const { return status_; }
  Status Commit();

 private:
  sqlite3* db_;
  bool done_ = false;
  Status status_;
};

}  // namespace idlegrid::store
