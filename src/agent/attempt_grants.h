#pragma once
// Which attempt each artifact transfer is for: the coordinator serves
// an agent only the artifacts of an attempt it holds, and only with that
// attempt's artifact token. The agent's attempts register here while they
// run; a download is sent under an attempt that needs the digest, an upload
// under the attempt whose scratch directory the file is in. Thread-safe.
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::agent {

struct AttemptGrant {
  std::string attempt_id;
  std::string token;
};

class AttemptGrants {
 public:
  // Registers the assignment: its image archive, inputs and checkpoint.
  void Add(const v1::Assignment& a);
  void Remove(const std::string& attempt_id);
  // A registered attempt that reads `digest`.
  std::optional<AttemptGrant> ForDownload(const std::string& digest) const;
  // The attempt whose scratch directory (`attempts_dir`/<attempt id>/...)
  // holds `path`.
  std::optional<AttemptGrant> ForUpload(const std::string& path, const std::string& attempts_dir) const;

 private:
  struct Entry {
    std::string token;
    std::set<std::string> digests;
  };
  mutable std::mutex mu_;
  std::map<std::string, Entry> attempts_;  // by attempt id
};

}  // namespace idlegrid::agent
