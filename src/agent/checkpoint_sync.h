#pragma once
// Checkpoint/resume on the agent (R17): restores a task's latest checkpoint
// into the attempt's checkpoint directory before the container starts, and
// while it runs uploads what changed there and reports the directory's full
// file list to the coordinator (a CHECKPOINTED report under the attempt's
// lease epoch). Files are content-addressed: one that did not change since
// the last upload (or the restore) is not sent again.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::agent {

class CheckpointSync {
 public:
  using UploadFn = std::function<Result<v1::OutputFile>(const std::string& path, const std::string& rel)>;
  using DownloadFn = std::function<Status(const std::string& digest, const std::string& path)>;
  using ReportFn = std::function<Status(const std::vector<v1::OutputFile>& files)>;

  // `dir` is the host directory mounted at the job's checkpoint path.
  CheckpointSync(std::string dir, UploadFn upload, ReportFn report);
  ~CheckpointSync();

  // Downloads `checkpoint`'s files into the directory. InvalidArgument for a
  // malformed file list; the download's error otherwise.
  Status Restore(const v1::Checkpoint& checkpoint, const DownloadFn& download);
  // Uploads new or changed files and reports the directory if its contents
  // differ from the last report. Symlinks and special files are skipped.
  Status SyncOnce();
  // Calls SyncOnce every `interval` on its own thread until Stop().
  void Start(std::chrono::milliseconds interval);
  // Stops the thread (waiting for a sync in progress). Idempotent.
  void Stop();

  uint32_t reports() const;

 private:
  const std::string dir_;
  const UploadFn upload_;
  const ReportFn report_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                               // guarded by mu_
  uint32_t reports_ = 0;                            // guarded by mu_
  std::mutex sync_mu_;                              // one sync at a time
  std::map<std::string, std::string> held_;         // rel path -> digest the coordinator has; sync_mu_
  std::vector<v1::OutputFile> last_reported_;       // guarded by sync_mu_
  std::thread thread_;
};

}  // namespace idlegrid::agent
