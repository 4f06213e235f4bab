#pragma once
// Checkpoint/resume on the agent: restores a task's latest checkpoint
// into the attempt's checkpoint directory before the container starts, and
// while it runs uploads what changed there and reports the directory's full
// file list to the coordinator (a CHECKPOINTED report under the attempt's
// lease epoch). Files are content-addressed: one that did not change since
// the last upload (or the restore) is not sent again, and one larger than
// kCheckpointChunkedAbove moves in chunks (jobs/lease.h), only those the
// coordinator does not hold for the task yet.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"
#include "jobs/lease.h"

namespace idlegrid::agent {

// When a checkpoint file is chunked, and how (jobs/lease.h; tests make them small).
struct CheckpointChunking {
  uint64_t above = jobs::kCheckpointChunkedAbove;
  uint64_t chunk = jobs::kCheckpointChunkBytes;
};

class CheckpointSync {
 public:
  using UploadFn = std::function<Result<v1::OutputFile>(const std::string& path, const std::string& rel)>;
  using DownloadFn = std::function<Status(const std::string& digest, const std::string& path)>;
  using ReportFn = std::function<Status(const std::vector<v1::OutputFile>& files)>;

  using Chunking = CheckpointChunking;
  // `dir` is the host directory mounted at the job's checkpoint path; chunks
  // pass through `dir`-chunks beside it (not mounted in the container).
  CheckpointSync(std::string dir, UploadFn upload, ReportFn report, Chunking chunking = CheckpointChunking());
  ~CheckpointSync();

  // Downloads `checkpoint`'s files into the directory. InvalidArgument for a
  // malformed file list; the download's error otherwise.
  Status Restore(const v1::Checkpoint& checkpoint, const DownloadFn& download);
  // Uploads new or changed files and reports the directory if its contents
  // differ from the last report. Symlinks and special files are skipped; a
  // file written to while it is read keeps its last uploaded version in the
  // report (or stays out of it) until a sync finds it settled.
  Status SyncOnce();
  // Calls SyncOnce every `interval` on its own thread until Stop().
  void Start(std::chrono::milliseconds interval);
  // Stops the thread (waiting for a sync in progress). Idempotent.
  void Stop();

  uint32_t reports() const;

 private:
  // nullopt when the file changed while it was read (nothing of it is held).
  Result<std::optional<v1::OutputFile>> SyncChunked(const std::string& path, const std::string& rel);
  Status RestoreChunked(const v1::OutputFile& f, const std::string& path, const DownloadFn& download);

  const std::string dir_;
  const std::string chunk_dir_;
  const UploadFn upload_;
  const ReportFn report_;
  const Chunking chunking_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                           // guarded by mu_
  uint32_t reports_ = 0;                        // guarded by mu_
  std::mutex sync_mu_;                          // one sync at a time
  std::map<std::string, v1::OutputFile> held_;  // rel path -> what the coordinator has; sync_mu_
  std::set<std::string> held_chunks_;           // chunk digests it has for the task; sync_mu_
  std::vector<v1::OutputFile> last_reported_;   // guarded by sync_mu_
  std::thread thread_;
};

}  // namespace idlegrid::agent
