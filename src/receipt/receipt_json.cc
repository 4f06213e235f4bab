#include "receipt/receipt_json.h"

#include <google/protobuf/util/json_util.h>

namespace idlegrid::receipt {

std::string ReceiptJson(const v1::Receipt& receipt) {
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(receipt, &out, opts);
  return out;
}

}  // namespace idlegrid::receipt
