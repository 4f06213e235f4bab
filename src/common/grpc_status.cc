#include "common/grpc_status.h"

namespace idlegrid {

grpc::Status ToGrpc(const Status& s) {
  switch (s.code()) {
    case Code::kOk:
      return grpc::Status::OK;
    case Code::kInvalidArgument:
      return {grpc::StatusCode::INVALID_ARGUMENT, s.message()};
    case Code::kNotFound:
      return {grpc::StatusCode::NOT_FOUND, s.message()};
    case Code::kAlreadyExists:
      return {grpc::StatusCode::ALREADY_EXISTS, s.message()};
    case Code::kFailedPrecondition:
      return {grpc::StatusCode::FAILED_PRECONDITION, s.message()};
    case Code::kPermissionDenied:
      return {grpc::StatusCode::PERMISSION_DENIED, s.message()};
    case Code::kUnauthenticated:
      return {grpc::StatusCode::UNAUTHENTICATED, s.message()};
    case Code::kUnavailable:
      return {grpc::StatusCode::UNAVAILABLE, s.message()};
    case Code::kDataLoss:
      return {grpc::StatusCode::DATA_LOSS, s.message()};
    case Code::kResourceExhausted:
      return {grpc::StatusCode::RESOURCE_EXHAUSTED, s.message()};
    case Code::kInternal:
      return {grpc::StatusCode::INTERNAL, s.message()};
  }
  return {grpc::StatusCode::UNKNOWN, s.message()};
}

Status FromGrpc(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::OK:
      return Status::Ok();
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      return Status::InvalidArgument(s.error_message());
    case grpc::StatusCode::NOT_FOUND:
      return Status::NotFound(s.error_message());
    case grpc::StatusCode::ALREADY_EXISTS:
      return Status::AlreadyExists(s.error_message());
    case grpc::StatusCode::FAILED_PRECONDITION:
      return Status::FailedPrecondition(s.error_message());
    case grpc::StatusCode::PERMISSION_DENIED:
      return Status::PermissionDenied(s.error_message());
    case grpc::StatusCode::UNAUTHENTICATED:
      return Status::Unauthenticated(s.error_message());
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Status::Unavailable(s.error_message());
    case grpc::StatusCode::DATA_LOSS:
      return Status::DataLoss(s.error_message());
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return Status::ResourceExhausted(s.error_message());
    default:
      return Status::Internal(s.error_message());
  }
}

int ToHttp(Code code) {
  switch (code) {
    case Code::kOk:
      return 200;
    case Code::kInvalidArgument:
      return 400;
    case Code::kNotFound:
      return 404;
    case Code::kAlreadyExists:
    case Code::kFailedPrecondition:
      return 409;
    case Code::kPermissionDenied:
      return 403;
    case Code::kUnauthenticated:
      return 401;
    case Code::kUnavailable:
      return 503;
    case Code::kResourceExhausted:
      return 429;
    default:
      return 500;
  }
}

}  // namespace idlegrid
