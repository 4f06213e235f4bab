#pragma once
// The certificate and key the HTTPS API presents, replaceable while it
// serves: each new TLS handshake takes the identity current at that moment
// (OpenSSL's certificate callback), so a renewed certificate is used from the
// next connection on and connections already open are left alone.
#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "common/mutex.h"
#include "common/status.h"

namespace idlegrid::api {

class TlsIdentity {
 public:
  // `chain_pem`: the leaf first, then its issuers. InvalidArgument if it or
  // the key cannot be parsed, or the key is not the leaf's.
  Status Set(const std::string& chain_pem, const std::string& key_pem);
  // Makes every handshake on `ctx` use the current identity (once set).
  void Install(SSL_CTX* ctx);

 private:
  struct Material;
  static int Select(SSL* ssl, void* self);
  std::shared_ptr<const Material> Current();

  Mutex mu_;
  std::shared_ptr<const Material> current_ IG_GUARDED_BY(mu_);
};

}  // namespace idlegrid::api
