#include "image/image_config.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

namespace idlegrid::image {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

const Value* Field(const Struct& object, const std::string& key) {
  auto it = object.fields().find(key);
  return it == object.fields().end() || it->second.has_null_value() ? nullptr : &it->second;
}

Status ReadStringList(const Struct& object, const std::string& key, std::vector<std::string>* out) {
  const Value* v = Field(object, key);
  if (v == nullptr) return Status::Ok();
  if (!v->has_list_value()) return Status::InvalidArgument("image config." + key + " is not a list");
  for (const Value& item : v->list_value().values()) {
    if (!item.has_string_value()) return Status::InvalidArgument("image config." + key + " holds a non-string");
    out->push_back(item.string_value());
  }
  return Status::Ok();
}

Status ReadString(const Struct& object, const std::string& key, std::string* out) {
  const Value* v = Field(object, key);
  if (v == nullptr) return Status::Ok();
  if (!v->has_string_value()) return Status::InvalidArgument("image config." + key + " is not a string");
  *out = v->string_value();
  return Status::Ok();
}

}  // namespace

Result<ImageConfig> ParseImageConfig(std::string_view config_json) {
  Struct doc;
  auto parsed = google::protobuf::util::JsonStringToMessage(std::string(config_json), &doc);
  if (!parsed.ok()) return Status::InvalidArgument("image config is not a JSON object: " + parsed.ToString());
  ImageConfig out;
  const Value* config = Field(doc, "config");
  if (config == nullptr) return out;
  if (!config->has_struct_value()) return Status::InvalidArgument("image config.config is not an object");
  const Struct& c = config->struct_value();
  IG_RETURN_IF_ERROR(ReadStringList(c, "Entrypoint", &out.entrypoint));
  IG_RETURN_IF_ERROR(ReadStringList(c, "Cmd", &out.cmd));
  IG_RETURN_IF_ERROR(ReadStringList(c, "Env", &out.env));
  IG_RETURN_IF_ERROR(ReadString(c, "WorkingDir", &out.working_dir));
  IG_RETURN_IF_ERROR(ReadString(c, "User", &out.user));
  return out;
}

}  // namespace idlegrid::image
