// Writing JSON by hand where the exact bytes matter: OCI configs, image
// manifests and seccomp profiles are hashed, so their key order and escapes
// must not depend on a library's map order or version.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace idlegrid {

// Appends `s` as a JSON string literal (quotes, backslashes and control
// characters escaped; other bytes, UTF-8 included, copied as they are).
void AppendJsonString(std::string_view s, std::string* out);
std::string JsonString(std::string_view s);

// Appends JSON to a string; the caller nests Begin/End correctly and writes
// keys in the order it wants them.
class JsonWriter {
 public:
  JsonWriter& BeginObject() { return Open('{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view s);
  JsonWriter& Number(uint64_t n) { return Raw(std::to_string(n)); }
  JsonWriter& SignedNumber(int64_t n) { return Raw(std::to_string(n)); }
  JsonWriter& Bool(bool b) { return Raw(b ? "true" : "false"); }
  JsonWriter& Null() { return Raw("null"); }
  JsonWriter& Strings(const std::vector<std::string>& items);
  std::string Take() { return std::move(out_); }

 private:
  JsonWriter& Raw(std::string_view text);
  JsonWriter& Open(char c);
  JsonWriter& Close(char c);
  void Separate();

  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace idlegrid
