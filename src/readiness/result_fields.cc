#include "readiness/result_fields.h"

#include <charconv>
#include <cmath>

namespace idlegrid::readiness {

std::optional<uint64_t> ParseUnsigned(std::string_view text, int base, size_t max_digits) {
  if (text.empty() || text.size() > max_digits) return std::nullopt;
  for (char c : text) {
    bool digit = (c >= '0' && c <= '9') || (base == 16 && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
    if (!digit) return std::nullopt;
  }
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> ParseNonNegativeDecimal(std::string_view text) {
  if (text.empty() || text[0] < '0' || text[0] > '9') return std::nullopt;
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::general);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

}  // namespace idlegrid::readiness
