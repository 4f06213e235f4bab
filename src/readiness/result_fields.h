#pragma once
// Strict parsing of the numbers in a benchmark's result.txt, shared by the CPU
// and GPU judges: the text comes from an untrusted node.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace idlegrid::readiness {

// Digits only (hex digits too when base is 16), at most `max_digits`, no sign or prefix.
std::optional<uint64_t> ParseUnsigned(std::string_view text, int base, size_t max_digits);
// A finite, non-negative decimal number; no sign, "inf", "nan" or hex.
std::optional<double> ParseNonNegativeDecimal(std::string_view text);

}  // namespace idlegrid::readiness
