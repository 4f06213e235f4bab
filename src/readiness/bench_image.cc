#include "readiness/bench_image.h"

#include "common/fs.h"

namespace idlegrid::readiness {

Result<image::BuiltImage> BuildBenchImage(const std::string& bench_binary_path, const std::string& out_path) {
  IG_ASSIGN_OR_RETURN(std::string binary, ReadFile(bench_binary_path));
  if (binary.empty()) {
    return Status::InvalidArgument("benchmark binary " + bench_binary_path + " is empty");
  }
  return image::BuildOciArchive({image::ImageFile{kBenchPathInImage, std::move(binary), 0755}}, {kBenchPathInImage},
                                kBenchImageRefName, out_path);
}

Result<image::BuiltImage> BuildGpuBenchImage(const std::string& gpu_bench_binary_path, const std::string& out_path) {
  std::vector<image::ImageFile> files;
  IG_ASSIGN_OR_RETURN(std::string binary, ReadFile(gpu_bench_binary_path));
  if (binary.empty()) return Status::InvalidArgument("GPU benchmark binary " + gpu_bench_binary_path + " is empty");
  files.push_back({kGpuBenchPathInImage, std::move(binary), 0755});
  // The loader and libc for the benchmark itself; libm, libdl, libpthread
  // and librt because the driver's libcuda.so.1 (mounted by CDI, which
  // brings the driver's libraries but not glibc) names them.
  for (const char* lib : {"/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libc.so.6",
                          "/lib/x86_64-linux-gnu/libm.so.6", "/lib/x86_64-linux-gnu/libdl.so.2",
                          "/lib/x86_64-linux-gnu/libpthread.so.0", "/lib/x86_64-linux-gnu/librt.so.1"}) {
    IG_ASSIGN_OR_RETURN(std::string content, ReadFile(lib));
    files.push_back({std::string(lib).substr(1), std::move(content), 0755});
  }
  return image::BuildOciArchive(files, {kGpuBenchPathInImage}, kGpuBenchImageRefName, out_path);
}

}  // namespace idlegrid::readiness
