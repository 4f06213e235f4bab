// `image` (push, build, base, keygen, sign) and `artifact push`
// (commands.cc, image_build_command.cc, image_base_command.cc,
// image_signing.cc).
#include <memory>
#include <string>

#include "cli/command_groups.h"
#include "cli/commands.h"
#include "cli/image_base.h"
#include "cli/image_build.h"

namespace idlegrid::cli {
namespace {

struct ImageFlags {
  std::string file;
  bool make_public = false;
  std::string sign_key, image_ref, key_name;
  ImageBuildOptions build;
  ImageBaseOptions base;
  std::string base_packages;
};

void AddImagePushAndBuild(CLI::App* image, CommandRegistry& reg, CommonFlags& common,
                          const std::shared_ptr<ImageFlags>& f) {
  auto* push = image->add_subcommand("push", "upload an OCI archive (podman save --format oci-archive)");
  push->add_option("archive", f->file)->required()->check(CLI::ExistingFile);
  push->add_flag("--public", f->make_public, "any account may run it (default: only yours)");
  push->add_option("--sign-key", f->sign_key, "sign the pushed image with this secret-key file (image keygen)")
      ->check(CLI::ExistingFile);
  AddClientFlags(push, common);
  auto* build = image->add_subcommand(
      "build", "build DIR with podman (RUN steps without network, nothing pulled) and push it as image push does");
  build->add_option("dir", f->build.context_dir, "the build context")->required();
  build->add_option("-f,--file", f->build.containerfile,
                    "the Containerfile (default: DIR/Containerfile, else DIR/Dockerfile)");
  build->add_flag("--allow-network", f->build.allow_network, "give RUN steps a network (default: none)");
  build->add_option("--name", f->build.name, "name it: prints NAME@sha256:... (default: the bare digest)");
  build->add_flag("--public", f->build.make_public, "any account may run it (default: only yours)");
  AddClientFlags(build, common);

  reg.Add(build, [f, &common] { return ImageBuild(common, f->build); });
  reg.Add(push, [f, &common] { return ImagePush(common, f->file, f->make_public, f->sign_key); });
}

void AddImageBaseAndKeys(CLI::App* image, CommandRegistry& reg, CommonFlags& common,
                         const std::shared_ptr<ImageFlags>& f) {
  auto* base = image->add_subcommand(
      "base",
      "make a minimal Debian root with mmdebstrap and import it into podman as localhost/NAME:latest, "
      "for a Containerfile's FROM NAME (nothing is pushed)");
  base->add_option("name", f->base.name, "the image's name")->required();
  base->add_option("--packages", f->base_packages, "Debian packages to include, comma-separated (python3-numpy,...)")
      ->required();
  base->add_option("--suite", f->base.suite, "Debian suite")->capture_default_str();
  base->add_option("--mirror", f->base.mirror,
                   "Debian archive URL (default: the host's apt sources' Debian archive, else deb.debian.org)");
  auto* keygen = image->add_subcommand("keygen", "make an Ed25519 key pair for signing images: NAME.key, NAME.pub");
  keygen->add_option("name", f->key_name, "file prefix; the key is named by its last part")->required();
  auto* sign = image->add_subcommand("sign", "sign an image and add the signature to the coordinator");
  sign->add_option("image", f->image_ref, "the image's digest (sha256:..., as image push prints it)")->required();
  sign->add_option("--key", f->sign_key, "secret-key file (image keygen)")->required()->check(CLI::ExistingFile);
  AddClientFlags(sign, common);

  reg.Add(base, [f] {
    f->base.packages = SplitPackageList(f->base_packages);
    return ImageBase(f->base);
  });
  reg.Add(keygen, [f] { return ImageKeygen(f->key_name); });
  reg.Add(sign, [f, &common] { return ImageSign(common, f->image_ref, f->sign_key); });
}

}  // namespace

void RegisterImageCommands(CLI::App& app, CommandRegistry& reg, CommonFlags& common) {
  auto f = std::make_shared<ImageFlags>();
  auto* image = app.add_subcommand("image", "manage images");
  image->require_subcommand(1);
  AddImagePushAndBuild(image, reg, common, f);
  AddImageBaseAndKeys(image, reg, common, f);
  auto* artifact = app.add_subcommand("artifact", "manage artifacts");
  artifact->require_subcommand(1);
  auto* apush = artifact->add_subcommand(
      "push",
      "upload a file, or a directory as a tar (for inputs with unpack: true), as a content-addressed input "
      "artifact");
  apush->add_option("file", f->file, "a file or a directory (regular files and directories only)")
      ->required()
      ->check(CLI::ExistingPath);
  apush->add_flag("--public", f->make_public, "any account may use it (default: only yours)");
  AddClientFlags(apush, common);
  reg.Add(apush, [f, &common] { return ArtifactPush(common, f->file, f->make_public); });
}

}  // namespace idlegrid::cli
