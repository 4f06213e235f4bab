#pragma once
// gRPC shells over the Coordinator: authenticate, translate, call, map errors.
#include <memory>

#include "coordinator/coordinator.h"
#include "idlegrid/v1/idlegrid.grpc.pb.h"

namespace idlegrid::api {

std::unique_ptr<v1::RequesterService::Service> NewRequesterService(coordinator::Coordinator* c);
std::unique_ptr<v1::AgentService::Service> NewAgentService(coordinator::Coordinator* c);

}  // namespace idlegrid::api
