// Image registration for both front doors (image_registration.h).
#include "api/image_registration.h"

namespace idlegrid::api {
namespace {

bool Layered(const v1::RegisterImageRequest& request) {
  return request.archive_digest().empty() && !request.manifest_digest().empty();
}

}  // namespace

TargetOf RegisterImageTarget(Gate& gate, const v1::RegisterImageRequest& request) {
  return gate.Artifact(Layered(request) ? request.manifest_digest() : request.archive_digest());
}

Result<v1::PushImageResponse> RegisterImage(coordinator::Coordinator* c, Gate& gate, const auth::Caller& caller,
                                            const v1::RegisterImageRequest& request) {
  if (!Layered(request)) return c->images().RegisterArchive(request.archive_digest());
  auto may_read = [&](const std::string& digest) -> Status {
    return gate.Check(caller, RequesterMethod("RegisterImage"), gate.Artifact(digest));
  };
  return c->images().RegisterLayered(request.manifest_digest(), may_read);
}

}  // namespace idlegrid::api
