#pragma once
// `idlegrid backup` and `idlegrid restore` (docs/operations.md): a copy of a
// coordinator's state taken while it runs, and that copy put back into a new
// data directory. The SQLite store is copied with SQLite's online backup API
// (a consistent snapshot, never a torn copy of a live WAL database); the PKI
// (whose CA key every agent pins), the secrets and the published artifacts
// are copied as files, after the database, so every artifact the copied
// database names is in the copy. A PostgreSQL store is pg_dump's to copy.
#include <cstdint>
#include <string>

#include "common/status.h"

namespace idlegrid::ops {

struct BackupOptions {
  std::string data_dir;    // the coordinator's --data-dir
  std::string shared_dir;  // its --shared-dir ("" : data_dir)
  std::string db;          // its --db ("" : data_dir/state.db)
  std::string out_dir;     // must not exist yet (or be empty)
};

struct BackupReport {
  bool database_copied = false;  // false for PostgreSQL (pg_dump's job)
  uint64_t database_bytes = 0;
  uint64_t artifacts = 0;
  uint64_t artifact_bytes = 0;
  uint64_t files = 0;  // PKI and secrets
};

// Writes the copy under out_dir.partial and renames it to out_dir once
// whole, so an interrupted backup never looks like one. FailedPrecondition
// when data_dir holds no coordinator (no CA key), AlreadyExists when out_dir
// is not empty; the database copy is integrity-checked before the rename.
Result<BackupReport> Backup(const BackupOptions& options);

struct RestoreOptions {
  std::string backup_dir;  // what Backup wrote
  std::string data_dir;    // the new --data-dir: must not exist yet (or be empty)
};

// Checks the backup (its manifest, CA key and the database's integrity),
// copies it under data_dir.restoring and renames that to data_dir. The
// coordinator started on data_dir afterwards is the one backed up: same CA,
// same secrets, so its agents reconnect without enrolling again.
Status Restore(const RestoreOptions& options);

}  // namespace idlegrid::ops
