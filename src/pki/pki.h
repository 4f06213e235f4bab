#pragma once
// The coordinator's own small PKI: a self-signed CA created on first start
// and a TLS server certificate issued from it. Agents trust the coordinator
// by pinning the CA's fingerprint (kubeadm-style discovery), so the CA must
// outlive restarts and the fingerprint must never change silently.
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace idlegrid::pki {

// In the PKI directory: the server's chain and key in one file.
inline constexpr char kServerIdentityFile[] = "server-identity.pem";

struct CoordinatorPki {
  std::string ca_cert_pem;
  std::string server_cert_pem;  // leaf, signed by the CA
  std::string server_key_pem;
  std::string ca_fingerprint;      // "sha256:<hex>" of the CA certificate's DER encoding
  int64_t server_not_after_s = 0;  // when the leaf expires (Unix seconds)
};

// How long a server certificate lasts, and how long before its end it is
// re-issued (at start, and by a running coordinator: api/cert_renewer.h).
struct ServerCertLifetime {
  int64_t valid_seconds = 365LL * 24 * 3600;
  int64_t renew_before_seconds = 30LL * 24 * 3600;
};

// Loads ca.crt, ca.key, server.crt and server.key from `dir`, creating the
// directory (0700) and any missing material on first start. Keys are EC
// P-256; key files are written with mode 0600, certificates with 0644.
//
// The CA (10 years, CA:TRUE, pathlen:0, keyCertSign) is never replaced once
// ca.crt exists: a ca.crt without ca.key, an unparsable file or a key that does
// not match is FailedPrecondition/InvalidArgument naming the file, because
// regenerating would break every agent that pinned the old fingerprint.
//
// The server certificate (`lifetime.valid_seconds`, 1 year by default,
// serverAuth) carries the SANs localhost, idlegrid-coordinator, 127.0.0.1,
// ::1 plus `extra_names` (each an IP SAN if it parses as an IP address, else
// a DNS SAN). It is re-issued from the existing CA with a fresh key when it is
// missing, does not match its key, is not signed by the CA, expires within
// `lifetime.renew_before_seconds` (30 days), or lacks one of the names.
// kServerIdentityFile (the leaf, the CA, then the key, mode 0600: what TLS
// servers load) is kept beside them, written first and by one rename.
// InvalidArgument if an extra name is empty or not a plausible host name, or
// the lifetime is not positive or shorter than its renewal window.
//
// Not safe to call concurrently for the same `dir` (callers hold the data
// directory lock).
Result<CoordinatorPki> LoadOrCreate(const std::string& dir, const std::vector<std::string>& extra_names,
                                    const ServerCertLifetime& lifetime = {});

// "sha256:<hex>" of the DER encoding of the first certificate in `cert_pem`.
// InvalidArgument if no certificate can be parsed.
Result<std::string> CertFingerprint(const std::string& cert_pem);

// Trust-on-pin discovery. Connects to `address` ("host:port", "[v6]:port")
// with TLS but without trusting anything, takes the certificate chain the
// peer sends (leaf + CA), picks the certificate whose fingerprint equals
// `pinned_fingerprint`, checks it is a CA (basicConstraints CA:TRUE) and that
// the leaf is signed by it and valid for serverAuth with it as the only root,
// and returns that CA's PEM. The handshake proves the peer holds the leaf's
// key, so a success means the peer was authorised by the pinned CA.
//
// Errors: InvalidArgument for a malformed address or fingerprint;
// Unavailable "cannot connect to ADDR: ..." when the TCP connect or TLS
// handshake fails or exceeds ~10 s; PermissionDenied when no presented
// certificate has the pinned fingerprint (the message lists what was
// presented), when the pinned certificate is not a CA, or when the leaf is not
// signed by it. Blocking; thread-safe.
Result<std::string> FetchPinnedCa(const std::string& address, const std::string& pinned_fingerprint);

}  // namespace idlegrid::pki
