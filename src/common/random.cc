#include "common/random.h"

#include <sodium.h>

#include <cstdlib>
#include <vector>

namespace idlegrid {

std::string RandomHex(size_t bytes) {
  if (sodium_init() < 0) std::abort();  // no entropy source: nothing is safe
  std::vector<unsigned char> raw(bytes);
  randombytes_buf(raw.data(), raw.size());
  std::string hex(bytes * 2 + 1, '\0');
  sodium_bin2hex(hex.data(), hex.size(), raw.data(), raw.size());
  hex.pop_back();
  return hex;
}

std::string NewId(const std::string& prefix) { return prefix + "-" + RandomHex(6); }

}  // namespace idlegrid
