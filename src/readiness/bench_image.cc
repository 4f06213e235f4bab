#include "readiness/bench_image.h"

#include "common/fs.h"

namespace idlegrid::readiness {

Result<image::BuiltImage> BuildBenchImage(const std::string& bench_binary_path,
                                          const std::string& out_path) {
  IG_ASSIGN_OR_RETURN(std::string binary, ReadFile(bench_binary_path));
  if (binary.empty()) {
    return Status::InvalidArgument("benchmark binary " + bench_binary_path + " is empty");
  }
  return image::BuildOciArchive({image::ImageFile{kBenchPathInImage, std::move(binary), 0755}},
                                {kBenchPathInImage}, kBenchImageRefName, out_path);
}

}  // namespace idlegrid::readiness
