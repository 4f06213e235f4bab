#pragma once
// Registering an image from blobs already uploaded, for both front doors
// (gRPC's RegisterImage, HTTPS's POST /v1/images): a whole OCI archive, or a
// manifest whose config and layers are each stored. Registering reads them,
// so the caller must be able to read the archive (or the manifest) and, for
// a manifest, every blob it names.
#include "api/gate.h"
#include "common/status.h"
#include "idlegrid/v1/idlegrid.pb.h"

namespace idlegrid::api {

// The object RegisterImage is admitted against: the archive, or the manifest.
TargetOf RegisterImageTarget(Gate& gate, const v1::RegisterImageRequest& request);

// Registers it for the admitted `caller` (each of a manifest's blobs checked too).
Result<v1::PushImageResponse> RegisterImage(coordinator::Coordinator* c, Gate& gate, const auth::Caller& caller,
                                            const v1::RegisterImageRequest& request);

}  // namespace idlegrid::api
