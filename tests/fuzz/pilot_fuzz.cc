// Fuzzes the pilot's reply frames (runtime/pilot_protocol.h,
// runtime::PilotReplyReader::Feed): bytes the agent reads from the pilot
// program, which runs inside the job's sandbox and so is untrusted. The first
// input byte picks a chunk size; the rest is the pipe's content, fed once
// whole and once in chunks until a result, as a read loop sees it.
// Invariants: a frame that is complete gives a result; every error is
// DataLoss; a reply read whole is read the same in chunks; an exit reply has
// a code 0-255, no text and a CPU time within kMaxPilotCpuUsec, and only an
// exit reply carries a CPU time.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "runtime/pilot_protocol.h"

namespace {

using idlegrid::Code;
using idlegrid::Result;
using idlegrid::runtime::PilotReply;
using idlegrid::runtime::PilotReplyReader;

void CheckReply(const Result<PilotReply>& r) {
  if (!r.ok()) {
    FUZZ_CHECK(r.status().code() == Code::kDataLoss);
    return;
  }
  const PilotReply& reply = r.value();
  if (reply.kind == PilotReply::Kind::kExit) {
    FUZZ_CHECK(reply.exit_code >= 0 && reply.exit_code <= 255);
    FUZZ_CHECK(reply.text.empty());
    FUZZ_CHECK(!reply.cpu_usec || *reply.cpu_usec <= idlegrid::runtime::kMaxPilotCpuUsec);
  } else {
    FUZZ_CHECK(!reply.cpu_usec);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = data[0] % 16 + 1;
  const std::string stream = idlegrid::fuzz::AsString(data + 1, size - 1);

  PilotReplyReader whole_reader;
  const std::optional<Result<PilotReply>> whole = whole_reader.Feed(stream);
  if (whole) CheckReply(*whole);
  if (stream.size() >= 4) {
    uint32_t len = 0;
    for (int i = 0; i < 4; ++i) len |= uint32_t{static_cast<unsigned char>(stream[i])} << (8 * i);
    if (stream.size() >= 4 + uint64_t{len}) FUZZ_CHECK(whole.has_value());
  }

  PilotReplyReader chunk_reader;
  std::optional<Result<PilotReply>> chunked;
  for (size_t at = 0; at < stream.size() && !chunked; at += chunk) {
    chunked = chunk_reader.Feed(std::string_view(stream).substr(at, chunk));
  }
  if (chunked) CheckReply(*chunked);
  if (whole && whole->ok()) {
    FUZZ_CHECK(chunked && chunked->ok());
    const PilotReply& a = whole->value();
    const PilotReply& b = chunked->value();
    FUZZ_CHECK(a.kind == b.kind && a.exit_code == b.exit_code && a.text == b.text && a.cpu_usec == b.cpu_usec);
  }
  return 0;
}
