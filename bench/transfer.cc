// bench/transfer: one artifact (1 GiB by default) up and down through a real
// coordinator process on loopback (TLS, the CLI's client: cli::Client), with
// digests verified at both ends; then the same size cut off at 50% and
// resumed, each way: what the resume moved, as a share of the size. Prints
// figures; asserts nothing but that every transfer verified.
//
//   bench_transfer [MiB] [--runs N] [--shared-dir DIR]
//
// --shared-dir puts the coordinator's artifacts (and PKI) in DIR: on a tmpfs,
// it shows the transfer path without the disk.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "common/artifact_client.h"
#include "common/digest.h"
#include "common/fs.h"
#include "e2e/harness.h"

using namespace idlegrid;
using namespace idlegrid::testing;

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Fast, incompressible filler (xorshift), written in 8 MiB blocks.
bool WriteTestFile(const std::string& path, uint64_t size, uint64_t seed) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  std::string block(8 << 20, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint64_t done = 0; done < size;) {
    for (size_t i = 0; i + 8 <= block.size(); i += 8) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      std::memcpy(block.data() + i, &x, 8);
    }
    size_t n = static_cast<size_t>(std::min<uint64_t>(block.size(), size - done));
    if (std::fwrite(block.data(), 1, n, f) != n) {
      std::fclose(f);
      return false;
    }
    done += n;
  }
  return std::fclose(f) == 0;
}

// CPU seconds (user + system) this process, and the coordinator, used so far:
// with two cores shared, whether a direction is CPU-bound and on which side.
double OwnCpuSeconds() {
  rusage ru;
  ::getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double ProcessCpuSeconds(pid_t pid) {
  auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return 0;
  // Fields 14 and 15 (utime, stime), counted after the ")" that ends the name.
  size_t at = stat->rfind(')');
  unsigned long utime = 0, stime = 0;
  if (at == std::string::npos ||
      std::sscanf(stat->c_str() + at + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2) {
    return 0;
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

struct CpuMark {
  double client, server;
};

CpuMark MarkCpu(pid_t server) { return {OwnCpuSeconds(), ProcessCpuSeconds(server)}; }

std::string CpuSince(const CpuMark& from, pid_t server) {
  CpuMark now = MarkCpu(server);
  char line[96];
  std::snprintf(line, sizeof(line), "cpu: client %.2f s, coordinator %.2f s", now.client - from.client,
                now.server - from.server);
  return line;
}

double MBps(uint64_t bytes, double seconds) { return static_cast<double>(bytes) / 1e6 / seconds; }

std::string CpuModel() {
  auto info = ReadFile("/proc/cpuinfo");
  if (!info.ok()) return "?";
  size_t at = info->find("model name");
  if (at == std::string::npos) return "?";
  at = info->find(':', at);
  return info->substr(at + 2, info->find('\n', at) - at - 2);
}

int Fail(const std::string& what, const Status& st) {
  std::fprintf(stderr, "%s: %s\n", what.c_str(), st.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t mib = 1024;
  int runs = 3;
  std::string shared_dir;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--shared-dir" && i + 1 < argc) {
      shared_dir = argv[++i];
    } else {
      mib = std::strtoull(arg.c_str(), nullptr, 10);
    }
  }
  const uint64_t size = mib << 20;
  Grid grid("bench-transfer");
  grid.shared_dir = shared_dir;  // where the coordinator keeps its artifacts ("": its data dir)
  if (Status st = grid.StartCoordinator(); !st.ok()) return Fail("cannot start the coordinator", st);
  cli::Client* client = grid.client();
  const pid_t server = grid.coordinator->pid();
  std::printf(
      "machine: %u cores, %s; artifact %llu MiB, chunk %zu KiB, TLS on loopback, artifacts in %s; "
      "best of %d runs\n",
      std::thread::hardware_concurrency(), CpuModel().c_str(), static_cast<unsigned long long>(mib),
      kTransferChunkBytes >> 10, shared_dir.empty() ? grid.coordinator_dir.c_str() : shared_dir.c_str(), runs);

  // Each run uploads a file of its own (a second upload of one would find it
  // present and send nothing), then downloads it.
  double best_up = 0, best_down = 0;
  for (int run = 0; run < runs; ++run) {
    const std::string file = grid.root + "/whole-" + std::to_string(run) + ".bin";
    if (!WriteTestFile(file, size, 1 + static_cast<uint64_t>(run))) return Fail("write " + file, Status::Internal(""));
    // The client's share of an upload: hashing the file before it is sent.
    auto t0 = Clock::now();
    auto local = Sha256File(file);
    const double hash_s = Seconds(Clock::now() - t0);
    if (!local.ok()) return Fail("hash", local.status());

    TransferStats up;
    CpuMark cpu = MarkCpu(server);
    t0 = Clock::now();
    auto ref = client->UploadFile(file, "input", false, {}, &up);
    const double up_s = Seconds(Clock::now() - t0);
    if (!ref.ok()) return Fail("upload", ref.status());
    if (ref->digest() != *local || up.bytes_moved != size) {
      return Fail("upload",
                  Status::DataLoss("stored " + ref->digest() + " after " + std::to_string(up.bytes_moved) + " bytes"));
    }
    std::printf(
        "upload   %6.0f MB/s  (%.2f s, of which the client hashing the file first: %.2f s alone); %s; "
        "digest verified\n",
        MBps(size, up_s), up_s, hash_s, CpuSince(cpu, server).c_str());
    best_up = std::max(best_up, MBps(size, up_s));

    const std::string out = grid.root + "/downloaded.bin";
    TransferStats down;
    cpu = MarkCpu(server);
    t0 = Clock::now();
    Status got = client->DownloadTo(ref->digest(), out, {}, &down);
    const double down_s = Seconds(Clock::now() - t0);
    if (!got.ok()) return Fail("download", got);
    std::printf("download %6.0f MB/s  (%.2f s); %s; digest verified as it was written\n", MBps(size, down_s), down_s,
                CpuSince(cpu, server).c_str());
    best_down = std::max(best_down, MBps(size, down_s));
    std::remove(out.c_str());
    std::remove(file.c_str());
  }
  std::printf("best: upload %.0f MB/s, download %.0f MB/s\n", best_up, best_down);

  // Cut off at half by cancelling the stream's context, then resumed.
  const std::string resumed = grid.root + "/resumed.bin", out = grid.root + "/resumed-down.bin";
  if (!WriteTestFile(resumed, size, 1000)) return Fail("write " + resumed, Status::Internal(""));
  grpc::ClientContext* latest = nullptr;
  auto contexts = [&] {
    auto ctx = client->Context(0);
    latest = ctx.get();
    return ctx;
  };
  auto cut_at_half = [&](uint64_t so_far) {
    if (so_far >= size / 2 && latest) latest->TryCancel();
  };
  auto share = [&](uint64_t bytes) { return 100.0 * static_cast<double>(bytes) / static_cast<double>(size); };
  TransferStats cut_up, resume_up;
  auto cut = UploadArtifactFile(client->stub(), contexts, resumed, "input", {}, cut_at_half, &cut_up);
  if (cut.ok()) return Fail("cut upload", Status::Internal("was not cut off"));
  auto t0 = Clock::now();
  auto rest = client->UploadFile(resumed, "input", false, {}, &resume_up);
  const double rest_up_s = Seconds(Clock::now() - t0);
  if (!rest.ok()) return Fail("resumed upload", rest.status());
  if (auto want = Sha256File(resumed); !want.ok() || *want != rest->digest()) {
    return Fail("resumed upload", Status::DataLoss("stored " + rest->digest()));
  }
  std::printf(
      "upload cut at 50%%: the resume began at %.1f%% and moved %.1f%% of the size (%.2f s); "
      "both tries together %.1f%%; digest verified\n",
      share(resume_up.resumed_at), share(resume_up.bytes_moved), rest_up_s,
      share(cut_up.bytes_moved + resume_up.bytes_moved));

  TransferStats cut_down, resume_down;
  Status cut_got = DownloadArtifactFile(client->stub(), contexts, rest->digest(), out, {}, cut_at_half, &cut_down);
  if (cut_got.ok()) return Fail("cut download", Status::Internal("was not cut off"));
  t0 = Clock::now();
  Status rest_got = client->DownloadTo(rest->digest(), out, {}, &resume_down);
  const double rest_down_s = Seconds(Clock::now() - t0);
  if (!rest_got.ok()) return Fail("resumed download", rest_got);
  std::printf(
      "download cut at 50%%: the resume began at %.1f%% and moved %.1f%% of the size (%.2f s); "
      "both tries together %.1f%%; digest verified\n",
      share(resume_down.resumed_at), share(resume_down.bytes_moved), rest_down_s,
      share(cut_down.bytes_moved + resume_down.bytes_moved));
  return 0;
}
