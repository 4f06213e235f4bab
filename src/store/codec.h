#pragma once
// Decoding of stored values both store backends share (header-only: the
// backends are separate libraries).
#include <string>
#include <string_view>
#include <vector>

#include "capacity/node_capacity.h"
#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::store {

// "a,b," -> {"a", "b"} (device and excluded-node lists are stored so); the
// one parser of such lists is capacity's.
inline std::vector<std::string> SplitCommaList(std::string_view s) {
  std::vector<std::string> out;
  capacity::SplitDeviceList(s, &out);
  return out;
}

// A stored JobSpec blob; DataLoss if it does not parse.
inline Result<v1::JobSpec> ParseSpec(const std::string& blob) {
  v1::JobSpec spec;
  if (!spec.ParseFromString(blob)) return Status::DataLoss("stored job spec does not parse");
  return spec;
}

}  // namespace idlegrid::store
