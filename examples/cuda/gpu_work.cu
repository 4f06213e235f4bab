// A fixed, deterministic amount of GPU work for scripts/gpu-check.sh: LAUNCHES
// launches of an integer-mixing kernel over 16M threads, then a checksum of
// the result. Integer arithmetic only, so every GPU and every run gives the
// same checksum. Prints the checksum and its own elapsed times; with OUTDIR,
// also writes them to OUTDIR/result.txt.
//
//   gpu-work [LAUNCHES [OUTDIR]]     (LAUNCHES: default 4000)
#include <cuda_runtime.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

constexpr uint32_t kThreads = 1u << 24;
constexpr uint32_t kRoundsPerLaunch = 256;
constexpr unsigned long kDefaultLaunches = 4000;

__global__ void Mix(uint32_t* state, uint32_t rounds) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kThreads) return;
  uint32_t x = state[i];
  for (uint32_t r = 0; r < rounds; ++r) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    x = x * 2654435761u + i;
  }
  state[i] = x;
}

double NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int Fail(const char* what, cudaError_t err) {
  std::fprintf(stderr, "gpu-work: %s: %s (%s)\n", what, cudaGetErrorString(err), cudaGetErrorName(err));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const double start_ms = NowMs();
  unsigned long launches = kDefaultLaunches;
  if (argc > 1) {
    char* end = nullptr;
    errno = 0;
    launches = std::strtoul(argv[1], &end, 10);
    if (errno != 0 || *end != '\0' || launches == 0) {
      std::fprintf(stderr, "usage: %s [LAUNCHES [OUTDIR]]  (LAUNCHES: a positive decimal)\n", argv[0]);
      return 2;
    }
  }
  const char* out_dir = argc > 2 ? argv[2] : nullptr;

  cudaError_t err = cudaSetDevice(0);
  if (err != cudaSuccess) return Fail("cudaSetDevice(0)", err);
  cudaDeviceProp prop;
  err = cudaGetDeviceProperties(&prop, 0);
  if (err != cudaSuccess) return Fail("cudaGetDeviceProperties", err);

  std::vector<uint32_t> host(kThreads);
  for (uint32_t i = 0; i < kThreads; ++i) host[i] = i * 2246822519u + 1;
  uint32_t* device = nullptr;
  err = cudaMalloc(&device, kThreads * sizeof(uint32_t));
  if (err != cudaSuccess) return Fail("cudaMalloc", err);
  err = cudaMemcpy(device, host.data(), kThreads * sizeof(uint32_t), cudaMemcpyHostToDevice);
  if (err != cudaSuccess) return Fail("cudaMemcpy to the device", err);
  const double ready_ms = NowMs();

  constexpr uint32_t kBlock = 256;
  for (unsigned long l = 0; l < launches; ++l) {
    Mix<<<kThreads / kBlock, kBlock>>>(device, kRoundsPerLaunch);
  }
  err = cudaGetLastError();
  if (err != cudaSuccess) return Fail("kernel launch", err);
  err = cudaDeviceSynchronize();
  if (err != cudaSuccess) return Fail("kernel run", err);
  const double kernels_done_ms = NowMs();

  err = cudaMemcpy(host.data(), device, kThreads * sizeof(uint32_t), cudaMemcpyDeviceToHost);
  if (err != cudaSuccess) return Fail("cudaMemcpy from the device", err);
  cudaFree(device);
  uint64_t checksum = 0;
  for (uint32_t i = 0; i < kThreads; ++i) checksum = checksum * 1099511628211ull + host[i];
  const double end_ms = NowMs();

  char text[512];
  std::snprintf(text, sizeof(text),
                "device=%s\nlaunches=%lu\nchecksum=%016llx\ninit_ms=%.1f\nkernel_ms=%.1f\nelapsed_ms=%.1f\n",
                prop.name, launches, static_cast<unsigned long long>(checksum), ready_ms - start_ms,
                kernels_done_ms - ready_ms, end_ms - start_ms);
  std::fputs(text, stdout);
  if (out_dir != nullptr) {
    std::string path = std::string(out_dir) + "/result.txt";
    FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr || std::fputs(text, f) < 0 || std::fclose(f) != 0) {
      std::fprintf(stderr, "gpu-work: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
      return 1;
    }
  }
  return 0;
}
