#pragma once
// Decoding of stored values both store backends share (header-only: the
// backends are separate libraries).
#include <sstream>
#include <string>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::store {

// "a,b," -> {"a", "b"} (device and excluded-node lists are stored so).
inline std::vector<std::string> SplitCommaList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// A stored JobSpec blob; DataLoss if it does not parse.
inline Result<v1::JobSpec> ParseSpec(const std::string& blob) {
  v1::JobSpec spec;
  if (!spec.ParseFromString(blob)) return Status::DataLoss("stored job spec does not parse");
  return spec;
}

}  // namespace idlegrid::store
