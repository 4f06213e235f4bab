#pragma once
// What a directory tree a job writes to costs, measured without trusting it:
// the tree may change while it is read and may be built to mislead.
#include <cstdint>
#include <string>

#include "common/status.h"

namespace idlegrid {

// Directories nested deeper than this under a root are not followed: the
// walk holds one descriptor per level. MeasureTree says so as an error.
inline constexpr int kMaxTreeDepth = 128;

// The bytes the tree at `root` is charged: every name in it (files, links,
// special files and directories, `root` included) counts the larger of its
// length (st_size) and the space allocated to it (st_blocks * 512), so
// neither a sparse file (a large length on few blocks, which an upload would
// still send in full) nor space preallocated past the end (many blocks, a
// small length) reads as less than it costs. A file with several hard links
// counts once per name: each name is an output uploaded on its own. Symbolic
// links are charged as themselves and never followed; nothing outside `root`
// is read, and no other filesystem is entered.
//
// Names that vanish while the walk runs are skipped. A directory this
// process owns but may not read (a rootless container's root is the agent's
// user, and may lock one) is given owner rwx and read; that is all the walk
// changes. Errors: NotFound when `root` does not exist; Internal naming the
// path for a directory that still cannot be read (what the walk cannot see
// it cannot vouch for) or one past kMaxTreeDepth. Thread-safe.
Result<uint64_t> MeasureTree(const std::string& root);

}  // namespace idlegrid
