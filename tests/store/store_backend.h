#pragma once
// The store backends the contract tests run against: a fresh database per
// test, opened through store::OpenStore, plus direct SQL reads that bypass
// the store (to check what is really on disk).
//
// PostgreSQL tests need a server. IDLEGRID_TEST_PG_URL names one (a URL to a
// database where the test may CREATE DATABASE, e.g. what
// scripts/pg-test-cluster.sh start prints; scripts/test.sh starts one for the
// whole run). Without it the first PostgreSQL test of the process starts a
// private throwaway cluster with that script and stops it at exit. Missing
// server binaries are a test failure, not a skip.
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "common/status.h"
#include "store/store.h"

namespace idlegrid::store::backends {

enum class BackendKind { kSqlite, kPostgres };

std::string BackendName(BackendKind kind);
// How gtest prints a test's parameter.
inline void PrintTo(BackendKind kind, std::ostream* os) { *os << BackendName(kind); }

class TestDatabase {
 public:
  virtual ~TestDatabase() = default;
  // What store::OpenStore takes: a file path or a postgresql:// URL. Child
  // processes open their own stores from it.
  virtual const std::string& location() const = 0;
  // The first column of the first row of `sql` as an integer; -1 if no row.
  virtual Result<int64_t> QueryInt(const std::string& sql) = 0;
  // Runs a statement that returns nothing.
  virtual Status Exec(const std::string& sql) = 0;
  virtual Result<int64_t> SchemaVersion() = 0;
  virtual Status SetSchemaVersion(int64_t version) = 0;
  virtual Result<bool> HasTable(const std::string& table) = 0;
  // The logical schema, sorted: "table.column" for every column of the
  // store's tables and "index NAME" for each index it created (not those a
  // key implies). Types are left out: each backend spells them its own way.
  Result<std::vector<std::string>> SchemaOutline();
  // The backend's own consistency check of the database (SQLite's
  // integrity_check; PostgreSQL survives a killed client by design).
  virtual Result<bool> IntegrityOk() = 0;

 protected:
  // The first column of the first row of `sql` as text; "" if no row.
  virtual Result<std::string> QueryFirstText(const std::string& sql) = 0;
  // A query whose one value is SchemaOutline's lines joined by newlines.
  virtual std::string SchemaOutlineQuery() const = 0;
};

// A fresh, empty database. FailedPrecondition (with what to install) when
// the PostgreSQL server binaries are missing.
Result<std::unique_ptr<TestDatabase>> CreateTestDatabase(BackendKind kind);

// The schema version this build's migrations produce (that of a fresh
// database); -1 if one cannot be made.
int64_t LatestSchemaVersion(BackendKind kind);

}  // namespace idlegrid::store::backends
