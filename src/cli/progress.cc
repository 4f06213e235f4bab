#include "cli/progress.h"

#include <cstdio>

namespace idlegrid::cli {

namespace {

// done * scale / total rounded down, exactly (128-bit: no overflow, and no
// floating-point rounding up to the next whole cell near the end).
uint64_t ScaledDown(uint64_t done, uint64_t total, uint64_t scale) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(done) * scale / total);
}

}  // namespace

ProgressStyle ChooseProgressStyle(bool json, bool terminal) {
  if (json) return ProgressStyle::kNone;
  return terminal ? ProgressStyle::kBar : ProgressStyle::kLines;
}

int PercentDone(uint64_t done, uint64_t total) {
  if (total == 0 || done >= total) return 100;
  return static_cast<int>(ScaledDown(done, total, 100));
}

std::string Bar(uint64_t done, uint64_t total, int width) {
  if (width < 1) width = 1;
  const int full = total == 0 || done >= total ? width : static_cast<int>(ScaledDown(done, total, width));
  return "[" + std::string(static_cast<size_t>(full), '#') + std::string(static_cast<size_t>(width - full), '-') + "]";
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  uint64_t scale = 1024;
  while (unit < 3 && bytes / scale >= 1024) {
    scale *= 1024;
    ++unit;
  }
  // Tenths, truncated: a size is never overstated.
  const uint64_t tenths = bytes * 10 / scale;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%llu.%llu %s", static_cast<unsigned long long>(tenths / 10),
                static_cast<unsigned long long>(tenths % 10), units[unit]);
  return buf;
}

std::string TransferText(std::string_view what, uint64_t done, uint64_t total) {
  return std::string(what) + ": " + FormatBytes(done) + " of " + FormatBytes(total) + " (" +
         std::to_string(PercentDone(done, total)) + "%)";
}

JobTally TallyOf(const v1::Job& job) {
  JobTally t;
  for (const auto& [state, n] : job.task_counts()) {
    t.total += n;
    if (state == "succeeded" || state == "failed" || state == "cancelled") t.ended += n;
  }
  return t;
}

std::string JobProgressText(const v1::Job& job) {
  const JobTally t = TallyOf(job);
  std::string out = std::to_string(t.ended) + "/" + std::to_string(t.total) + " tasks ended (" +
                    std::to_string(PercentDone(t.ended, t.total)) + "%)";
  const char* sep = ": ";
  for (const char* st : {"succeeded", "failed", "cancelled", "running", "assigned", "queued", "lost"}) {
    auto it = job.task_counts().find(st);
    if (it == job.task_counts().end() || it->second == 0) continue;
    out += sep + std::to_string(it->second) + " " + st;
    sep = ", ";
  }
  return out;
}

void ProgressDisplay::Update(uint64_t done, uint64_t total, const std::string& text) {
  switch (style_) {
    case ProgressStyle::kNone:
      return;
    case ProgressStyle::kBar: {
      std::string line = Bar(done, total, bar_width_) + " " + text;
      const size_t width = line.size();
      // Spaces over what a longer previous line left on screen.
      if (width < last_width_) line += std::string(last_width_ - width, ' ');
      out_ << "\r" << line << std::flush;
      last_width_ = width;
      drawn_ = true;
      return;
    }
    case ProgressStyle::kLines: {
      if (every_ == LineEvery::kTenth) {
        const int tenth = PercentDone(done, total) / 10;
        if (tenth == last_tenth_) return;
        last_tenth_ = tenth;
      } else if (text == last_text_) {
        return;
      }
      last_text_ = text;
      out_ << text << "\n" << std::flush;
      return;
    }
  }
}

void ProgressDisplay::Clear() {
  if (style_ != ProgressStyle::kBar || !drawn_) return;
  out_ << "\r" << std::string(last_width_, ' ') << "\r" << std::flush;
  drawn_ = false;
  last_width_ = 0;
}

void ProgressDisplay::Finish() {
  if (style_ == ProgressStyle::kBar && drawn_) out_ << "\n" << std::flush;
  drawn_ = false;
}

}  // namespace idlegrid::cli
