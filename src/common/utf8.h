#pragma once
// UTF-8 validity, for parsers whose output becomes protobuf strings (which
// must be UTF-8: a stray byte would make the message unserializable, or
// different after a JSON round trip, far from where it came in).
#include <cstddef>
#include <string_view>

namespace idlegrid {

// The offset of the first byte of `text` that does not begin a well-formed
// UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, nothing past
// U+10FFFF), or std::string_view::npos when all of it is UTF-8.
size_t FirstInvalidUtf8(std::string_view text);

}  // namespace idlegrid
