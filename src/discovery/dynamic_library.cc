#include "discovery/dynamic_library.h"

#include <dlfcn.h>

#include <utility>

namespace idlegrid::discovery {

Result<DynamicLibrary> DynamicLibrary::Open(const std::string& path) {
  // RTLD_LOCAL keeps the driver's symbols out of the global namespace, so two
  // loaders (or a test's fake) can never bind to each other's functions.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Status::NotFound(why != nullptr ? why : "dlopen failed");
  }
  return DynamicLibrary(handle);
}

DynamicLibrary::DynamicLibrary(DynamicLibrary&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

DynamicLibrary& DynamicLibrary::operator=(DynamicLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_ != nullptr) dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

DynamicLibrary::~DynamicLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

void* DynamicLibrary::Symbol(const char* name) const {
  if (handle_ == nullptr) return nullptr;
  return dlsym(handle_, name);
}

}  // namespace idlegrid::discovery
