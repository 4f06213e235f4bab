#pragma once
// Leases and checkpoints of attempts: pure rules the store applies inside its
// transactions.
//
// Every attempt runs under a lease whose epoch is the task's attempt ordinal
// (1, 2, ...). The agent echoes the epoch in everything it reports; the
// coordinator judges lease expiry on its own clock (heartbeats renew all of a
// node's leases) and, once an attempt has ended or a newer epoch exists,
// refuses its reports.
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::jobs {

// Ok if `report` may act on an attempt holding `attempt_epoch` while the
// task's newest attempt holds `current_epoch`. FailedPrecondition when the
// report names another epoch or a newer attempt superseded this one. A report
// without an epoch (0) is judged on the attempt alone; attempts stored before
// epochs existed (0) are not judged here.
Status CheckLeaseEpoch(const v1::ReportAttemptRequest& report, uint64_t attempt_epoch, uint64_t current_epoch);

// Checkpoint file lists come from hostile containers via the agent: every
// path must be relative, without "." or ".." parts, unique, and every digest a
// well-formed sha256. A chunked file's chunks (OutputFile.chunks) must be
// well-formed, none empty or over kCheckpointChunkBytes, and add up to its
// size. InvalidArgument names the first bad entry.
Status ValidateCheckpointFiles(const google::protobuf::RepeatedPtrField<v1::OutputFile>& files);

// A checkpoint file larger than this is uploaded in chunks of
// kCheckpointChunkBytes, each a blob of its own, so a file that changed in
// part moves only its changed chunks, and a cut-off upload loses at most one.
inline constexpr uint64_t kCheckpointChunkedAbove = 64ull << 20;
inline constexpr uint64_t kCheckpointChunkBytes = 16ull << 20;

// The blobs a checkpoint file is stored as: its chunks, or its digest.
std::vector<std::string> CheckpointBlobs(const v1::OutputFile& f);

// Work an ended attempt leaves to be redone: from its last checkpoint (or its
// start) to its end. 0 for attempts that succeeded, never started, or are
// still active.
int64_t WorkLostMs(const v1::Attempt& attempt);

// What an attempt has cost so far under its placement's price: price per hour
// x the hours from its start to its end (or to `now_ms` while it runs).
double AttemptCost(const v1::Attempt& attempt, int64_t now_ms);

// Fills each attempt's cost (and nothing else) as of `now_ms`; returns what
// the task's attempts cost together.
double FillCosts(v1::Task* task, int64_t now_ms);

}  // namespace idlegrid::jobs
