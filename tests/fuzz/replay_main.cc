// The main() of a fuzz target built without libFuzzer (the ordinary gcc
// build): runs LLVMFuzzerTestOneInput on each file named, and on every
// regular file of each directory named (sorted by name, not recursing), so
// ctest replays the committed corpus (tests/fuzz/corpus/<target>/) as a
// regression test. A broken invariant aborts, which fails the test; a missing
// or unreadable argument fails it too, so a corpus that vanished is noticed.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// libFuzzer calls this first when a target defines it; none of ours does.
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

bool RunFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return false;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return false;
  }
  // A copy of its own, so reading past the end is caught under a sanitizer.
  std::vector<uint8_t> data(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(data.empty() ? nullptr : data.data(), data.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  size_t ran = 0;
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg = argv[i];
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec)) {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::directory_iterator(arg, ec)) {
        if (entry.is_regular_file(ec)) files.push_back(entry.path());
      }
      if (ec) {
        std::fprintf(stderr, "cannot list %s: %s\n", arg.c_str(), ec.message().c_str());
        ok = false;
        continue;
      }
      std::sort(files.begin(), files.end());
      for (const auto& file : files) {
        if (RunFile(file)) {
          ++ran;
        } else {
          ok = false;
        }
      }
    } else if (RunFile(arg)) {
      ++ran;
    } else {
      ok = false;
    }
  }
  std::printf("%s: ran %zu input(s)\n", argc > 0 ? argv[0] : "fuzz", ran);
  return ok ? 0 : 1;
}
