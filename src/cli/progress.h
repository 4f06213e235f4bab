#pragma once
// Progress of long CLI operations (image push, fetch, --wait): a bar redrawn
// in place on a terminal, plain lines when the output is not a terminal
// (a log, a pipe), nothing with --json. The formatting is pure; the display
// writes to the stream it is given and never asks whether it is a terminal
// (the caller decides with ChooseProgressStyle), so tests read what it wrote.
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::cli {

enum class ProgressStyle { kBar, kLines, kNone };

// --json wins (machine output stays clean); else a bar on a terminal.
ProgressStyle ChooseProgressStyle(bool json, bool terminal);

// Whole percent, rounded down: 100 only once done reaches total; 100 for a
// total of 0 (nothing to do is done).
int PercentDone(uint64_t done, uint64_t total);

// "[#####-----]" with `width` cells between the brackets, full cells rounded down.
std::string Bar(uint64_t done, uint64_t total, int width);

// "512 B", "1.5 KiB", "26.7 MiB", "3.2 GiB": one decimal, truncated.
std::string FormatBytes(uint64_t bytes);

// "pushing image.tar: 12.0 MiB of 26.7 MiB (44%)".
std::string TransferText(std::string_view what, uint64_t done, uint64_t total);

// An array job's progress from Job.task_counts: tasks ended (succeeded,
// failed or cancelled) of all, then every state with a task, in a fixed
// order: "7/10 tasks ended (70%): 5 succeeded, 1 failed, 1 cancelled, 2 running, 1 queued".
struct JobTally {
  uint64_t total = 0;
  uint64_t ended = 0;
};
JobTally TallyOf(const v1::Job& job);
std::string JobProgressText(const v1::Job& job);

// One operation's progress on `out`. kBar redraws one line in place ("\r",
// padded over a longer previous line) and ends it at Finish(); kLines prints
// a line when the text changes, but for byte counts (LineEvery::kTenth) only
// at each tenth of the total, so a log gets ten lines for a large upload;
// kNone prints nothing. Not thread-safe; `out` outlives the display.
class ProgressDisplay {
 public:
  enum class LineEvery { kChange, kTenth };
  ProgressDisplay(std::ostream& out, ProgressStyle style, LineEvery every, int bar_width = 30)
      : out_(out), style_(style), every_(every), bar_width_(bar_width) {}
  void Update(uint64_t done, uint64_t total, const std::string& text);
  // Ends the bar's line (kBar); nothing otherwise.
  void Finish();
  // Erases the bar (kBar) so other output can take its line; the next Update
  // draws it again. Nothing otherwise.
  void Clear();

 private:
  std::ostream& out_;
  const ProgressStyle style_;
  const LineEvery every_;
  const int bar_width_;
  bool drawn_ = false;
  size_t last_width_ = 0;
  int last_tenth_ = -1;
  std::string last_text_;
};

}  // namespace idlegrid::cli
