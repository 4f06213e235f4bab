#include "api/tls_identity.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

namespace idlegrid::api {

struct TlsIdentity::Material {
  X509* leaf = nullptr;
  EVP_PKEY* key = nullptr;
  STACK_OF(X509) * chain = nullptr;  // the issuers after the leaf
  ~Material() {
    X509_free(leaf);
    EVP_PKEY_free(key);
    sk_X509_pop_free(chain, X509_free);
  }
};

Status TlsIdentity::Set(const std::string& chain_pem, const std::string& key_pem) {
  auto m = std::make_shared<Material>();
  BIO* certs = BIO_new_mem_buf(chain_pem.data(), static_cast<int>(chain_pem.size()));
  BIO* key = BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size()));
  m->chain = sk_X509_new_null();
  if (certs && key && m->chain) {
    m->leaf = PEM_read_bio_X509(certs, nullptr, nullptr, nullptr);
    while (X509* issuer = PEM_read_bio_X509(certs, nullptr, nullptr, nullptr)) sk_X509_push(m->chain, issuer);
    m->key = PEM_read_bio_PrivateKey(key, nullptr, nullptr, nullptr);
  }
  BIO_free(certs);
  BIO_free(key);
  ERR_clear_error();  // reading past the last certificate leaves an error behind
  if (!m->leaf || !m->key) return Status::InvalidArgument("the HTTPS certificate or key cannot be parsed");
  if (X509_check_private_key(m->leaf, m->key) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument("the HTTPS key is not the certificate's");
  }
  MutexLock lock(&mu_);
  current_ = std::move(m);
  return Status::Ok();
}

std::shared_ptr<const TlsIdentity::Material> TlsIdentity::Current() {
  MutexLock lock(&mu_);
  return current_;
}

void TlsIdentity::Install(SSL_CTX* ctx) { SSL_CTX_set_cert_cb(ctx, &TlsIdentity::Select, this); }

int TlsIdentity::Select(SSL* ssl, void* self) {
  auto m = static_cast<TlsIdentity*>(self)->Current();
  if (!m) return 1;  // none set: the context's own certificate
  // Copies references into this connection; a later Set leaves it alone.
  return SSL_use_cert_and_key(ssl, m->leaf, m->key, m->chain, 1) == 1 ? 1 : 0;
}

}  // namespace idlegrid::api
