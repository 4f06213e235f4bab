// RegistryClient with skopeo: `skopeo inspect --raw` to resolve (the digest
// is computed here from the bytes served, never taken from the tool), and
// `skopeo copy --preserve-digests` into an oci-archive to pull, which fails
// rather than rewrite a manifest.
#include <cstdio>
#include <mutex>

#include "common/digest.h"
#include "common/fs.h"
#include "registry/manifest_check.h"
#include "registry/registry_client.h"
#include "runtime/subprocess.h"

namespace idlegrid::registry {
namespace {

// RunCommand keeps 1 MiB of stdout: a manifest that large may have been cut.
constexpr size_t kMaxManifestBytes = (1 << 20) - 1;
constexpr size_t kMaxQuotedError = 400;

// skopeo's fatal error without logrus's framing (the msg="..." value,
// unescaped) or, failing that, the end of what it wrote.
std::string SkopeoMessage(const std::string& stderr_text) {
  const size_t start = stderr_text.rfind("msg=\"");
  if (start == std::string::npos) return runtime::Trimmed(runtime::Tail(stderr_text, kMaxQuotedError));
  std::string out;
  for (size_t i = start + 5; i < stderr_text.size() && stderr_text[i] != '"'; ++i) {
    if (stderr_text[i] == '\\' && i + 1 < stderr_text.size()) ++i;
    out += stderr_text[i];
  }
  // `inspect` frames every failure as a bad name; the cause follows.
  const std::string framing = "Error parsing image name ";
  if (out.starts_with(framing)) {
    const size_t cause = out.find("\": ");
    if (cause != std::string::npos) out = out.substr(cause + 3);
  }
  return out.size() > kMaxQuotedError ? out.substr(0, kMaxQuotedError) + "..." : out;
}

// The status a failed skopeo run becomes, by what it says went wrong.
Status Classify(const std::string& registry, const std::string& reference, const std::string& what,
                const std::string& message) {
  const std::string context = what + " " + reference + " from registry " + registry + ": ";
  // The registry's own error codes (distribution spec): skopeo's framing
  // around them only repeats the reference.
  for (const char* code : {"manifest unknown", "name unknown"}) {
    if (message.find(code) != std::string::npos) {
      return Status::NotFound(context + "the registry has no such image (" + code + ")");
    }
  }
  if (message.find("x509") != std::string::npos || message.find("certificate") != std::string::npos) {
    return Status::Unavailable(context + message + "; to trust the registry's CA, give it with --registry-ca " +
                               registry + "=CA_FILE");
  }
  return Status::Unavailable(context + message);
}

class SkopeoClient : public RegistryClient {
 public:
  explicit SkopeoClient(SkopeoOptions options) : options_(std::move(options)) {}

  Result<ResolvedImage> Resolve(const manifest::ImageRef& ref) override {
    const std::string reference = ref.digest.empty() ? ref.Named() : ref.Pinned();
    IG_ASSIGN_OR_RETURN(std::vector<std::string> argv, Command(ref.registry, "inspect"));
    argv.insert(argv.end(), {"--raw", "docker://" + reference});
    Result<runtime::CommandOutput> run = runtime::RunCommand(argv, options_.resolve_timeout);
    if (!run.ok()) return run.status().WithContext("reading " + reference);
    const runtime::CommandOutput& out = *run;
    if (out.exit_code != 0) return Classify(ref.registry, reference, "reading", SkopeoMessage(out.stderr_text));
    if (out.stdout_text.size() >= kMaxManifestBytes) {
      return Status::FailedPrecondition("the manifest of " + reference + " is 1 MiB or more; not an image manifest");
    }
    ResolvedImage resolved;
    resolved.manifest_digest = Sha256Digest(out.stdout_text);
    if (!ref.digest.empty() && resolved.manifest_digest != ref.digest) {
      return Status::DataLoss("registry " + ref.registry + " served a manifest for " + reference + " that hashes to " +
                              resolved.manifest_digest);
    }
    IG_ASSIGN_OR_RETURN(resolved.config_digest, RunnableManifestConfig(out.stdout_text, reference));
    return resolved;
  }

  Status Pull(const manifest::ImageRef& ref, const std::string& archive_path) override {
    if (ref.digest.empty()) return Status::InvalidArgument("pulling " + ref.Named() + ": only a digest is pulled");
    // oci-archive:PATH:NAME — a ":" in the path would end it early.
    if (archive_path.find(':') != std::string::npos) {
      return Status::InvalidArgument("image archive path \"" + archive_path + "\" contains \":\"");
    }
    IG_ASSIGN_OR_RETURN(std::vector<std::string> argv, Command(ref.registry, "copy"));
    argv.insert(argv.end(),
                {"--quiet", "--preserve-digests", "docker://" + ref.Pinned(), "oci-archive:" + archive_path});
    std::remove(archive_path.c_str());  // skopeo adds to an existing archive
    Result<runtime::CommandOutput> out = runtime::RunCommand(argv, options_.pull_timeout);
    if (out.ok() && out->exit_code == 0) return Status::Ok();
    std::remove(archive_path.c_str());
    if (!out.ok()) return out.status().WithContext("pulling " + ref.Pinned());
    return Classify(ref.registry, ref.Pinned(), "pulling", SkopeoMessage(out->stderr_text));
  }

 private:
  // skopeo, its temporary directory and `verb` with TLS verified and, when
  // the registry has a CA file, a certificate directory holding a copy of it
  // (skopeo reads *.crt there besides the system's CAs).
  Result<std::vector<std::string>> Command(const std::string& registry, const std::string& verb) {
    const std::string tmp = options_.work_dir + "/tmp";
    IG_RETURN_IF_ERROR(MakeDirs(tmp, 0700));
    std::vector<std::string> argv = {options_.skopeo, "--tmpdir", tmp, verb};
    const bool copy = verb == "copy";
    argv.push_back(copy ? "--src-tls-verify=true" : "--tls-verify=true");
    auto ca = options_.ca_files.find(registry);
    if (ca == options_.ca_files.end()) return argv;
    Result<std::string> pem = ReadFile(ca->second);
    if (!pem.ok()) {
      return Status::FailedPrecondition("--registry-ca " + registry + "=" + ca->second + ": " + pem.status().message());
    }
    std::string dir_name = registry;
    for (char& c : dir_name) {
      if (c == ':' || c == '[' || c == ']') c = '_';
    }
    const std::string dir = options_.work_dir + "/certs/" + dir_name;
    {
      // WriteFileAtomic's temporary name is per process, not per thread.
      std::lock_guard<std::mutex> lock(certs_mu_);
      IG_RETURN_IF_ERROR(MakeDirs(dir, 0700));
      IG_RETURN_IF_ERROR(WriteFileAtomic(dir + "/ca.crt", *pem, 0600));
    }
    argv.insert(argv.end(), {copy ? "--src-cert-dir" : "--cert-dir", dir});
    return argv;
  }

  const SkopeoOptions options_;
  std::mutex certs_mu_;  // one writer of the certificate directories at a time
};

}  // namespace

std::unique_ptr<RegistryClient> NewSkopeoClient(SkopeoOptions options) {
  return std::make_unique<SkopeoClient>(std::move(options));
}

}  // namespace idlegrid::registry
