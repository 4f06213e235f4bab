#include "pki/pki.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <memory>
#include <set>
#include <utility>

#include "common/digest.h"
#include "common/fs.h"

namespace idlegrid::pki {
namespace {

template <auto FreeFn>
struct OpenSslDeleter {
  template <typename T>
  void operator()(T* p) const {
    FreeFn(p);
  }
};
using X509Ptr = std::unique_ptr<X509, OpenSslDeleter<X509_free>>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, OpenSslDeleter<EVP_PKEY_free>>;
using BioPtr = std::unique_ptr<BIO, OpenSslDeleter<BIO_free_all>>;
using BignumPtr = std::unique_ptr<BIGNUM, OpenSslDeleter<BN_free>>;
using X509ExtPtr = std::unique_ptr<X509_EXTENSION, OpenSslDeleter<X509_EXTENSION_free>>;
using StorePtr = std::unique_ptr<X509_STORE, OpenSslDeleter<X509_STORE_free>>;
using StoreCtxPtr = std::unique_ptr<X509_STORE_CTX, OpenSslDeleter<X509_STORE_CTX_free>>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, OpenSslDeleter<SSL_CTX_free>>;
using SslPtr = std::unique_ptr<SSL, OpenSslDeleter<SSL_free>>;
using AddrInfoPtr = std::unique_ptr<addrinfo, OpenSslDeleter<freeaddrinfo>>;

constexpr int kCaValidityDays = 3650;
constexpr auto kDiscoveryTimeout = std::chrono::seconds(10);
const char* const kDefaultServerNames[] = {"localhost", "idlegrid-coordinator", "127.0.0.1", "::1"};

// Drains the thread's OpenSSL error queue so a stale entry never leaks into
// the next unrelated failure message.
std::string OpenSslError() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

Status OpenSslFailure(const std::string& what) { return Status::Internal(what + ": " + OpenSslError()); }

// Never prompts on a terminal for an encrypted key; such a key just fails.
int NoPassword(char*, int, int, void*) { return 0; }

Result<X509Ptr> ParseCert(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, NoPassword, nullptr));
  if (!cert) return Status::InvalidArgument("not a PEM certificate: " + OpenSslError());
  return cert;
}

Result<PkeyPtr> ParseKey(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassword, nullptr));
  if (!key) return Status::InvalidArgument("not an unencrypted PEM private key: " + OpenSslError());
  return key;
}

std::string BioContents(BIO* bio) {
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(len));
}

Result<std::string> CertToPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(bio.get(), cert) != 1) return OpenSslFailure("encode certificate");
  return BioContents(bio.get());
}

Result<std::string> KeyToPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return OpenSslFailure("encode private key");
  }
  return BioContents(bio.get());
}

std::string DerFingerprint(X509* cert) {
  unsigned char* der = nullptr;
  int len = i2d_X509(cert, &der);
  if (len <= 0) return "";
  std::string digest = Sha256Digest(std::string_view(reinterpret_cast<char*>(der), len));
  OPENSSL_free(der);
  return digest;
}

std::string SubjectLine(X509* cert) {
  char buf[256];
  X509_NAME_oneline(X509_get_subject_name(cert), buf, sizeof(buf));
  return buf;
}

Result<PkeyPtr> GenerateKey() {
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) return OpenSslFailure("generate EC P-256 key");
  return key;
}

// --- Subject alternative names -------------------------------------------

bool IsIpAddress(const std::string& name) {
  unsigned char buf[16];
  return inet_pton(AF_INET, name.c_str(), buf) == 1 || inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

bool IsPlausibleDnsName(const std::string& name) {
  if (name.empty() || name.size() > 253 || name.front() == '.' || name.front() == '-') return false;
  return std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '-' || c == '.' || c == '_'; });
}

// A comparable key per SAN: DNS names compare case-insensitively and IPs by
// their bytes, so "::1" and "0::1" are the same name.
std::string SanKey(int type, const unsigned char* data, int len) {
  std::string value(reinterpret_cast<const char*>(data), static_cast<size_t>(len));
  if (type == GEN_DNS) {
    std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::tolower(c); });
    return "DNS:" + value;
  }
  return "IP:" + value;
}

std::set<std::string> SansOf(X509* cert) {
  std::set<std::string> keys;
  auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (!names) return keys;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    GENERAL_NAME* gen = sk_GENERAL_NAME_value(names, i);
    if (gen->type == GEN_DNS || gen->type == GEN_IPADD) {
      ASN1_STRING* s = gen->type == GEN_DNS ? gen->d.dNSName : gen->d.iPAddress;
      keys.insert(SanKey(gen->type, ASN1_STRING_get0_data(s), ASN1_STRING_length(s)));
    }
  }
  GENERAL_NAMES_free(names);
  return keys;
}

// Builds the GENERAL_NAME for one host name or IP; nullptr on failure.
GENERAL_NAME* MakeGeneralName(const std::string& name) {
  GENERAL_NAME* gen = GENERAL_NAME_new();
  if (IsIpAddress(name)) {
    ASN1_OCTET_STRING* ip = a2i_IPADDRESS(name.c_str());
    if (!ip) {
      GENERAL_NAME_free(gen);
      return nullptr;
    }
    GENERAL_NAME_set0_value(gen, GEN_IPADD, ip);
  } else {
    ASN1_IA5STRING* dns = ASN1_IA5STRING_new();
    ASN1_STRING_set(dns, name.data(), static_cast<int>(name.size()));
    GENERAL_NAME_set0_value(gen, GEN_DNS, dns);
  }
  return gen;
}

std::string WantedSanKey(const std::string& name) {
  if (!IsIpAddress(name)) {
    return SanKey(GEN_DNS, reinterpret_cast<const unsigned char*>(name.data()), static_cast<int>(name.size()));
  }
  ASN1_OCTET_STRING* ip = a2i_IPADDRESS(name.c_str());
  std::string key = SanKey(GEN_IPADD, ASN1_STRING_get0_data(ip), ASN1_STRING_length(ip));
  ASN1_OCTET_STRING_free(ip);
  return key;
}

Result<std::vector<std::string>> ServerNames(const std::vector<std::string>& extra_names) {
  std::vector<std::string> names(std::begin(kDefaultServerNames), std::end(kDefaultServerNames));
  for (std::string name : extra_names) {
    if (!IsIpAddress(name) && !IsPlausibleDnsName(name)) {
      return Status::InvalidArgument("server name \"" + name + "\" is neither an IP address nor a DNS name");
    }
    if (!IsIpAddress(name)) {
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

// --- Certificate issuance ------------------------------------------------

Status AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return OpenSslFailure(std::string("add extension ") + OBJ_nid2sn(nid));
  }
  return Status::Ok();
}

// A certificate with version, random serial, subject, validity and public key
// set; extensions and the signature are the caller's.
Result<X509Ptr> NewCert(const char* common_name, EVP_PKEY* key, int validity_days, int64_t extra_seconds = 0) {
  X509Ptr cert(X509_new());
  BignumPtr serial(BN_new());
  // 127 random bits: unique in practice and always a positive DER integer.
  if (!cert || !serial || X509_set_version(cert.get(), 2) != 1 ||
      BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      !BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get()))) {
    return OpenSslFailure("create certificate");
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  auto text = [](const char* s) { return reinterpret_cast<const unsigned char*>(s); };
  if (X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, text("idlegrid"), -1, -1, 0) != 1 ||
      X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, text(common_name), -1, -1, 0) != 1) {
    return OpenSslFailure("set certificate subject");
  }
  // Backdated an hour so that agents with a slightly slow clock accept it.
  if (!X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) ||
      !X509_time_adj_ex(X509_getm_notAfter(cert.get()), validity_days, static_cast<long>(extra_seconds), nullptr) ||
      X509_set_pubkey(cert.get(), key) != 1) {
    return OpenSslFailure("set certificate validity and key");
  }
  return cert;
}

Result<X509Ptr> IssueCa(EVP_PKEY* ca_key) {
  IG_ASSIGN_OR_RETURN(X509Ptr cert, NewCert("idlegrid coordinator CA", ca_key, kCaValidityDays));
  X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get()));
  IG_RETURN_IF_ERROR(AddExtension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0"));
  IG_RETURN_IF_ERROR(AddExtension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign"));
  IG_RETURN_IF_ERROR(AddExtension(cert.get(), cert.get(), NID_subject_key_identifier, "hash"));
  if (X509_sign(cert.get(), ca_key, EVP_sha256()) <= 0) return OpenSslFailure("sign CA");
  return cert;
}

Result<X509Ptr> IssueServerCert(X509* ca, EVP_PKEY* ca_key, EVP_PKEY* server_key, const std::vector<std::string>& names,
                                int64_t valid_seconds) {
  IG_ASSIGN_OR_RETURN(X509Ptr cert, NewCert("idlegrid-coordinator", server_key, 0, valid_seconds));
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca));
  // A leaf that outlives its CA would fail verification anyway; cap it.
  if (ASN1_TIME_compare(X509_get0_notAfter(ca), X509_get0_notAfter(cert.get())) < 0) {
    X509_set1_notAfter(cert.get(), X509_get0_notAfter(ca));
  }
  IG_RETURN_IF_ERROR(AddExtension(cert.get(), ca, NID_basic_constraints, "critical,CA:FALSE"));
  IG_RETURN_IF_ERROR(AddExtension(cert.get(), ca, NID_key_usage, "critical,digitalSignature"));
  IG_RETURN_IF_ERROR(AddExtension(cert.get(), ca, NID_ext_key_usage, "serverAuth"));
  IG_RETURN_IF_ERROR(AddExtension(cert.get(), ca, NID_subject_key_identifier, "hash"));
  IG_RETURN_IF_ERROR(AddExtension(cert.get(), ca, NID_authority_key_identifier, "keyid:always"));

  GENERAL_NAMES* sans = sk_GENERAL_NAME_new_null();
  for (const std::string& name : names) {
    GENERAL_NAME* gen = MakeGeneralName(name);
    if (!gen || !sk_GENERAL_NAME_push(sans, gen)) {
      GENERAL_NAME_free(gen);
      GENERAL_NAMES_free(sans);
      return OpenSslFailure("encode subject alternative name " + name);
    }
  }
  int added = X509_add1_ext_i2d(cert.get(), NID_subject_alt_name, sans, 0, X509V3_ADD_DEFAULT);
  GENERAL_NAMES_free(sans);
  if (added != 1) return OpenSslFailure("add subject alternative names");
  if (X509_sign(cert.get(), ca_key, EVP_sha256()) <= 0) return OpenSslFailure("sign server cert");
  return cert;
}

// --- Loading from disk ---------------------------------------------------

struct Ca {
  X509Ptr cert;
  PkeyPtr key;
  std::string cert_pem;
};

Result<Ca> CreateCa(const std::string& dir) {
  IG_ASSIGN_OR_RETURN(PkeyPtr key, GenerateKey());
  IG_ASSIGN_OR_RETURN(X509Ptr cert, IssueCa(key.get()));
  IG_ASSIGN_OR_RETURN(std::string key_pem, KeyToPem(key.get()));
  IG_ASSIGN_OR_RETURN(std::string cert_pem, CertToPem(cert.get()));
  // Key first: ca.crt is what marks the CA as existing, so a crash between the
  // two writes leaves a state that the next start simply redoes.
  IG_RETURN_IF_ERROR(WriteFileAtomic(dir + "/ca.key", key_pem, 0600));
  IG_RETURN_IF_ERROR(WriteFileAtomic(dir + "/ca.crt", cert_pem, 0644));
  return Ca{std::move(cert), std::move(key), std::move(cert_pem)};
}

Result<Ca> LoadOrCreateCa(const std::string& dir) {
  const std::string cert_path = dir + "/ca.crt";
  const std::string key_path = dir + "/ca.key";
  if (!PathExists(cert_path)) return CreateCa(dir);
  if (!PathExists(key_path)) {
    return Status::FailedPrecondition(
        cert_path + " exists but " + key_path +
        " is missing; restore it from backup (a new CA would invalidate every agent's pin)");
  }
  IG_ASSIGN_OR_RETURN(std::string cert_pem, ReadFile(cert_path));
  IG_ASSIGN_OR_RETURN(std::string key_pem, ReadFile(key_path));
  auto cert = ParseCert(cert_pem);
  if (!cert.ok()) return cert.status().WithContext(cert_path);
  auto key = ParseKey(key_pem);
  if (!key.ok()) return key.status().WithContext(key_path);
  if (X509_check_private_key(cert->get(), key->get()) != 1) {
    ERR_clear_error();
    return Status::FailedPrecondition(key_path + " does not match " + cert_path);
  }
  if (X509_check_ca(cert->get()) != 1) {
    return Status::FailedPrecondition(cert_path + " is not a CA certificate");
  }
  if (X509_cmp_current_time(X509_get0_notAfter(cert->get())) <= 0) {
    return Status::FailedPrecondition(cert_path +
                                      " has expired; move the directory aside to create a new CA, then re-enroll "
                                      "every agent with the new fingerprint");
  }
  return Ca{std::move(cert).value(), std::move(key).value(), std::move(cert_pem)};
}

// True if the stored server certificate can be served as is.
bool ServerCertUsable(const Ca& ca, X509* cert, EVP_PKEY* key, const std::vector<std::string>& names,
                      int64_t renew_before_seconds) {
  bool usable = X509_check_private_key(cert, key) == 1 && X509_check_issued(ca.cert.get(), cert) == X509_V_OK &&
                X509_verify(cert, X509_get0_pubkey(ca.cert.get())) == 1;
  ERR_clear_error();
  if (!usable) return false;
  time_t renew_at = time(nullptr) + static_cast<time_t>(renew_before_seconds);
  if (X509_cmp_time(X509_get0_notAfter(cert), &renew_at) <= 0) return false;
  std::set<std::string> present = SansOf(cert);
  return std::all_of(names.begin(), names.end(),
                     [&](const std::string& n) { return present.count(WantedSanKey(n)) > 0; });
}

struct ServerMaterial {
  std::string cert_pem;
  std::string key_pem;
  int64_t not_after_s = 0;
};

// A certificate's notAfter as Unix seconds (0 if it cannot be read).
int64_t NotAfterSeconds(const X509* cert) {
  struct tm t {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &t) != 1) return 0;
  return static_cast<int64_t>(timegm(&t));
}

Result<ServerMaterial> LoadOrIssueServer(const std::string& dir, const Ca& ca, const std::vector<std::string>& names,
                                         const ServerCertLifetime& lifetime) {
  const std::string cert_path = dir + "/server.crt";
  const std::string key_path = dir + "/server.key";
  if (PathExists(cert_path) && PathExists(key_path)) {
    IG_ASSIGN_OR_RETURN(std::string cert_pem, ReadFile(cert_path));
    IG_ASSIGN_OR_RETURN(std::string key_pem, ReadFile(key_path));
    auto cert = ParseCert(cert_pem);
    auto key = ParseKey(key_pem);
    // Anything wrong with the leaf is repaired by re-issuing: unlike the CA,
    // nobody pins it.
    if (cert.ok() && key.ok() && ServerCertUsable(ca, cert->get(), key->get(), names, lifetime.renew_before_seconds)) {
      ServerMaterial kept{std::move(cert_pem), std::move(key_pem), NotAfterSeconds(cert->get())};
      // The identity file is derived: written when missing (a data
      // directory from before it existed) or stale.
      const std::string identity = kept.cert_pem + ca.cert_pem + kept.key_pem;
      auto served = ReadFile(dir + "/" + kServerIdentityFile);
      if (!served.ok() || *served != identity) {
        IG_RETURN_IF_ERROR(WriteFileAtomic(dir + "/" + kServerIdentityFile, identity, 0600));
      }
      return kept;
    }
  }
  IG_ASSIGN_OR_RETURN(PkeyPtr key, GenerateKey());
  IG_ASSIGN_OR_RETURN(X509Ptr cert,
                      IssueServerCert(ca.cert.get(), ca.key.get(), key.get(), names, lifetime.valid_seconds));
  ServerMaterial material;
  IG_ASSIGN_OR_RETURN(material.key_pem, KeyToPem(key.get()));
  IG_ASSIGN_OR_RETURN(material.cert_pem, CertToPem(cert.get()));
  material.not_after_s = NotAfterSeconds(cert.get());
  // What TLS servers read goes first, and whole: the leaf, the CA and the key
  // in one file replaced by one rename, so a reader that takes the key and
  // the chain from it (gRPC's file watcher, twice) never pairs a new key with
  // an old certificate. server.key and server.crt follow for the rest.
  IG_RETURN_IF_ERROR(
      WriteFileAtomic(dir + "/" + kServerIdentityFile, material.cert_pem + ca.cert_pem + material.key_pem, 0600));
  IG_RETURN_IF_ERROR(WriteFileAtomic(key_path, material.key_pem, 0600));
  IG_RETURN_IF_ERROR(WriteFileAtomic(cert_path, material.cert_pem, 0644));
  return material;
}

// --- Discovery -----------------------------------------------------------

using Clock = std::chrono::steady_clock;

struct HostPort {
  std::string host;
  std::string port;
};

Result<HostPort> SplitAddress(const std::string& address) {
  HostPort hp;
  size_t colon;
  if (!address.empty() && address.front() == '[') {
    size_t close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return Status::InvalidArgument("address \"" + address + "\" is not [host]:port");
    }
    hp.host = address.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = address.rfind(':');
    if (colon == std::string::npos) {
      return Status::InvalidArgument("address \"" + address + "\" is not host:port");
    }
    hp.host = address.substr(0, colon);
    if (hp.host.find(':') != std::string::npos) {
      return Status::InvalidArgument("IPv6 address \"" + address + "\" must be written [host]:port");
    }
  }
  hp.port = address.substr(colon + 1);
  bool numeric = !hp.port.empty() && hp.port.size() <= 5 &&
                 std::all_of(hp.port.begin(), hp.port.end(), [](unsigned char c) { return c >= '0' && c <= '9'; });
  if (hp.host.empty() || !numeric || std::stoi(hp.port) == 0 || std::stoi(hp.port) > 65535) {
    return Status::InvalidArgument("address \"" + address + "\" is not host:port");
  }
  return hp;
}

int MillisLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

// Owns a socket descriptor.
class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Socket& operator=(Socket&&) = delete;
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

// OpenSSL writes to the socket with write(2), so a peer that resets the
// connection would raise SIGPIPE and kill the process. Blocks it in this
// thread for the scope and discards one raised meanwhile (as libpq does),
// leaving the process-wide disposition alone.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_mask_);
  }
  ~ScopedSigpipeBlock() {
    sigset_t pending;
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      timespec zero{0, 0};
      sigtimedwait(&pipe_, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  sigset_t pipe_;
  sigset_t old_mask_;
  bool was_pending_ = false;
};

// Non-blocking connect to one resolved address, bounded by `deadline`.
Result<Socket> ConnectOne(const addrinfo* ai, Clock::time_point deadline) {
  Socket sock(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
  if (sock.fd() < 0) return Status::Unavailable(std::strerror(errno));
  if (::connect(sock.fd(), ai->ai_addr, ai->ai_addrlen) == 0) return sock;
  if (errno != EINPROGRESS) return Status::Unavailable(std::strerror(errno));
  pollfd pfd{sock.fd(), POLLOUT, 0};
  int ready = ::poll(&pfd, 1, MillisLeft(deadline));
  if (ready == 0) return Status::Unavailable("connect timed out");
  if (ready < 0) return Status::Unavailable(std::strerror(errno));
  int err = 0;
  socklen_t len = sizeof(err);
  ::getsockopt(sock.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return Status::Unavailable(std::strerror(err));
  return sock;
}

Result<Socket> Connect(const HostPort& hp, Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* raw = nullptr;
  int rc = ::getaddrinfo(hp.host.c_str(), hp.port.c_str(), &hints, &raw);
  if (rc != 0) return Status::Unavailable(gai_strerror(rc));
  AddrInfoPtr list(raw);
  Status last = Status::Unavailable("no addresses");
  for (const addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
    auto sock = ConnectOne(ai, deadline);
    if (sock.ok()) return std::move(sock).value();
    last = sock.status();
  }
  return last;
}

// Drives a non-blocking TLS client handshake until done or `deadline`.
Status Handshake(SSL* ssl, int fd, Clock::time_point deadline) {
  while (true) {
    int rc = SSL_connect(ssl);
    if (rc == 1) return Status::Ok();
    int err = SSL_get_error(ssl, rc);
    short events = err == SSL_ERROR_WANT_READ ? POLLIN : err == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
    if (events == 0) return Status::Unavailable("TLS handshake failed: " + OpenSslError());
    pollfd pfd{fd, events, 0};
    int ready = ::poll(&pfd, 1, MillisLeft(deadline));
    if (ready == 0) return Status::Unavailable("TLS handshake timed out");
    if (ready < 0 && errno != EINTR) return Status::Unavailable(std::strerror(errno));
  }
}

// Checks that `leaf` is a serverAuth certificate issued by `ca` alone.
Status VerifyLeaf(X509* leaf, X509* ca, const std::string& address, const std::string& pin) {
  const std::string leaf_name = SubjectLine(leaf);
  if (X509_verify(leaf, X509_get0_pubkey(ca)) != 1) {
    ERR_clear_error();
    return Status::PermissionDenied("coordinator at " + address + " presented leaf " + leaf_name +
                                    " that is not signed by the pinned CA " + pin);
  }
  StorePtr store(X509_STORE_new());
  StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (!store || !ctx || X509_STORE_add_cert(store.get(), ca) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), leaf, nullptr) != 1 ||
      X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER) != 1) {
    return OpenSslFailure("set up certificate verification");
  }
  if (X509_verify_cert(ctx.get()) != 1) {
    const char* why = X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx.get()));
    ERR_clear_error();
    return Status::PermissionDenied("coordinator at " + address + " presented leaf " + leaf_name +
                                    " that does not verify against the pinned CA " + pin + ": " + why);
  }
  return Status::Ok();
}

}  // namespace

Result<CoordinatorPki> LoadOrCreate(const std::string& dir, const std::vector<std::string>& extra_names,
                                    const ServerCertLifetime& lifetime) {
  if (lifetime.valid_seconds <= 0 || lifetime.renew_before_seconds <= 0 ||
      lifetime.renew_before_seconds >= lifetime.valid_seconds) {
    return Status::InvalidArgument(
        "a server certificate's lifetime must be positive and longer than the time "
        "before its end when it is renewed");
  }
  IG_ASSIGN_OR_RETURN(std::vector<std::string> names, ServerNames(extra_names));
  IG_RETURN_IF_ERROR(MakeDirs(dir, 0700));
  IG_ASSIGN_OR_RETURN(Ca ca, LoadOrCreateCa(dir));
  IG_ASSIGN_OR_RETURN(ServerMaterial server, LoadOrIssueServer(dir, ca, names, lifetime));
  CoordinatorPki pki;
  pki.ca_fingerprint = DerFingerprint(ca.cert.get());
  pki.ca_cert_pem = std::move(ca.cert_pem);
  pki.server_cert_pem = std::move(server.cert_pem);
  pki.server_key_pem = std::move(server.key_pem);
  pki.server_not_after_s = server.not_after_s;
  return pki;
}

Result<std::string> CertFingerprint(const std::string& cert_pem) {
  IG_ASSIGN_OR_RETURN(X509Ptr cert, ParseCert(cert_pem));
  std::string digest = DerFingerprint(cert.get());
  if (digest.empty()) return OpenSslFailure("encode certificate");
  return digest;
}

Result<std::string> FetchPinnedCa(const std::string& address, const std::string& pinned_fingerprint) {
  std::string pin = pinned_fingerprint;
  std::transform(pin.begin(), pin.end(), pin.begin(), [](unsigned char c) { return std::tolower(c); });
  if (!IsValidDigest(pin)) {
    return Status::InvalidArgument("CA fingerprint \"" + pinned_fingerprint +
                                   "\" is not of the form sha256:<64 hex digits>");
  }
  IG_ASSIGN_OR_RETURN(HostPort hp, SplitAddress(address));
  const Clock::time_point deadline = Clock::now() + kDiscoveryTimeout;
  ScopedSigpipeBlock no_sigpipe;
  auto sock = Connect(hp, deadline);
  if (!sock.ok()) return sock.status().WithContext("cannot connect to " + address);

  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return OpenSslFailure("create TLS context");
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  // Deliberately trusts nothing: the pin below is the trust decision.
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  SslPtr ssl(SSL_new(ctx.get()));
  if (!ssl || SSL_set_fd(ssl.get(), sock->fd()) != 1) return OpenSslFailure("create TLS session");
  if (!IsIpAddress(hp.host)) SSL_set_tlsext_host_name(ssl.get(), hp.host.c_str());
  Status shaken = Handshake(ssl.get(), sock->fd(), deadline);
  if (!shaken.ok()) return shaken.WithContext("cannot connect to " + address);

  X509* leaf = SSL_get0_peer_certificate(ssl.get());
  STACK_OF(X509)* chain = SSL_get_peer_cert_chain(ssl.get());
  if (!leaf || !chain) {
    return Status::PermissionDenied("coordinator at " + address + " presented no certificate");
  }
  X509* pinned = nullptr;
  std::string presented;
  for (int i = 0; i < sk_X509_num(chain); ++i) {
    X509* cert = sk_X509_value(chain, i);
    std::string fingerprint = DerFingerprint(cert);
    if (fingerprint == pin && !pinned) pinned = cert;
    presented += (presented.empty() ? "" : ", ") + SubjectLine(cert) + " " + fingerprint;
  }
  SSL_shutdown(ssl.get());  // Best effort close_notify; the session is done either way.
  ERR_clear_error();
  if (!pinned) {
    return Status::PermissionDenied("coordinator at " + address + " did not present a CA with fingerprint " + pin +
                                    "; it presented: " + presented);
  }
  if (X509_check_ca(pinned) != 1) {
    return Status::PermissionDenied("certificate " + SubjectLine(pinned) + " with fingerprint " + pin +
                                    " presented by " + address + " is not a CA");
  }
  IG_RETURN_IF_ERROR(VerifyLeaf(leaf, pinned, address, pin));
  return CertToPem(pinned);
}

}  // namespace idlegrid::pki
