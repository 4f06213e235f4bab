#include "ops/backup.h"

#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <system_error>
#include <vector>

#include "common/fs.h"
#include "common/version.h"

namespace idlegrid::ops {

namespace fs = std::filesystem;

namespace {

constexpr char kManifest[] = "backup.json";
// Beside the store and the artifacts: what a coordinator keeps in its
// shared directory (coordinator_server.cc). The CA key is what must never be
// lost: without it every agent enrolls again.
const std::vector<std::string> kSecretFiles = {"join.token", "admin.token", "receipt-key.fingerprint",
                                               "readiness-image.pub"};

bool IsPostgres(const std::string& db) { return db.rfind("postgresql://", 0) == 0 || db.rfind("postgres://", 0) == 0; }

// An absent or empty directory: somewhere a copy may go.
Status CheckFreshTarget(const std::string& dir, const std::string& what) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return Status::Ok();
  if (!fs::is_directory(dir, ec)) return Status::AlreadyExists(what + " " + dir + " exists and is not a directory");
  if (!fs::is_empty(dir, ec)) return Status::AlreadyExists(what + " " + dir + " is not empty: give a new directory");
  return Status::Ok();
}

// SQLite's online backup of `from` into a new file `to`: pages copied while
// the coordinator keeps writing (WAL readers do not block it); a step that
// meets a lock waits and tries again.
Result<uint64_t> CopyDatabase(const std::string& from, const std::string& to) {
  sqlite3* src = nullptr;
  sqlite3* dst = nullptr;
  auto close = [&] {
    sqlite3_close(src);
    sqlite3_close(dst);
  };
  if (sqlite3_open_v2(from.c_str(), &src, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::string why = src ? sqlite3_errmsg(src) : "out of memory";
    close();
    return Status::FailedPrecondition("opening the store " + from + " for a backup: " + why);
  }
  if (sqlite3_open_v2(to.c_str(), &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    std::string why = dst ? sqlite3_errmsg(dst) : "out of memory";
    close();
    return Status::Internal("creating " + to + ": " + why);
  }
  sqlite3_busy_timeout(src, 5000);
  sqlite3_backup* backup = sqlite3_backup_init(dst, "main", src, "main");
  if (!backup) {
    std::string why = sqlite3_errmsg(dst);
    close();
    return Status::Internal("backup of " + from + ": " + why);
  }
  int rc = SQLITE_OK;
  for (int tries = 0; tries < 600; ++tries) {  // a minute of locks at most
    rc = sqlite3_backup_step(backup, -1);
    if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED) break;
    sqlite3_sleep(100);
  }
  sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE) {
    std::string why = sqlite3_errstr(rc);
    close();
    return Status::Unavailable("backup of " + from + " did not finish: " + why);
  }
  close();
  std::error_code ec;
  return static_cast<uint64_t>(fs::file_size(to, ec));
}

// PRAGMA integrity_check on a copy: "ok", or what is wrong (DataLoss).
Status CheckDatabase(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return Status::DataLoss(path + " cannot be opened as a SQLite database");
  }
  sqlite3_stmt* stmt = nullptr;
  std::string verdict = "no answer";
  if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    verdict = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  } else {
    verdict = sqlite3_errmsg(db);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  if (verdict != "ok") return Status::DataLoss(path + " fails SQLite's integrity check: " + verdict);
  return Status::Ok();
}

// Copies a file keeping its mode (keys stay 0600). NotFound when `from` is
// gone (a temporary file renamed away, a blob deleted while the tree is walked).
Status CopyOne(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  if (!ec) fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::permissions(to, fs::status(from).permissions(), ec);
  if (ec == std::errc::no_such_file_or_directory) return Status::NotFound(from.string() + " is gone");
  if (ec) return Status::Internal("copying " + from.string() + " to " + to.string() + ": " + ec.message());
  return Status::Ok();
}

// A directory as given, without a trailing separator ("out/" -> "out"), so
// that "out.partial" is a sibling, not a file inside it.
std::string NoTrailingSlash(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// Every regular file under `from` whose walk `keep` accepts, into `to`.
template <typename Keep>
Status CopyTree(const fs::path& from, const fs::path& to, Keep keep, uint64_t* files, uint64_t* bytes) {
  std::error_code ec;
  if (!fs::exists(from, ec)) return Status::Ok();
  for (auto it = fs::recursive_directory_iterator(from, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file(ec) || !keep(it->path())) continue;
    const fs::path rel = fs::relative(it->path(), from, ec);
    Status copied = CopyOne(it->path(), to / rel);
    if (copied.code() == Code::kNotFound) continue;  // gone since it was listed: not part of the copy
    IG_RETURN_IF_ERROR(copied);
    ++*files;
    *bytes += it->file_size(ec);
  }
  if (ec) return Status::Internal("reading " + from.string() + ": " + ec.message());
  return Status::Ok();
}

// A published blob: sha256/<ab>/<64 hex>; partial uploads and temp files stay behind.
bool IsPublishedBlob(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.size() == 64 && name.find_first_not_of("0123456789abcdef") == std::string::npos &&
         p.parent_path().parent_path().filename() == "sha256";
}

std::string ManifestJson(const BackupReport& r) {
  const auto now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  return std::string("{\"format\": 1, \"idlegrid_version\": \"") + BuildVersion() +
         "\", \"created_ms\": " + std::to_string(now) + ", \"database\": \"" +
         (r.database_copied ? "sqlite" : "postgresql (pg_dump)") + "\", \"artifacts\": " + std::to_string(r.artifacts) +
         ", \"artifact_bytes\": " + std::to_string(r.artifact_bytes) + "}\n";
}

}  // namespace

Result<BackupReport> Backup(const BackupOptions& given) {
  BackupOptions o = given;
  o.out_dir = NoTrailingSlash(o.out_dir);
  const std::string shared = o.shared_dir.empty() ? o.data_dir : o.shared_dir;
  if (!PathExists(shared + "/pki/ca.key")) {
    return Status::FailedPrecondition(shared +
                                      " holds no coordinator (no pki/ca.key): give its --data-dir (and "
                                      "--shared-dir if it has one)");
  }
  IG_RETURN_IF_ERROR(CheckFreshTarget(o.out_dir, "backup directory"));
  const std::string work = o.out_dir + ".partial";
  std::error_code ec;
  fs::remove_all(work, ec);  // an earlier interrupted backup
  IG_RETURN_IF_ERROR(MakeDirs(work, 0700));

  BackupReport report;
  // The database first: artifacts are stored before a row names them, so
  // copying them afterwards finds every blob the copied rows name.
  const std::string db = o.db.empty() ? o.data_dir + "/state.db" : o.db;
  if (!IsPostgres(db)) {
    IG_ASSIGN_OR_RETURN(report.database_bytes, CopyDatabase(db, work + "/state.db"));
    IG_RETURN_IF_ERROR(CheckDatabase(work + "/state.db"));
    report.database_copied = true;
  }
  uint64_t pki_bytes = 0;
  IG_RETURN_IF_ERROR(CopyTree(
      shared + "/pki", work + "/pki", [](const fs::path&) { return true; }, &report.files, &pki_bytes));
  for (const std::string& name : kSecretFiles) {
    if (!PathExists(shared + "/" + name)) continue;
    IG_RETURN_IF_ERROR(CopyOne(shared + "/" + name, work + "/" + name));
    ++report.files;
  }
  IG_RETURN_IF_ERROR(
      CopyTree(shared + "/artifacts", work + "/artifacts", IsPublishedBlob, &report.artifacts, &report.artifact_bytes));
  IG_RETURN_IF_ERROR(WriteFileAtomic(work + "/" + kManifest, ManifestJson(report), 0600));
  fs::remove(o.out_dir, ec);  // an empty directory given as the target
  fs::rename(work, o.out_dir, ec);
  if (ec) return Status::Internal("renaming " + work + " to " + o.out_dir + ": " + ec.message());
  return report;
}

Status Restore(const RestoreOptions& given) {
  RestoreOptions o = given;
  o.data_dir = NoTrailingSlash(o.data_dir);
  if (!PathExists(o.backup_dir + "/" + kManifest)) {
    return Status::InvalidArgument(o.backup_dir + " is not a backup (no " + kManifest +
                                   "): give a directory `idlegrid backup` wrote");
  }
  if (!PathExists(o.backup_dir + "/pki/ca.key")) {
    return Status::DataLoss(o.backup_dir + " has no pki/ca.key: without it every agent would have to join again");
  }
  const bool has_db = PathExists(o.backup_dir + "/state.db");
  if (has_db) IG_RETURN_IF_ERROR(CheckDatabase(o.backup_dir + "/state.db"));
  IG_RETURN_IF_ERROR(CheckFreshTarget(o.data_dir, "data directory"));
  const std::string work = o.data_dir + ".restoring";
  std::error_code ec;
  fs::remove_all(work, ec);
  IG_RETURN_IF_ERROR(MakeDirs(work, 0700));
  uint64_t files = 0, bytes = 0;
  IG_RETURN_IF_ERROR(CopyTree(
      o.backup_dir, work, [](const fs::path& p) { return p.filename() != kManifest; }, &files, &bytes));
  fs::remove(o.data_dir, ec);
  fs::rename(work, o.data_dir, ec);
  if (ec) return Status::Internal("renaming " + work + " to " + o.data_dir + ": " + ec.message());
  return Status::Ok();
}

}  // namespace idlegrid::ops
