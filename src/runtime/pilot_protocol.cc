#include "runtime/pilot_protocol.h"

#include <charconv>

namespace idlegrid::runtime {
namespace {

void AppendField(std::string* out, const std::string& field) {
  out->append(field);
  out->push_back('\0');
}

// Length-prefixed text: no separator can be forged by a value.
void KeyPart(std::string* key, std::string_view part) {
  key->append(std::to_string(part.size())).push_back(':');
  key->append(part);
}

}  // namespace

Status PilotEligible(const RunSpec& spec) {
  if (spec.sandbox_group.empty()) return Status::FailedPrecondition("the attempt names no sandbox group");
  if (spec.runtime != "runc") return Status::FailedPrecondition("pilots run runc jobs only");
  if (!spec.gpu_uuids.empty()) return Status::FailedPrecondition("jobs with GPUs get a container each");
  for (const Mount& m : spec.mounts) {
    if (m.container_path == kPilotMountDir || m.container_path.rfind(std::string(kPilotMountDir) + "/", 0) == 0) {
      return Status::FailedPrecondition("the job mounts over the pilot's directory " + std::string(kPilotMountDir));
    }
    if (m.read_only && m.content_digest.empty()) {
      return Status::FailedPrecondition("read-only mount " + m.container_path + " does not say what it holds");
    }
  }
  return Status::Ok();
}

std::string PilotKey(const RunSpec& spec) {
  std::string key;
  KeyPart(&key, spec.sandbox_group);
  KeyPart(&key, spec.image_id);
  KeyPart(&key, spec.runtime);
  KeyPart(&key, spec.resources.SerializeAsString());
  for (const Mount& m : spec.mounts) {
    KeyPart(&key, m.container_path);
    KeyPart(&key, m.read_only ? "ro" : "rw");
    KeyPart(&key, m.content_digest);
  }
  return key;
}

Result<std::string> EncodePilotRequest(const std::string& cwd, const std::vector<std::string>& argv,
                                       const std::vector<std::string>& env) {
  if (argv.empty()) return Status::InvalidArgument("no program to run");
  std::string payload;
  AppendField(&payload, "run");
  AppendField(&payload, cwd);
  AppendField(&payload, std::to_string(argv.size()));
  for (const std::string& a : argv) AppendField(&payload, a);
  AppendField(&payload, std::to_string(env.size()));
  for (const std::string& e : env) AppendField(&payload, e);
  size_t fields = 4 + argv.size() + env.size();
  size_t nuls = 0;
  for (char c : payload) nuls += c == '\0';
  if (nuls != fields) return Status::InvalidArgument("a command, environment or directory string holds a NUL byte");
  // The pilot keeps at most kMaxPilotFrame / 64 fields.
  if (payload.size() > kMaxPilotFrame || fields > kMaxPilotFrame / 64) {
    return Status::InvalidArgument("the task's command and environment exceed " + std::to_string(kMaxPilotFrame) +
                                   " bytes");
  }
  std::string frame(4, '\0');
  const uint32_t len = static_cast<uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) frame[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  return frame + payload;
}

std::optional<Result<PilotReply>> PilotReplyReader::Feed(std::string_view bytes) {
  buffer_.append(bytes);
  if (buffer_.size() < 4) return std::nullopt;
  uint32_t len = 0;
  for (int i = 0; i < 4; ++i) len |= uint32_t{static_cast<unsigned char>(buffer_[i])} << (8 * i);
  if (len > 4096) return Result<PilotReply>(Status::DataLoss("pilot reply of " + std::to_string(len) + " bytes"));
  if (buffer_.size() < 4 + len) return std::nullopt;
  if (buffer_.size() > 4 + len) return Result<PilotReply>(Status::DataLoss("bytes after the pilot's reply"));
  const std::string payload = buffer_.substr(4);
  // NUL-terminated strings: kind and value, and for "exit" optionally the
  // task's CPU time.
  std::vector<std::string> fields;
  for (size_t at = 0; at < payload.size();) {
    const size_t nul = payload.find('\0', at);
    if (nul == std::string::npos) return Result<PilotReply>(Status::DataLoss("malformed pilot reply"));
    fields.push_back(payload.substr(at, nul - at));
    at = nul + 1;
  }
  const bool exit_reply = !fields.empty() && fields[0] == "exit";
  if (fields.size() != 2 && !(exit_reply && fields.size() == 3)) {
    return Result<PilotReply>(Status::DataLoss("malformed pilot reply"));
  }
  const std::string& kind = fields[0];
  const std::string& value = fields[1];
  PilotReply reply;
  reply.text = value;
  if (kind == "exit") {
    int code = -1;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), code);
    if (ec != std::errc() || end != value.data() + value.size() || code < 0 || code > 255) {
      return Result<PilotReply>(Status::DataLoss("pilot reply with exit code \"" + value + "\""));
    }
    reply.exit_code = code;
    reply.text.clear();
    if (fields.size() == 3) {
      const std::string& cpu = fields[2];
      uint64_t usec = 0;
      auto [cpu_end, cpu_ec] = std::from_chars(cpu.data(), cpu.data() + cpu.size(), usec);
      if (cpu.empty() || cpu_ec != std::errc() || cpu_end != cpu.data() + cpu.size() || usec > kMaxPilotCpuUsec) {
        return Result<PilotReply>(Status::DataLoss("pilot reply with CPU time \"" + cpu.substr(0, 32) + "\""));
      }
      reply.cpu_usec = usec;
    }
  } else if (kind == "execfail") {
    reply.kind = PilotReply::Kind::kExecFailed;
  } else if (kind == "unclean") {
    reply.kind = PilotReply::Kind::kUnclean;
  } else {
    return Result<PilotReply>(Status::DataLoss("pilot reply of unknown kind \"" + kind + "\""));
  }
  return Result<PilotReply>(std::move(reply));
}

}  // namespace idlegrid::runtime
