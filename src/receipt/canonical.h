#pragma once
// The canonical byte encoding of a protobuf message: what receipts sign.
//
// JSON with every field present (defaults included, so leaving a field out
// and writing its default encode alike), object keys sorted, no whitespace:
//   integers     decimal (64-bit ones too: no JavaScript number rounding)
//   bool         true / false
//   string       JSON string, only '"', '\\' and bytes below 0x20 escaped
//                (\u00XX); other bytes are copied, so UTF-8 stays itself
//   bytes        lowercase hex, as a JSON string
//   enum         its number
//   message      a nested object; an unset message field encodes as its
//                default instance (all fields at their defaults)
//   repeated     an array, in order
// Fields added after receipts v1 (OutputFile.chunks) are left out while
// unset, so receipts signed before them keep their bytes.
// Keys are the fields' proto names (snake_case). Floating point and map
// fields are refused: neither has one obvious byte form across versions and
// languages, and money is integer micro-credits anyway.
//
// Pure; deterministic for a given message definition. Unknown fields (from a
// newer peer) are refused rather than silently dropped from what is signed.
#include <string>

#include <google/protobuf/message.h>

#include "common/status.h"

namespace idlegrid::receipt {

// InvalidArgument naming the field for a float, double or map field, or when
// the message carries unknown fields.
Result<std::string> CanonicalJson(const google::protobuf::Message& message);

}  // namespace idlegrid::receipt
