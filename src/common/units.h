#pragma once
// How sizes read in messages: one formatter for every "... GiB" the user sees.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace idlegrid {

// Bytes as GiB with one fraction digit, truncated (a size just below a
// minimum never prints as the minimum, free space is never overstated) and
// without a trailing ".0": 80 GiB -> "80 GiB", 79.99 GiB -> "79.9 GiB".
inline std::string FormatGiB(uint64_t bytes) {
  const double tenths = std::floor(static_cast<double>(bytes) / static_cast<double>(1ull << 30) * 10);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.1f", tenths / 10);
  std::string text = buf;
  if (text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0) text.resize(text.size() - 2);
  return text + " GiB";
}

}  // namespace idlegrid
