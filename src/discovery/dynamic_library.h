#pragma once
// A shared library opened at run time with dlopen, closed when destroyed. The
// GPU loaders use it so that no NVIDIA header or library is needed to build
// idlegrid, and a host without a driver still runs the agent.
#include <string>

#include "common/status.h"

namespace idlegrid::discovery {

class DynamicLibrary {
 public:
  // Opens `path` (a file path or a soname searched the usual dlopen way).
  // Fails with NotFound carrying dlerror()'s text when it cannot be loaded.
  static Result<DynamicLibrary> Open(const std::string& path);

  DynamicLibrary(DynamicLibrary&& other) noexcept;
  DynamicLibrary& operator=(DynamicLibrary&& other) noexcept;
  DynamicLibrary(const DynamicLibrary&) = delete;
  DynamicLibrary& operator=(const DynamicLibrary&) = delete;
  ~DynamicLibrary();

  // The address of `name`, or nullptr when the library does not export it.
  // Valid while this object lives.
  void* Symbol(const char* name) const;

  // Symbol() cast to a function pointer type, e.g. Function<int (*)(int*)>("f").
  template <typename Fn>
  Fn Function(const char* name) const {
    return reinterpret_cast<Fn>(Symbol(name));
  }

 private:
  explicit DynamicLibrary(void* handle) : handle_(handle) {}
  void* handle_ = nullptr;
};

}  // namespace idlegrid::discovery
