// Picks the store backend from the location the user gave (--db).
#include <string_view>

#include "store/store.h"

namespace idlegrid::store {

Result<std::unique_ptr<Store>> OpenStore(const std::string& location) {
  std::string_view l = location;
  if (l.starts_with("postgresql://") || l.starts_with("postgres://")) return OpenPostgresStore(location);
  if (location.empty()) return Status::InvalidArgument("no database given");
  return OpenSqliteStore(location);
}

}  // namespace idlegrid::store
