#pragma once
// The readiness benchmark image: the static benchmark program (built from
// src/readiness/bench_main.c as idlegrid-bench) in a one-layer OCI image
// archive, built by the coordinator itself, offline, without podman.
#include <string>

#include "common/status.h"
#include "image/oci_builder.h"

namespace idlegrid::readiness {

inline constexpr char kBenchImageRefName[] = "idlegrid/readiness-bench:1";
inline constexpr char kBenchPathInImage[] = "/bench";

// Reads the static benchmark executable at `bench_binary_path` and writes an
// OCI image archive to `out_path` holding it at /bench (mode 0755) with
// entrypoint ["/bench"] and ref name kBenchImageRefName; run it with
// BenchArgs (readiness.h) as arguments. The same binary always gives the same
// archive and digests. NotFound if the binary cannot be read,
// InvalidArgument if it is empty, otherwise image::BuildOciArchive's errors.
// The binary is not checked to be static: the image holds nothing else, so a
// dynamic one fails when run. Thread-compatible (writes `out_path`).
Result<image::BuiltImage> BuildBenchImage(const std::string& bench_binary_path, const std::string& out_path);

inline constexpr char kGpuBenchImageRefName[] = "idlegrid/readiness-gpu-bench:1";
inline constexpr char kGpuBenchPathInImage[] = "/gpu-bench";
// Where the image's glibc lives; jobs set LD_LIBRARY_PATH to it (CDI adds libcuda).
inline constexpr char kGpuBenchLibraryPath[] = "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/usr/lib64";

// The GPU benchmark (gpu_bench.c, which loads the driver with dlopen) at
// /gpu-bench plus this host's glibc: the loader, libc, and the libm, libdl,
// libpthread and librt the driver's libcuda.so.1 names; the driver itself
// arrives through CDI when the job runs. x86_64 paths. NotFound if a file
// cannot be read.
Result<image::BuiltImage> BuildGpuBenchImage(const std::string& gpu_bench_binary_path, const std::string& out_path);

}  // namespace idlegrid::readiness
