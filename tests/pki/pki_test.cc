#include "pki/pki.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/digest.h"
#include "common/fs.h"

namespace idlegrid::pki {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/pki_test.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { (void)RemoveTree(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

X509Ptr ParsePem(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509Ptr cert(PEM_read_bio_X509(bio, nullptr, nullptr, nullptr));
  BIO_free(bio);
  return cert;
}

EVP_PKEY* ParseKey(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return key;
}

int FileMode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return st.st_mode & 0777;
}

// Full chain verification of `leaf` with `ca` as the only trusted root.
bool VerifiesAgainst(const std::string& leaf_pem, const std::string& ca_pem) {
  X509Ptr leaf = ParsePem(leaf_pem);
  X509Ptr ca = ParsePem(ca_pem);
  if (!leaf || !ca) return false;
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca.get());
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf.get(), nullptr);
  X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER);
  bool ok = X509_verify_cert(ctx) == 1;
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return ok;
}

bool HasDns(const std::string& pem, const std::string& name) {
  X509Ptr cert = ParsePem(pem);
  return X509_check_host(cert.get(), name.data(), name.size(), X509_CHECK_FLAG_NEVER_CHECK_SUBJECT, nullptr) == 1;
}

bool HasIp(const std::string& pem, const std::string& ip) {
  X509Ptr cert = ParsePem(pem);
  return X509_check_ip_asc(cert.get(), ip.c_str(), 0) == 1;
}

// A TLS server on 127.0.0.1:<ephemeral> that completes handshakes with the
// given leaf, key and extra chain certificates until destroyed. With
// `speak_tls` false it answers every connection with plain text instead.
class TestTlsServer {
 public:
  TestTlsServer(const std::string& leaf_pem, const std::string& key_pem, const std::vector<std::string>& chain_pems,
                bool speak_tls = true) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    X509Ptr leaf = ParsePem(leaf_pem);
    EVP_PKEY* key = ParseKey(key_pem);
    EXPECT_EQ(SSL_CTX_use_certificate(ctx_, leaf.get()), 1);
    EXPECT_EQ(SSL_CTX_use_PrivateKey(ctx_, key), 1);
    EVP_PKEY_free(key);
    for (const std::string& pem : chain_pems) {
      X509Ptr extra = ParsePem(pem);
      EXPECT_EQ(SSL_CTX_add1_chain_cert(ctx_, extra.get()), 1);
    }
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(listen_fd_, 8), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, speak_tls] { Serve(speak_tls); });
  }

  ~TestTlsServer() {
    // shutdown() wakes the blocked accept(); the loop then exits.
    ::shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    ::close(listen_fd_);
    SSL_CTX_free(ctx_);
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  void Serve(bool speak_tls) {
    // The client may hang up while TLS 1.3 session tickets are still being
    // written; only this thread ignores that, so a SIGPIPE raised by the code
    // under test still fails the test.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    while (true) {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      timeval tv{5, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      if (speak_tls) {
        SSL* ssl = SSL_new(ctx_);
        SSL_set_fd(ssl, fd);
        if (SSL_accept(ssl) == 1) {
          char buf[16];
          SSL_read(ssl, buf, sizeof(buf));  // Waits for the client's close.
        }
        SSL_free(ssl);
        ERR_clear_error();
      } else {
        const char reply[] = "HTTP/1.0 400 Bad Request\r\n\r\n";
        (void)!::write(fd, reply, sizeof(reply) - 1);
      }
      ::close(fd);
    }
  }

  SSL_CTX* ctx_ = nullptr;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

TEST(LoadOrCreateTest, CreatesFilesWithPrivateKeysAndReloadsSameCa) {
  TempDir dir;
  const std::string pki_dir = dir.path() + "/pki";
  auto first = LoadOrCreate(pki_dir, {});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  for (const char* name : {"ca.crt", "ca.key", "server.crt", "server.key"}) {
    EXPECT_TRUE(PathExists(pki_dir + "/" + name)) << name;
  }
  EXPECT_EQ(FileMode(pki_dir + "/ca.key"), 0600);
  EXPECT_EQ(FileMode(pki_dir + "/server.key"), 0600);
  EXPECT_EQ(FileMode(pki_dir), 0700);
  EXPECT_TRUE(IsValidDigest(first->ca_fingerprint)) << first->ca_fingerprint;

  auto second = LoadOrCreate(pki_dir, {});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->ca_fingerprint, first->ca_fingerprint);
  EXPECT_EQ(second->ca_cert_pem, first->ca_cert_pem);
  EXPECT_EQ(second->server_cert_pem, first->server_cert_pem);  // Nothing to re-issue.
  EXPECT_EQ(second->server_key_pem, first->server_key_pem);
}

TEST(LoadOrCreateTest, ServerCertIsSignedByCaAndHasDefaultSans) {
  TempDir dir;
  auto pki = LoadOrCreate(dir.path(), {});
  ASSERT_TRUE(pki.ok()) << pki.status().ToString();
  EXPECT_TRUE(VerifiesAgainst(pki->server_cert_pem, pki->ca_cert_pem));
  EXPECT_TRUE(HasDns(pki->server_cert_pem, "localhost"));
  EXPECT_TRUE(HasDns(pki->server_cert_pem, "idlegrid-coordinator"));
  EXPECT_TRUE(HasIp(pki->server_cert_pem, "127.0.0.1"));
  EXPECT_TRUE(HasIp(pki->server_cert_pem, "::1"));
  EXPECT_FALSE(HasDns(pki->server_cert_pem, "example.com"));

  X509Ptr ca = ParsePem(pki->ca_cert_pem);
  EXPECT_EQ(X509_check_ca(ca.get()), 1);
  EXPECT_NE(X509_get_key_usage(ca.get()) & KU_KEY_CERT_SIGN, 0u);
  X509Ptr leaf = ParsePem(pki->server_cert_pem);
  EXPECT_EQ(X509_check_ca(leaf.get()), 0);
  EXPECT_NE(X509_get_extended_key_usage(leaf.get()) & XKU_SSL_SERVER, 0u);
  EVP_PKEY* key = ParseKey(pki->server_key_pem);
  ASSERT_NE(key, nullptr);
  EXPECT_EQ(EVP_PKEY_get_base_id(key), EVP_PKEY_EC);
  EXPECT_EQ(X509_check_private_key(leaf.get(), key), 1);
  EVP_PKEY_free(key);
}

TEST(LoadOrCreateTest, ExtraNameReissuesServerCertFromSameCa) {
  TempDir dir;
  auto before = LoadOrCreate(dir.path(), {});
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  auto after = LoadOrCreate(dir.path(), {"gpu-box.lan", "10.1.2.3"});
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->ca_fingerprint, before->ca_fingerprint);
  EXPECT_NE(after->server_cert_pem, before->server_cert_pem);
  EXPECT_TRUE(HasDns(after->server_cert_pem, "gpu-box.lan"));
  EXPECT_TRUE(HasIp(after->server_cert_pem, "10.1.2.3"));
  EXPECT_FALSE(HasDns(after->server_cert_pem, "10.1.2.3"));  // An IP SAN, not a DNS one.
  EXPECT_TRUE(HasDns(after->server_cert_pem, "localhost"));
  EXPECT_TRUE(VerifiesAgainst(after->server_cert_pem, before->ca_cert_pem));

  // Same names again (in another case and order): served as stored.
  auto again = LoadOrCreate(dir.path(), {"10.1.2.3", "GPU-BOX.lan"});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->server_cert_pem, after->server_cert_pem);
}

TEST(LoadOrCreateTest, ALeafInsideItsRenewalWindowIsReissuedFromTheSameCaWithItsChain) {
  TempDir dir;
  const int64_t now = static_cast<int64_t>(time(nullptr));
  auto first = LoadOrCreate(dir.path(), {}, {60, 30});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_NEAR(static_cast<double>(first->server_not_after_s), static_cast<double>(now + 60), 5);
  auto chain = ReadFile(dir.path() + "/" + kServerIdentityFile);
  ASSERT_TRUE(chain.ok());
  EXPECT_EQ(*chain, first->server_cert_pem + first->ca_cert_pem + first->server_key_pem)
      << "the leaf, the CA, then the key";

  // 60 s left is outside a 30 s window: kept.
  auto kept = LoadOrCreate(dir.path(), {}, {60, 30});
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->server_cert_pem, first->server_cert_pem);
  // Inside a 599 s window: re-issued, from the same CA, for the new lifetime.
  auto renewed = LoadOrCreate(dir.path(), {}, {600, 599});
  ASSERT_TRUE(renewed.ok()) << renewed.status().ToString();
  EXPECT_NE(renewed->server_cert_pem, first->server_cert_pem);
  EXPECT_NE(renewed->server_key_pem, first->server_key_pem) << "a fresh key";
  EXPECT_EQ(renewed->ca_fingerprint, first->ca_fingerprint);
  EXPECT_TRUE(VerifiesAgainst(renewed->server_cert_pem, first->ca_cert_pem));
  EXPECT_NEAR(static_cast<double>(renewed->server_not_after_s), static_cast<double>(now + 600), 5);
  chain = ReadFile(dir.path() + "/" + kServerIdentityFile);
  ASSERT_TRUE(chain.ok());
  EXPECT_EQ(*chain, renewed->server_cert_pem + renewed->ca_cert_pem + renewed->server_key_pem);
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() + "/" + kServerIdentityFile).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "it holds the key";
  auto key = ReadFile(dir.path() + "/server.key");
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(*key, renewed->server_key_pem);

  for (ServerCertLifetime bad : {ServerCertLifetime{0, 0}, ServerCertLifetime{60, 60}, ServerCertLifetime{60, -1}}) {
    auto refused = LoadOrCreate(dir.path(), {}, bad);
    EXPECT_EQ(refused.status().code(), Code::kInvalidArgument) << bad.valid_seconds << "/" << bad.renew_before_seconds;
  }
}

TEST(LoadOrCreateTest, RejectsBadExtraName) {
  TempDir dir;
  EXPECT_EQ(LoadOrCreate(dir.path(), {"bad name,DNS:evil"}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(LoadOrCreate(dir.path(), {""}).status().code(), Code::kInvalidArgument);
}

TEST(LoadOrCreateTest, NeverReplacesCaWhoseKeyIsMissing) {
  TempDir dir;
  ASSERT_TRUE(LoadOrCreate(dir.path(), {}).ok());
  ASSERT_EQ(::unlink((dir.path() + "/ca.key").c_str()), 0);
  auto result = LoadOrCreate(dir.path(), {});
  EXPECT_EQ(result.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(result.status().message().find("ca.key"), std::string::npos) << result.status().message();
}

TEST(LoadOrCreateTest, CorruptCaIsAnErrorNotANewCa) {
  TempDir dir;
  ASSERT_TRUE(LoadOrCreate(dir.path(), {}).ok());
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/ca.crt", "garbage", 0644).ok());
  auto result = LoadOrCreate(dir.path(), {});
  EXPECT_EQ(result.status().code(), Code::kInvalidArgument);
  EXPECT_NE(result.status().message().find("ca.crt"), std::string::npos);
}

TEST(LoadOrCreateTest, CorruptServerCertIsReissued) {
  TempDir dir;
  auto first = LoadOrCreate(dir.path(), {});
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/server.crt", "garbage", 0644).ok());
  auto second = LoadOrCreate(dir.path(), {});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->ca_fingerprint, first->ca_fingerprint);
  EXPECT_TRUE(VerifiesAgainst(second->server_cert_pem, first->ca_cert_pem));
}

TEST(CertFingerprintTest, IsSha256OfDer) {
  TempDir dir;
  auto pki = LoadOrCreate(dir.path(), {});
  ASSERT_TRUE(pki.ok());
  X509Ptr ca = ParsePem(pki->ca_cert_pem);
  unsigned char md[32];
  unsigned int len = 0;
  ASSERT_EQ(X509_digest(ca.get(), EVP_sha256(), md, &len), 1);
  std::string expected = "sha256:";
  char hex[3];
  for (unsigned int i = 0; i < len; ++i) {
    snprintf(hex, sizeof(hex), "%02x", md[i]);
    expected += hex;
  }
  auto fingerprint = CertFingerprint(pki->ca_cert_pem);
  ASSERT_TRUE(fingerprint.ok());
  EXPECT_EQ(*fingerprint, expected);
  EXPECT_EQ(pki->ca_fingerprint, expected);
  EXPECT_EQ(CertFingerprint("not a cert").status().code(), Code::kInvalidArgument);
}

TEST(FetchPinnedCaTest, CorrectPinReturnsCa) {
  TempDir dir;
  auto pki = LoadOrCreate(dir.path(), {});
  ASSERT_TRUE(pki.ok());
  TestTlsServer server(pki->server_cert_pem, pki->server_key_pem, {pki->ca_cert_pem});
  auto ca = FetchPinnedCa(server.address(), pki->ca_fingerprint);
  ASSERT_TRUE(ca.ok()) << ca.status().ToString();
  EXPECT_EQ(*ca, pki->ca_cert_pem);
}

TEST(FetchPinnedCaTest, WrongPinIsPermissionDenied) {
  TempDir dir;
  auto pki = LoadOrCreate(dir.path(), {});
  ASSERT_TRUE(pki.ok());
  TestTlsServer server(pki->server_cert_pem, pki->server_key_pem, {pki->ca_cert_pem});
  const std::string wrong = Sha256Digest("some other CA");
  auto ca = FetchPinnedCa(server.address(), wrong);
  EXPECT_EQ(ca.status().code(), Code::kPermissionDenied);
  // The message names both the pin and what was presented instead.
  EXPECT_NE(ca.status().message().find(wrong), std::string::npos) << ca.status().message();
  EXPECT_NE(ca.status().message().find(pki->ca_fingerprint), std::string::npos) << ca.status().message();
}

TEST(FetchPinnedCaTest, LeafFromAnotherCaWithPinnedCaAppendedIsPermissionDenied) {
  TempDir pinned_dir;
  TempDir attacker_dir;
  auto pinned = LoadOrCreate(pinned_dir.path(), {});
  auto attacker = LoadOrCreate(attacker_dir.path(), {});
  ASSERT_TRUE(pinned.ok() && attacker.ok());
  TestTlsServer server(attacker->server_cert_pem, attacker->server_key_pem, {pinned->ca_cert_pem});
  auto ca = FetchPinnedCa(server.address(), pinned->ca_fingerprint);
  EXPECT_EQ(ca.status().code(), Code::kPermissionDenied);
  EXPECT_NE(ca.status().message().find("not signed"), std::string::npos) << ca.status().message();
}

TEST(FetchPinnedCaTest, PinnedLeafIsNotACa) {
  TempDir dir;
  auto pki = LoadOrCreate(dir.path(), {});
  ASSERT_TRUE(pki.ok());
  TestTlsServer server(pki->server_cert_pem, pki->server_key_pem, {pki->ca_cert_pem});
  auto leaf_fingerprint = CertFingerprint(pki->server_cert_pem);
  ASSERT_TRUE(leaf_fingerprint.ok());
  auto ca = FetchPinnedCa(server.address(), *leaf_fingerprint);
  EXPECT_EQ(ca.status().code(), Code::kPermissionDenied);
  EXPECT_NE(ca.status().message().find("not a CA"), std::string::npos) << ca.status().message();
}

TEST(FetchPinnedCaTest, NothingListeningIsUnavailable) {
  // A bound socket that never listens: connects to it are refused, and no
  // other process can take the port while we hold it.
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  auto ca = FetchPinnedCa(address, Sha256Digest("x"));
  ::close(fd);
  EXPECT_EQ(ca.status().code(), Code::kUnavailable);
  EXPECT_NE(ca.status().message().find("cannot connect to " + address), std::string::npos) << ca.status().message();
}

TEST(FetchPinnedCaTest, NonTlsPeerIsUnavailable) {
  TempDir dir;
  auto pki = LoadOrCreate(dir.path(), {});
  ASSERT_TRUE(pki.ok());
  TestTlsServer server(pki->server_cert_pem, pki->server_key_pem, {}, /*speak_tls=*/false);
  auto ca = FetchPinnedCa(server.address(), pki->ca_fingerprint);
  EXPECT_EQ(ca.status().code(), Code::kUnavailable) << ca.status().ToString();
}

TEST(FetchPinnedCaTest, RejectsMalformedInput) {
  EXPECT_EQ(FetchPinnedCa("127.0.0.1:1", "sha256:abc").status().code(), Code::kInvalidArgument);
  const std::string pin = Sha256Digest("x");
  EXPECT_EQ(FetchPinnedCa("no-port", pin).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(FetchPinnedCa("::1:443", pin).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(FetchPinnedCa("host:99999", pin).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace idlegrid::pki
