#include "common/json_writer.h"

#include <cstdio>

namespace idlegrid {

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          *out += buf;
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

std::string JsonString(std::string_view s) {
  std::string out;
  AppendJsonString(s, &out);
  return out;
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  Separate();
  AppendJsonString(key, &out_);
  out_.push_back(':');
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view s) {
  Separate();
  AppendJsonString(s, &out_);
  return *this;
}

JsonWriter& JsonWriter::Strings(const std::vector<std::string>& items) {
  BeginArray();
  for (const std::string& s : items) String(s);
  return EndArray();
}

JsonWriter& JsonWriter::Raw(std::string_view text) {
  Separate();
  out_ += text;
  return *this;
}

JsonWriter& JsonWriter::Open(char c) {
  Separate();
  out_.push_back(c);
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::Close(char c) {
  out_.push_back(c);
  first_.pop_back();
  return *this;
}

// A comma before every element but the first of its container; none after a key.
void JsonWriter::Separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (first_.empty()) return;
  if (!first_.back()) out_.push_back(',');
  first_.back() = false;
}

}  // namespace idlegrid
