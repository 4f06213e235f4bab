#pragma once
// The one place where Status codes become gRPC codes and HTTP statuses (and back).
#include <grpcpp/grpcpp.h>

#include "common/status.h"

namespace idlegrid {

grpc::Status ToGrpc(const Status& status);
Status FromGrpc(const grpc::Status& status);
int ToHttp(Code code);

}  // namespace idlegrid
