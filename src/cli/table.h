#pragma once
// Aligned text tables for list commands (`jobs`): each column as wide as its
// widest cell, two spaces between columns, the last column not padded (so
// lines carry no trailing blanks). Widths count bytes of ASCII and UTF-8
// code points alike, so a name with non-ASCII letters still lines up. Pure.
#include <string>
#include <vector>

namespace idlegrid::cli {

// `rows[0]` is the header; rows may have fewer cells than the header (the
// missing ones are empty). One line per row, each ending in '\n'.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace idlegrid::cli
