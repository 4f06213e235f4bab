#pragma once
// Errors are values. A Status is ok or carries a code and a message a user can
// act on; Result<T> is a value or a Status. Codes map once, at the API edge, to
// gRPC codes, HTTP statuses and CLI exit codes.
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace idlegrid {

enum class Code {
  kOk = 0,
  kInvalidArgument,     // the caller's input is wrong (CLI exit 2, HTTP 400)
  kNotFound,            // HTTP 404
  kAlreadyExists,       // HTTP 409
  kFailedPrecondition,  // state does not allow it (HTTP 409)
  kPermissionDenied,    // HTTP 403
  kUnauthenticated,     // HTTP 401
  kUnavailable,         // retry later (HTTP 503)
  kDataLoss,            // digest mismatch, corrupt data
  kResourceExhausted,   // over a quota or rate limit (HTTP 429, CLI exit 3)
  kInternal,            // a bug or an environment failure (HTTP 500)
};

const char* CodeName(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {Code::kAlreadyExists, std::move(m)}; }
  static Status FailedPrecondition(std::string m) { return {Code::kFailedPrecondition, std::move(m)}; }
  static Status PermissionDenied(std::string m) { return {Code::kPermissionDenied, std::move(m)}; }
  static Status Unauthenticated(std::string m) { return {Code::kUnauthenticated, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status DataLoss(std::string m) { return {Code::kDataLoss, std::move(m)}; }
  static Status ResourceExhausted(std::string m) { return {Code::kResourceExhausted, std::move(m)}; }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NotFound: job j-123 does not exist"
  std::string ToString() const;
  // Returns a copy whose message is "context: message".
  Status WithContext(const std::string& context) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace idlegrid

#define IG_RETURN_IF_ERROR(expr)     \
  do {                               \
    ::idlegrid::Status _st = (expr); \
    if (!_st.ok()) return _st;       \
  } while (0)

#define IG_CONCAT_INNER(a, b) a##b
#define IG_CONCAT(a, b) IG_CONCAT_INNER(a, b)
#define IG_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
#define IG_ASSIGN_OR_RETURN(lhs, expr) IG_ASSIGN_OR_RETURN_IMPL(IG_CONCAT(_res_, __LINE__), lhs, expr)
