#pragma once
// Client subcommands. Each returns the process exit code:
// 0 ok, 1 the operation failed, 2 invalid input or usage.
#include <string>

#include "cli/client.h"

namespace idlegrid::cli {

struct CommonFlags {
  ClientConfig config;
  std::string config_file;
  bool json = false;
};

int Submit(const CommonFlags& f, const std::string& manifest_path, bool wait);
int Status_(const CommonFlags& f, const std::string& job_id, bool wait);
int Jobs(const CommonFlags& f);
// Why the job's queued tasks wait: filter counts and candidates' scores.
int Explain(const CommonFlags& f, const std::string& job_id);
// The spot market's order book.
int Market(const CommonFlags& f);
int Nodes(const CommonFlags& f);
int Drain(const CommonFlags& f, const std::string& node_id, const std::string& deadline, bool undo);
int Logs(const CommonFlags& f, const std::string& job_id, bool follow);
int Fetch(const CommonFlags& f, const std::string& job_id, const std::string& dir);
int Cancel(const CommonFlags& f, const std::string& job_id);
// The user's decision for tasks lost with their node: run again, or fail them.
int ResolveLost(const CommonFlags& f, const std::string& job_id, bool retry);
int ImagePush(const CommonFlags& f, const std::string& archive);
int ArtifactPush(const CommonFlags& f, const std::string& file);

// Human-readable summary of an advertisement (`agent --discover`).
void PrintAdvertisement(const v1::Advertisement& ad);

// Validates a manifest without a coordinator (prints the parsed spec).
int Validate(const CommonFlags& f, const std::string& manifest_path);

}  // namespace idlegrid::cli
