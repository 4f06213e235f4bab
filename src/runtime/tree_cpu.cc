#include "runtime/tree_cpu.h"

#include <unistd.h>

#include <charconv>
#include <string>

#include "common/fs.h"
#include "runtime/process_freeze.h"

namespace idlegrid::runtime {
namespace {

std::optional<ProcCpu> ReadProcCpu(int pid) {
  Result<std::string> stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return std::nullopt;
  return ParseProcStat(*stat);
}

}  // namespace

std::optional<ProcCpu> ParseProcStat(std::string_view line) {
  // comm may hold spaces and parentheses: fields resume after the last ')'.
  const size_t close = line.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = line.substr(close + 1);
  // Fields after comm, from 3 (state): ppid is 4, utime..cstime 14..17,
  // starttime 22.
  uint64_t field[23] = {};
  int n = 3;
  size_t i = 0;
  while (n <= 22) {
    while (i < rest.size() && rest[i] == ' ') ++i;
    if (i >= rest.size()) return std::nullopt;
    size_t end = rest.find(' ', i);
    if (end == std::string_view::npos) end = rest.size();
    if (n != 3) {
      const char* first = rest.data() + i;
      const char* last = rest.data() + end;
      int64_t value = 0;
      auto [ptr, ec] = std::from_chars(first, last, value);
      if (ec != std::errc() || ptr != last) return std::nullopt;
      // cutime/cstime are signed in the kernel's format; never negative in practice.
      field[n] = value < 0 ? 0 : static_cast<uint64_t>(value);
    }
    i = end;
    ++n;
  }
  ProcCpu out;
  out.ppid = static_cast<int>(field[4]);
  out.own_ticks = field[14] + field[15];
  out.children_ticks = field[16] + field[17];
  out.start_ticks = field[22];
  return out;
}

bool TreeCpuSampler::Sample() {
  std::optional<ProcCpu> root = ReadProcCpu(root_);
  if (!root) return false;
  if (!root_start_) root_start_ = root->start_ticks;
  if (root->start_ticks != *root_start_) return false;
  uint64_t ticks = 0;
  for (int pid : DescendantsOf(root_, ReadParentMap())) {
    std::optional<ProcCpu> p = pid == root_ ? root : ReadProcCpu(pid);
    // Started before the root: its pid was reused between the two reads.
    if (p && p->start_ticks >= *root_start_) ticks += p->own_ticks + p->children_ticks;
  }
  static const long kTicksPerSecond = ::sysconf(_SC_CLK_TCK);
  const uint64_t usec = ticks * 1'000'000 / static_cast<uint64_t>(kTicksPerSecond > 0 ? kTicksPerSecond : 100);
  if (usec > usec_) usec_ = usec;
  ++samples_;
  return true;
}

TreeCpuWatch::TreeCpuWatch(std::string pidfile, std::chrono::milliseconds interval)
    : pidfile_(std::move(pidfile)), interval_(interval) {
  thread_ = std::thread([this] { Loop(); });
}

void TreeCpuWatch::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  SampleOnce();  // the tree as it ends, if it is still there
}

void TreeCpuWatch::SampleOnce() {
  if (gone_) return;
  if (!sampler_) {
    Result<std::string> text = ReadFile(pidfile_);
    int pid = 0;
    if (text.ok()) std::from_chars(text->data(), text->data() + text->size(), pid);
    if (pid > 0) sampler_.emplace(pid);
  }
  // Before the first sample the pid may be gone already (a short run):
  // then nothing was measured.
  if (sampler_) gone_ = !sampler_->Sample();
}

void TreeCpuWatch::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_ && !gone_) {
    lock.unlock();
    SampleOnce();
    lock.lock();
    // Until the pid file exists, look again soon: the container is starting.
    cv_.wait_for(lock, sampler_ ? interval_ : std::chrono::milliseconds(50), [this] { return stop_; });
  }
}

}  // namespace idlegrid::runtime
