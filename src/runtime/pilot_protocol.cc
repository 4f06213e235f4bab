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
  const size_t a = payload.find('\0');
  const size_t b = a == std::string::npos ? a : payload.find('\0', a + 1);
  if (b == std::string::npos || b + 1 != payload.size()) {
    return Result<PilotReply>(Status::DataLoss("malformed pilot reply"));
  }
  const std::string kind = payload.substr(0, a), value = payload.substr(a + 1, b - a - 1);
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
