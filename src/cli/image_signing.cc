#include "cli/image_signing.h"

#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/support.h"
#include "common/grpc_status.h"
#include "image/signature_files.h"
#include "manifest/manifest.h"

namespace idlegrid::cli {

Result<v1::ImageSignature> SignImage(Client& client, const std::string& image, const image::ImageSigningKey& key) {
  const std::string digest = manifest::ImageDigestOf(image);
  IG_ASSIGN_OR_RETURN(std::string signature, key.Sign(digest));
  v1::AddImageSignatureRequest request;
  request.set_image(digest);
  request.set_public_key(key.public_key().key);
  request.set_signature(signature);
  request.set_key_name(key.public_key().name);
  v1::ImageSignature stored;
  auto ctx = client.Context();
  IG_RETURN_IF_ERROR(FromGrpc(client.stub()->AddImageSignature(ctx.get(), request, &stored)));
  return stored;
}

std::string DescribeSignature(const v1::ImageSignature& signature) {
  std::string out = "signed " + signature.image() + " with key " + signature.key_id();
  if (!signature.key_name().empty()) out += " (" + signature.key_name() + ")";
  return out;
}

int ImageKeygen(const std::string& name) {
  // NAME may carry a directory (keys/owner); the key is named by its last part.
  const std::string label = std::filesystem::path(name).filename().string();
  auto key = image::ImageSigningKey::Generate(label);
  if (!key.ok()) return Fail(key.status());
  if (Status st = image::WriteKeyFiles(*key, name); !st.ok()) return Fail(st);
  std::cout << image::FormatPublicKey(key->public_key());
  std::cerr << "wrote " << name << ".key (secret, mode 0600) and " << name << ".pub; key id " << key->public_key().id()
            << "\n";
  return 0;
}

int ImageSign(const CommonFlags& f, const std::string& image, const std::string& key_file) {
  auto key = image::LoadSigningKeyFile(key_file);
  if (!key.ok()) return Fail(key.status());
  auto client = Open(f);
  if (!client.ok()) return Fail(client.status());
  auto stored = SignImage(**client, image, *key);
  if (!stored.ok()) return Fail(stored.status());
  if (f.json)
    PrintJson(*stored);
  else
    std::cout << DescribeSignature(*stored) << "\n";
  return 0;
}

}  // namespace idlegrid::cli
