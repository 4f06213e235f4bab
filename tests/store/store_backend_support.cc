#include <libpq-fe.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>

#include "store/store_backend.h"

namespace idlegrid::store::backends {

namespace {

// --- SQLite -------------------------------------------------------------------

class SqliteDatabase : public TestDatabase {
 public:
  explicit SqliteDatabase(std::string dir) : dir_(std::move(dir)), path_(dir_ + "/idlegrid.db") {}
  ~SqliteDatabase() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& location() const override { return path_; }

  Result<int64_t> QueryInt(const std::string& sql) override {
    auto text = QueryText(sql);
    if (!text.ok()) return text.status();
    if (text->empty()) return int64_t{-1};
    return static_cast<int64_t>(std::strtoll(text->c_str(), nullptr, 10));
  }
  Status Exec(const std::string& sql) override {
    sqlite3* db = nullptr;
    Status st;
    if (sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK ||
        sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      st = Status::Internal(std::string("sqlite: ") + (db ? sqlite3_errmsg(db) : "out of memory") + " in: " + sql);
    }
    sqlite3_close(db);
    return st;
  }
  Result<int64_t> SchemaVersion() override { return QueryInt("PRAGMA user_version"); }
  Status SetSchemaVersion(int64_t version) override { return Exec("PRAGMA user_version = " + std::to_string(version)); }
  Result<bool> HasTable(const std::string& table) override {
    IG_ASSIGN_OR_RETURN(int64_t n,
                        QueryInt("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '" + table + "'"));
    return n == 1;
  }
  Result<bool> IntegrityOk() override {
    auto text = QueryText("PRAGMA integrity_check");
    if (!text.ok()) return text.status();
    return *text == "ok";
  }

 protected:
  Result<std::string> QueryFirstText(const std::string& sql) override { return QueryText(sql); }
  std::string SchemaOutlineQuery() const override {
    return "SELECT group_concat(x, char(10)) FROM ("
           "SELECT m.name || '.' || p.name AS x FROM sqlite_master m, pragma_table_info(m.name) p "
           "WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' "
           "UNION ALL SELECT 'index ' || name FROM sqlite_master "
           "WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex_%')";
  }

 private:
  Result<std::string> QueryText(const std::string& sql) {
    sqlite3* db = nullptr;
    std::string value;
    Status st;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK ||
        sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      st = Status::Internal(std::string("sqlite: ") + (db ? sqlite3_errmsg(db) : "out of memory") + " in: " + sql);
    } else if (sqlite3_step(stmt) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(stmt, 0);
      if (t) value = reinterpret_cast<const char*>(t);
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    if (!st.ok()) return st;
    return value;
  }

  std::string dir_;
  std::string path_;
};

// --- PostgreSQL ---------------------------------------------------------------

// The server URL with every table name resolved in `schema`.
std::string InSchema(const std::string& url, const std::string& schema) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" + schema;
}

struct PrivateCluster {
  std::mutex mu;
  bool tried = false;
  Status status;
  std::string url;
  std::string dir;
  pid_t owner = 0;
};

PrivateCluster& Cluster() {
  static auto* cluster = new PrivateCluster();  // never destroyed: the atexit hook uses it
  return *cluster;
}

std::string ClusterScript() { return std::string(IDLEGRID_SOURCE_DIR) + "/scripts/pg-test-cluster.sh"; }

// "'SCRIPT' VERB 'DIR'" (appended piecewise: GCC 12 warns falsely on a + chain).
std::string ShellCommand(const char* verb, const std::string& dir) {
  std::string cmd = "'";
  cmd += ClusterScript();
  cmd += "' ";
  cmd += verb;
  cmd += " '";
  cmd += dir;
  cmd += "'";
  return cmd;
}

void StopPrivateCluster() {
  PrivateCluster& c = Cluster();
  // Forked children that exit normally must not stop their parent's server.
  if (c.owner != ::getpid() || c.dir.empty()) return;
  std::string cmd = ShellCommand("stop", c.dir) + " >/dev/null 2>&1";
  (void)std::system(cmd.c_str());
}

// The URL of a server where tests may create databases.
Result<std::string> ServerUrl() {
  if (const char* env = std::getenv("IDLEGRID_TEST_PG_URL"); env != nullptr && *env != '\0') return std::string(env);
  PrivateCluster& c = Cluster();
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.tried) {
    if (!c.status.ok()) return c.status;
    return c.url;
  }
  c.tried = true;
  char tmpl[] = "/tmp/igpg.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return c.status = Status::Internal("mkdtemp failed");
  c.dir = tmpl;
  // With our pid: the cluster is stopped even if this process is killed.
  std::string cmd = ShellCommand("start", c.dir) + " " + std::to_string(::getpid());
  FILE* out = ::popen(cmd.c_str(), "r");
  if (out == nullptr) return c.status = Status::Internal("cannot run " + ClusterScript());
  char buf[512];
  std::string printed;
  while (std::fgets(buf, sizeof buf, out) != nullptr) printed += buf;
  int rc = ::pclose(out);
  while (!printed.empty() && (printed.back() == '\n' || printed.back() == ' ')) printed.pop_back();
  c.owner = ::getpid();
  std::atexit(StopPrivateCluster);
  if (rc != 0 || printed.rfind("postgresql://", 0) != 0) {
    return c.status = Status::FailedPrecondition(
               "cannot start a throwaway PostgreSQL cluster (" + ClusterScript() +
               " failed, see its message above); the PostgreSQL tests need Debian's 'postgresql' package: "
               "run scripts/install-deps.sh, or point IDLEGRID_TEST_PG_URL at a server");
  }
  c.url = printed;
  return c.url;
}

class PgConn {
 public:
  static Result<PgConn> Connect(const std::string& url) {
    PGconn* conn = PQconnectdb(url.c_str());
    if (PQstatus(conn) != CONNECTION_OK) {
      std::string msg = PQerrorMessage(conn);
      PQfinish(conn);
      return Status::Unavailable("cannot connect to " + url + ": " + msg);
    }
    PQclear(PQexec(conn, "SET client_min_messages = warning"));
    return PgConn(conn);
  }
  PgConn(PgConn&& o) noexcept : conn_(o.conn_) { o.conn_ = nullptr; }
  ~PgConn() { PQfinish(conn_); }

  // The first column of the first row as text; nullopt for no row.
  Result<std::optional<std::string>> Query(const std::string& sql) {
    PGresult* r = PQexec(conn_, sql.c_str());
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
      std::string msg = PQresultErrorMessage(r);
      PQclear(r);
      return Status::Internal("postgres: " + msg + " in: " + sql);
    }
    std::optional<std::string> value;
    if (st == PGRES_TUPLES_OK && PQntuples(r) > 0 && PQnfields(r) > 0) value = PQgetvalue(r, 0, 0);
    PQclear(r);
    return value;
  }

 private:
  explicit PgConn(PGconn* conn) : conn_(conn) {}
  PGconn* conn_;
};

// A schema of its own per test (creating a whole database takes a
// checkpoint, a schema a few milliseconds); the store resolves every name
// through search_path, so it sees a fresh, empty database.
class PostgresDatabase : public TestDatabase {
 public:
  PostgresDatabase(std::string server_url, std::string schema, PgConn conn)
      : server_url_(std::move(server_url)),
        schema_(std::move(schema)),
        url_(InSchema(server_url_, schema_)),
        conn_(std::move(conn)) {}
  ~PostgresDatabase() override { (void)conn_->Query("DROP SCHEMA IF EXISTS " + schema_ + " CASCADE"); }
  const std::string& location() const override { return url_; }

  Result<int64_t> QueryInt(const std::string& sql) override {
    IG_ASSIGN_OR_RETURN(auto text, conn_->Query(sql));
    if (!text) return int64_t{-1};
    return static_cast<int64_t>(std::strtoll(text->c_str(), nullptr, 10));
  }
  Status Exec(const std::string& sql) override { return conn_->Query(sql).status(); }
  Result<int64_t> SchemaVersion() override { return QueryInt("SELECT version FROM idlegrid_schema"); }
  Status SetSchemaVersion(int64_t version) override {
    return Exec("UPDATE idlegrid_schema SET version = " + std::to_string(version));
  }
  Result<bool> HasTable(const std::string& table) override {
    IG_ASSIGN_OR_RETURN(int64_t n, QueryInt("SELECT COUNT(*) FROM pg_tables WHERE schemaname = '" + schema_ +
                                            "' AND tablename = '" + table + "'"));
    return n == 1;
  }
  Result<bool> IntegrityOk() override {
    IG_ASSIGN_OR_RETURN(int64_t one, QueryInt("SELECT 1"));
    return one == 1;
  }

 protected:
  Result<std::string> QueryFirstText(const std::string& sql) override {
    IG_ASSIGN_OR_RETURN(auto text, conn_->Query(sql));
    return text.value_or("");
  }
  // Indexes a PRIMARY KEY or UNIQUE constraint implies are left out, as
  // SQLite's autoindexes are; so is the migration bookkeeping table.
  std::string SchemaOutlineQuery() const override {
    return "SELECT string_agg(x, E'\\n') FROM ("
           "SELECT table_name || '.' || column_name AS x FROM information_schema.columns "
           "WHERE table_schema = '" +
           schema_ +
           "' AND table_name <> 'idlegrid_schema' "
           "UNION ALL SELECT 'index ' || i.indexname FROM pg_indexes i WHERE i.schemaname = '" +
           schema_ +
           "' "
           "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)) s";
  }

 private:
  std::string server_url_;
  std::string schema_;
  std::string url_;
  std::optional<PgConn> conn_;
};

Result<std::unique_ptr<TestDatabase>> CreatePostgres() {
  IG_ASSIGN_OR_RETURN(std::string server, ServerUrl());
  static std::atomic<int> counter{0};
  std::string schema = "igtest_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  IG_ASSIGN_OR_RETURN(PgConn conn, PgConn::Connect(InSchema(server, schema)));
  IG_RETURN_IF_ERROR(conn.Query("DROP SCHEMA IF EXISTS " + schema + " CASCADE").status());
  IG_RETURN_IF_ERROR(conn.Query("CREATE SCHEMA " + schema).status());
  return std::unique_ptr<TestDatabase>(new PostgresDatabase(server, schema, std::move(conn)));
}

}  // namespace

Result<std::vector<std::string>> TestDatabase::SchemaOutline() {
  IG_ASSIGN_OR_RETURN(std::string joined, QueryFirstText(SchemaOutlineQuery()));
  std::vector<std::string> lines;
  std::istringstream in(joined);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::string BackendName(BackendKind kind) { return kind == BackendKind::kSqlite ? "Sqlite" : "Postgres"; }

Result<std::unique_ptr<TestDatabase>> CreateTestDatabase(BackendKind kind) {
  if (kind == BackendKind::kPostgres) return CreatePostgres();
  char tmpl[] = "/tmp/store_test.XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return Status::Internal("mkdtemp failed");
  return std::unique_ptr<TestDatabase>(new SqliteDatabase(tmpl));
}

int64_t LatestSchemaVersion(BackendKind kind) {
  // What a fresh database migrates to, read once per process.
  static std::mutex mu;
  static std::map<BackendKind, int64_t> latest;
  std::lock_guard<std::mutex> lock(mu);
  auto it = latest.find(kind);
  if (it != latest.end()) return it->second;
  int64_t version = -1;
  if (auto db = CreateTestDatabase(kind); db.ok()) {
    if (auto store = OpenStore((*db)->location()); store.ok()) {
      store->reset();
      version = (*db)->SchemaVersion().ok() ? *(*db)->SchemaVersion() : -1;
    }
  }
  return latest[kind] = version;
}

}  // namespace idlegrid::store::backends
