#include "agent/local_policy.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

#include "agent/owner_command.h"
#include "manifest/image_ref.h"
#include "manifest/manifest.h"
#include "registry/allow_list.h"

namespace idlegrid::agent {

namespace {

Status At(const YAML::Node& node, const std::string& file, const std::string& what) {
  const auto& m = node.Mark();
  return Status::InvalidArgument(file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": " +
                                 what);
}

Result<bool> Bool(const YAML::Node& v, const std::string& file, const std::string& key) {
  if (v.Scalar() != "true" && v.Scalar() != "false") return At(v, file, key + ": expected true or false");
  return v.Scalar() == "true";
}

Result<int64_t> DurationMs(const YAML::Node& v, const std::string& file, const std::string& key) {
  auto secs = manifest::ParseDurationSeconds(v.Scalar());
  if (!secs.ok()) return At(v, file, key + ": " + secs.status().message());
  return int64_t{*secs} * 1000;
}

Result<uint32_t> Limit(const YAML::Node& v, const std::string& file, const std::string& key, uint32_t max) {
  const std::string& text = v.Scalar();
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 6 ||
      std::stoul(text) == 0 || std::stoul(text) > max) {
    return At(v, file, key + ": expected a whole number from 1 to " + std::to_string(max));
  }
  return static_cast<uint32_t>(std::stoul(text));
}

Status ParseOwnerGpu(const YAML::Node& v, const std::string& file, PausePolicy* out) {
  if (v.IsScalar()) {
    IG_ASSIGN_OR_RETURN(out->owner_gpu_processes, Bool(v, file, "pauseWhen.ownerGpu"));
    return Status::Ok();
  }
  if (!v.IsMap()) return At(v, file, "pauseWhen.ownerGpu: expected true, or {processes: true, utilizationAbove: 50}");
  for (const auto& kv : v) {
    const std::string key = kv.first.as<std::string>();
    if (key == "processes") {
      IG_ASSIGN_OR_RETURN(out->owner_gpu_processes, Bool(kv.second, file, "pauseWhen.ownerGpu.processes"));
    } else if (key == "utilizationAbove") {
      IG_ASSIGN_OR_RETURN(uint32_t pct, Limit(kv.second, file, "pauseWhen.ownerGpu.utilizationAbove", 99));
      out->owner_gpu_utilization_above = static_cast<int>(pct);
    } else if (key == "ignoreProcesses") {
      if (!kv.second.IsSequence()) {
        return At(kv.second, file, "pauseWhen.ownerGpu.ignoreProcesses: expected a list such as [my-compositor]");
      }
      for (const auto& p : kv.second) {
        const std::string program = p.as<std::string>();
        if (program.empty() || program.find('/') != std::string::npos) {
          return At(p, file, "pauseWhen.ownerGpu.ignoreProcesses: a program name, without a directory");
        }
        out->owner_gpu_ignore.push_back(program);
      }
    } else {
      return At(kv.first, file,
                "pauseWhen.ownerGpu: unknown setting \"" + key + "\" (processes, utilizationAbove, ignoreProcesses)");
    }
  }
  return Status::Ok();
}

Status ParsePauseWhen(const YAML::Node& v, const std::string& file, PausePolicy* out) {
  if (!v.IsMap()) return At(v, file, "pauseWhen: expected a map such as {ownerGpu: true, resumeAfter: 30s}");
  for (const auto& kv : v) {
    const std::string key = kv.first.as<std::string>();
    const YAML::Node& value = kv.second;
    const std::string name = "pauseWhen." + key;
    if (key == "ownerGpu") {
      IG_RETURN_IF_ERROR(ParseOwnerGpu(value, file, out));
    } else if (key == "processes") {
      if (!value.IsSequence()) return At(value, file, name + ": expected a list of program names such as [steam]");
      for (const auto& p : value) {
        const std::string program = p.as<std::string>();
        // Matched against /proc/PID/comm and the executable's file name.
        if (program.empty() || program.find('/') != std::string::npos) {
          return At(p, file, name + ": a program name, without a directory");
        }
        out->processes.push_back(program);
      }
    } else if (key == "userActive") {
      IG_ASSIGN_OR_RETURN(out->user_active, Bool(value, file, name));
    } else if (key == "onBattery") {
      IG_ASSIGN_OR_RETURN(out->on_battery, Bool(value, file, name));
    } else if (key == "hours") {
      if (!value.IsSequence()) return At(value, file, name + ": expected a list of windows such as [\"18:00-23:00\"]");
      for (const auto& w : value) {
        auto window = ParseHoursWindow(w.as<std::string>());
        if (!window.ok()) return At(w, file, name + ": " + window.status().message());
        out->hours.push_back(*window);
      }
    } else if (key == "resumeAfter") {
      IG_ASSIGN_OR_RETURN(out->resume_after_ms, DurationMs(value, file, name));
    } else if (key == "handBackAfter") {
      IG_ASSIGN_OR_RETURN(out->hand_back_after_ms, DurationMs(value, file, name));
    } else if (key == "gpuJobs") {
      if (value.Scalar() == "freeze") {
        out->gpu_jobs = PauseAction::kFreeze;
      } else if (value.Scalar() == "handBack") {
        out->gpu_jobs = PauseAction::kHandBack;
      } else {
        return At(value, file,
                  name +
                      ": expected handBack (a GPU job with a checkpoint directory is handed back at "
                      "once, freeing its VRAM) or freeze");
      }
    } else if (key == "action") {
      if (value.Scalar() == "freeze") {
        out->action = PauseAction::kFreeze;
      } else if (value.Scalar() == "handBack") {
        out->action = PauseAction::kHandBack;
      } else {
        return At(value, file, name + ": expected freeze or handBack");
      }
    } else {
      return At(kv.first, file,
                "pauseWhen: unknown setting \"" + key +
                    "\" (ownerGpu, processes, userActive, onBattery, hours, resumeAfter, action, "
                    "handBackAfter, gpuJobs)");
    }
  }
  return Status::Ok();
}

Status ParseAllowedRuntimes(const YAML::Node& v, const std::string& file, OwnerPolicy* out) {
  if (!v.IsSequence()) return At(v, file, "allowedRuntimes: expected a list such as [runc, runsc]");
  for (const auto& r : v) {
    std::string name = r.as<std::string>();
    if (name != "runc" && name != "runsc") return At(r, file, "allowedRuntimes: unknown runtime \"" + name + "\"");
    out->policy.add_allowed_runtimes(name);
  }
  return Status::Ok();
}

Status ParseAllowedJobClasses(const YAML::Node& v, const std::string& file, OwnerPolicy* out) {
  if (!v.IsSequence()) return At(v, file, "allowedJobClasses: expected a list such as [io-uring]");
  for (const auto& c : v) {
    std::string name = c.as<std::string>();
    if (name != "io-uring")
      return At(c, file, "allowedJobClasses: unknown job class \"" + name + "\" (known: io-uring)");
    out->policy.add_allowed_job_classes(name);
  }
  return Status::Ok();
}

Status ParseImageCache(const YAML::Node& v, const std::string& file, OwnerPolicy* out) {
  auto bytes = manifest::ParseBytes(v.Scalar());
  if (!bytes.ok() || *bytes == 0) {
    return At(v, file, "imageCache: expected a size such as 20Gi (the disk the agent's image layers may use)");
  }
  out->image_cache_bytes = *bytes;
  return Status::Ok();
}

Status ParseInputCache(const YAML::Node& v, const std::string& file, OwnerPolicy* out) {
  auto bytes = manifest::ParseBytes(v.Scalar());
  if (!bytes.ok()) {
    return At(v, file, "inputCache: expected a size such as 10Gi (the disk the node's cached job inputs may use)");
  }
  out->input_cache_bytes = *bytes;
  out->input_cache_set = true;
  return Status::Ok();
}

// Each entry is a key itself (it starts with image::kPublicKeyTag) or a
// file of keys, which the agent reads, not this parser.
Status ParseTrustedImageKeys(const YAML::Node& v, const std::string& file, OwnerPolicy* out) {
  if (!v.IsSequence() || v.size() == 0) {
    return At(v, file,
              "trustedImageKeys: expected a list of public-key files or lines (an empty list "
              "would trust nothing; remove the setting to run unsigned images)");
  }
  for (const auto& entry : v) {
    const std::string text = entry.as<std::string>();
    if (text.rfind(image::kPublicKeyTag, 0) != 0) {
      if (text.empty()) return At(entry, file, "trustedImageKeys: an entry is empty");
      out->trusted_image_key_files.push_back(text);
      continue;
    }
    const auto& m = entry.Mark();
    auto parsed = image::ParsePublicKey(
        text, file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": trustedImageKeys");
    if (!parsed.ok()) return parsed.status();
    out->trusted_image_keys.push_back(std::move(*parsed));
  }
  AddTrustedImageKeys(out, {});
  return Status::Ok();
}

Status ParseAllowedRegistries(const YAML::Node& v, const std::string& file, OwnerPolicy* out) {
  if (!v.IsSequence()) return At(v, file, "allowedRegistries: expected a list such as [ghcr.io, \"127.0.0.1:5000\"]");
  for (const auto& r : v) {
    Result<std::string> host = manifest::ParseRegistryHost(r.as<std::string>());
    if (!host.ok()) return At(r, file, "allowedRegistries: " + host.status().message());
    out->policy.add_allowed_registries(*host);
  }
  return Status::Ok();
}

Status ParseLendGpus(const YAML::Node& v, const std::string& file, OwnerPolicy* out) {
  if (!v.IsSequence()) {
    return At(v, file, "lendGpus: expected a list of GPU indexes or UUIDs such as [0, GPU-8f3e...]");
  }
  out->lend_gpus.emplace();
  for (const auto& g : v) {
    const std::string sel = g.as<std::string>();
    if (!IsGpuSelector(sel)) {
      return At(g, file, "lendGpus: \"" + sel + "\" is neither a GPU index (0, 1, ...) nor a UUID (GPU-...)");
    }
    out->lend_gpus->push_back(sel);
  }
  return Status::Ok();
}

Status ParseAsks(const YAML::Node& v, const std::string& file, OwnerPolicy* out) {
  if (!v.IsMap()) return At(v, file, "asks: expected a map of device class to hourly price");
  for (const auto& ask : v) {
    double price = ask.second.as<double>();
    if (!(price >= 0)) return At(ask.second, file, "asks: a price must be zero or more");
    v1::PriceAsk a;
    a.set_device_class(ask.first.as<std::string>());
    a.set_per_hour(price);
    out->asks.push_back(a);
  }
  return Status::Ok();
}

// One top-level setting: `key_node` its name, `v` its value. yaml-cpp's
// conversions may throw; the caller turns that into file:line:column.
Status ParsePolicySetting(const YAML::Node& key_node, const YAML::Node& v, const std::string& file, OwnerPolicy* out) {
  const std::string key = key_node.as<std::string>();
  if (key == "acceptJobs") {
    IG_ASSIGN_OR_RETURN(bool accept, Bool(v, file, "acceptJobs"));
    out->policy.set_accept_jobs(accept);
  } else if (key == "maxRunSeconds") {
    auto secs = manifest::ParseDurationSeconds(v.Scalar());
    if (!secs.ok()) return At(v, file, "maxRunSeconds: " + secs.status().message());
    out->policy.set_max_run_seconds(*secs);
  } else if (key == "allowedRuntimes") {
    return ParseAllowedRuntimes(v, file, out);
  } else if (key == "allowedJobClasses") {
    return ParseAllowedJobClasses(v, file, out);
  } else if (key == "reservedGpuMemory") {
    auto bytes = manifest::ParseBytes(v.Scalar());
    if (!bytes.ok()) return At(v, file, "reservedGpuMemory: " + bytes.status().message());
    out->policy.set_reserved_gpu_memory_bytes(*bytes);
  } else if (key == "allowGpuSharing") {
    IG_ASSIGN_OR_RETURN(bool sharing, Bool(v, file, "allowGpuSharing"));
    out->policy.set_allow_gpu_sharing(sharing);
  } else if (key == "imageCache") {
    return ParseImageCache(v, file, out);
  } else if (key == "inputCache") {
    return ParseInputCache(v, file, out);
  } else if (key == "reservedCpu") {
    double cpu = v.as<double>();
    if (!(cpu >= 0 && cpu <= 1024)) return At(v, file, "reservedCpu: must be between 0 and 1024");
    out->policy.set_reserved_cpu(cpu);
  } else if (key == "trustedImageKeys") {
    return ParseTrustedImageKeys(v, file, out);
  } else if (key == "allowedRegistries") {
    return ParseAllowedRegistries(v, file, out);
  } else if (key == "tenantGpuJobs") {
    IG_ASSIGN_OR_RETURN(bool accepted, Bool(v, file, "tenantGpuJobs"));
    out->policy.set_tenant_gpu_jobs_refused(!accepted);
  } else if (key == "lendGpus") {
    return ParseLendGpus(v, file, out);
  } else if (key == "pauseWhen") {
    return ParsePauseWhen(v, file, &out->pause);
  } else if (key == "maxGpuTemp") {
    IG_ASSIGN_OR_RETURN(out->pause.max_gpu_temp_c, Limit(v, file, "maxGpuTemp", 150));
  } else if (key == "maxGpuPower") {
    IG_ASSIGN_OR_RETURN(out->pause.max_gpu_power_w, Limit(v, file, "maxGpuPower", 5000));
  } else if (key == "asks") {
    return ParseAsks(v, file, out);
  } else {
    return At(key_node, file, "unknown policy setting \"" + key + "\"");
  }
  return Status::Ok();
}

}  // namespace

OwnerPolicy DefaultOwnerPolicy() {
  OwnerPolicy p;
  p.policy.set_accept_jobs(true);
  return p;
}

Result<OwnerPolicy> ParseOwnerPolicy(const std::string& yaml_text, const std::string& file) {
  OwnerPolicy out = DefaultOwnerPolicy();
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    return Status::InvalidArgument(file + ":" + std::to_string(e.mark.line + 1) + ":" +
                                   std::to_string(e.mark.column + 1) + ": invalid YAML: " + e.msg);
  }
  if (root.IsNull()) return out;
  if (!root.IsMap()) return At(root, file, "a policy is a map of settings");
  try {
    for (const auto& kv : root) IG_RETURN_IF_ERROR(ParsePolicySetting(kv.first, kv.second, file, &out));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(file + ":" + std::to_string(e.mark.line + 1) + ":" +
                                   std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  return out;
}

Status CheckOwnerPolicy(const v1::JobSpec& spec, const v1::LocalPolicy& policy) {
  if (!policy.accept_jobs()) return Status::FailedPrecondition("the owner has paused this node (acceptJobs: false)");
  if (policy.max_run_seconds() > 0 && spec.run_timeout_seconds() > policy.max_run_seconds()) {
    return Status::FailedPrecondition("run timeout " + std::to_string(spec.run_timeout_seconds()) +
                                      " s exceeds the owner's limit of " + std::to_string(policy.max_run_seconds()) +
                                      " s");
  }
  const auto& allowed = policy.allowed_runtimes();
  if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), spec.runtime()) == allowed.end()) {
    return Status::FailedPrecondition("runtime " + spec.runtime() + " is not allowed by the owner");
  }
  if (!spec.job_class().empty()) {
    const auto& classes = policy.allowed_job_classes();
    if (std::find(classes.begin(), classes.end(), spec.job_class()) == classes.end()) {
      return Status::FailedPrecondition("job class " + spec.job_class() +
                                        " is not approved by the owner (allowedJobClasses in the node's policy)");
    }
  }
  // An image that does not parse comes from no registry; the image cache
  // refuses it before anything is fetched.
  Result<manifest::ImageRef> image = manifest::ParseImageRef(spec.image());
  if (!image.ok()) return Status::Ok();
  return registry::CheckOwnerAllows(
      *image, std::vector<std::string>(policy.allowed_registries().begin(), policy.allowed_registries().end()));
}

Status CheckOwnerPolicy(const v1::Assignment& assignment, const v1::LocalPolicy& policy) {
  const v1::Resources& asked = assignment.spec().resources();
  const bool asks_gpus = asked.gpus() > 0 || asked.gpu_milli() > 0;
  if (policy.tenant_gpu_jobs_refused() && assignment.untrusted_tenant() && asks_gpus) {
    return Status::FailedPrecondition("the owner accepts no tenant GPU jobs (policy.yaml tenantGpuJobs: false)");
  }
  return CheckOwnerPolicy(assignment.spec(), policy);
}

void AddTrustedImageKeys(OwnerPolicy* policy, const std::vector<image::ImagePublicKey>& keys) {
  policy->trusted_image_keys.insert(policy->trusted_image_keys.end(), keys.begin(), keys.end());
  std::set<std::string> ids;
  for (const auto& k : policy->trusted_image_keys) ids.insert(k.id());
  policy->policy.clear_trusted_image_key_ids();
  for (const auto& id : ids) policy->policy.add_trusted_image_key_ids(id);
}

Status CheckImageTrust(const v1::Assignment& assignment, const std::vector<image::ImagePublicKey>& trusted) {
  if (trusted.empty()) return Status::Ok();
  const std::string image = manifest::ImageDigestOf(assignment.spec().image());
  const std::vector<v1::ImageSignature> signatures(assignment.image_signatures().begin(),
                                                   assignment.image_signatures().end());
  const image::SignatureVerdict verdict = image::JudgeSignatures(image, signatures, trusted);
  if (verdict.trusted()) return Status::Ok();
  return Status::FailedPrecondition(image::UntrustedImageReason(image, verdict, trusted, "this node's owner"));
}

bool AdvertisedPolicyDiffers(const OwnerPolicy& a, const OwnerPolicy& b) {
  if (a.policy.SerializeAsString() != b.policy.SerializeAsString() || a.asks.size() != b.asks.size()) return true;
  if (a.lend_gpus != b.lend_gpus) return true;  // devices' owner_hold
  for (size_t i = 0; i < a.asks.size(); ++i) {
    if (a.asks[i].SerializeAsString() != b.asks[i].SerializeAsString()) return true;
  }
  return false;
}

}  // namespace idlegrid::agent
