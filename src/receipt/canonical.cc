#include "receipt/canonical.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/unknown_field_set.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <vector>

namespace idlegrid::receipt {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

void AppendString(const std::string& s, std::string& out) {
  out.push_back('"');
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
}

void AppendHex(const std::string& bytes, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  out.push_back('"');
}

Status AppendMessage(const Message& m, std::string& out);

// One value of `f` (element `index` when repeated).
Status AppendValue(const Message& m, const FieldDescriptor* f, int index, std::string& out) {
  const Reflection* r = m.GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      out += std::to_string(rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f));
      return Status::Ok();
    case FieldDescriptor::CPPTYPE_INT64:
      out += std::to_string(rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f));
      return Status::Ok();
    case FieldDescriptor::CPPTYPE_UINT32:
      out += std::to_string(rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f));
      return Status::Ok();
    case FieldDescriptor::CPPTYPE_UINT64:
      out += std::to_string(rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f));
      return Status::Ok();
    case FieldDescriptor::CPPTYPE_BOOL:
      out += (rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f)) ? "true" : "false";
      return Status::Ok();
    case FieldDescriptor::CPPTYPE_ENUM:
      out += std::to_string(rep ? r->GetRepeatedEnumValue(m, f, index) : r->GetEnumValue(m, f));
      return Status::Ok();
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string scratch;
      const std::string& s =
          rep ? r->GetRepeatedStringReference(m, f, index, &scratch) : r->GetStringReference(m, f, &scratch);
      if (f->type() == FieldDescriptor::TYPE_BYTES) {
        AppendHex(s, out);
      } else {
        AppendString(s, out);
      }
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      // An unset singular message reads as its default instance.
      return AppendMessage(rep ? r->GetRepeatedMessage(m, f, index) : r->GetMessage(m, f), out);
    case FieldDescriptor::CPPTYPE_FLOAT:
    case FieldDescriptor::CPPTYPE_DOUBLE:
      break;
  }
  return Status::InvalidArgument("field " + f->full_name() + " is floating point: it has no canonical encoding");
}

// Fields added to signed messages after receipts v1 are encoded only when
// set, so a receipt signed before they existed still verifies (its bytes
// are the same); set, they are signed like any other field.
bool AddedAfterV1(const FieldDescriptor* f) {
  static const std::set<std::string> kAdded = {"idlegrid.v1.OutputFile.chunks"};
  return kAdded.count(f->full_name()) > 0;
}

bool IsUnset(const Message& m, const FieldDescriptor* f) {
  return f->is_repeated() ? m.GetReflection()->FieldSize(m, f) == 0 : !m.GetReflection()->HasField(m, f);
}

Status AppendMessage(const Message& m, std::string& out) {
  const auto* d = m.GetDescriptor();
  if (!m.GetReflection()->GetUnknownFields(m).empty()) {
    return Status::InvalidArgument(d->full_name() + " carries fields this version does not know");
  }
  std::vector<const FieldDescriptor*> fields;
  for (int i = 0; i < d->field_count(); ++i) fields.push_back(d->field(i));
  std::sort(fields.begin(), fields.end(),
            [](const FieldDescriptor* a, const FieldDescriptor* b) { return a->name() < b->name(); });
  out.push_back('{');
  bool first = true;
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldDescriptor* f = fields[i];
    if (f->is_map())
      return Status::InvalidArgument("field " + f->full_name() + " is a map: it has no canonical encoding");
    if (AddedAfterV1(f) && IsUnset(m, f)) continue;
    if (!first) out.push_back(',');
    first = false;
    AppendString(f->name(), out);
    out.push_back(':');
    if (f->is_repeated()) {
      out.push_back('[');
      const int n = m.GetReflection()->FieldSize(m, f);
      for (int j = 0; j < n; ++j) {
        if (j > 0) out.push_back(',');
        IG_RETURN_IF_ERROR(AppendValue(m, f, j, out));
      }
      out.push_back(']');
    } else {
      IG_RETURN_IF_ERROR(AppendValue(m, f, 0, out));
    }
  }
  out.push_back('}');
  return Status::Ok();
}

}  // namespace

Result<std::string> CanonicalJson(const google::protobuf::Message& message) {
  std::string out;
  IG_RETURN_IF_ERROR(AppendMessage(message, out));
  return out;
}

}  // namespace idlegrid::receipt
