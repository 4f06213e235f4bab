#pragma once
// Directory inputs (docs/manifest.md, Inputs): a directory travels as a plain
// ustar archive that `idlegrid artifact push DIR` writes deterministically,
// and the agent unpacks it read-only for the job. The archive an agent is
// given is hostile input: only regular files and directories are unpacked,
// every path stays inside the destination, and sizes and counts are capped.
#include <cstdint>
#include <string>

#include "common/status.h"

namespace idlegrid::image {

// Caps on what one directory archive may unpack to.
struct DirArchiveLimits {
  uint64_t max_total_bytes = 64ull << 30;  // content bytes of all files
  uint64_t max_entries = 1'000'000;        // files and directories
  uint32_t max_depth = 64;                 // path components
};

// Writes a tar of the tree under `dir` to `out_path` (created or replaced,
// mode 0644): names sorted bytewise, every member owned by 0:0 with mtime 0,
// directories mode 0755, files 0755 when any execute bit is set and 0644
// otherwise, so the same tree always gives the same bytes (and digest).
// `dir` itself is the archive's root and is not a member.
// InvalidArgument naming the path when the tree holds anything but regular
// files and directories (a symlink, device, FIFO or socket), a path too long
// for a ustar header, a file of 8 GiB or more, or a file that changes size
// while it is read; NotFound when `dir` does not exist; Internal for other
// filesystem errors. What was written is removed on failure.
Status WriteDirectoryTar(const std::string& dir, const std::string& out_path);

// Unpacks the tar at `tar_path` as the new directory `dest_dir`, read-only:
// files mode 0444 (0555 where the archive gave an execute bit), directories
// 0555. Built in a temporary sibling renamed into place, so `dest_dir`
// either does not exist or is whole. InvalidArgument (naming the entry) for
// a malformed archive (image/layer_tar.h's checks: absolute or ".." paths
// among them), an entry that is not a regular file or directory (symlinks,
// hard links, devices, FIFOs), a file that appears twice or under a file,
// or one past `limits`; AlreadyExists when `dest_dir` appeared meanwhile (its
// content is whole); Internal for filesystem errors. Nothing is left behind
// on failure.
Status UnpackDirectoryTar(const std::string& tar_path, const std::string& dest_dir,
                          const DirArchiveLimits& limits = {});

}  // namespace idlegrid::image
