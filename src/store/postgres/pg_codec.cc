#include "store/postgres/pg_codec.h"

#include <sstream>

namespace idlegrid::store::pg {

std::string ByteaLiteral(const std::string& bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\\x";
  out.reserve(2 + 2 * bytes.size());
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

ActiveAttempt ReadActiveAttempt(const Rows& rows, int row) {
  ActiveAttempt a;
  a.attempt_id = rows.Text(row, 0);
  a.job_id = rows.Text(row, 1);
  a.index = static_cast<uint32_t>(rows.Int(row, 2));
  a.node_id = rows.Text(row, 3);
  a.state = static_cast<v1::TaskState>(rows.Int(row, 4));
  a.cpu = rows.Double(row, 5);
  a.memory = static_cast<uint64_t>(rows.Int(row, 6));
  a.gpus = static_cast<uint32_t>(rows.Int(row, 7));
  return a;
}

}  // namespace idlegrid::store::pg
