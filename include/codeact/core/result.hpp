// Result<T> and Error: expected failures as values.
//
// Every fallible operation in codeact returns Result<T> (or Status, a Result<void>).
// An Error carries a canonical code from the gRPC set; the code alone decides retry policy
// (is_retryable), the HTTP status, the Temporal ApplicationFailure type and the CLI exit code,
// so these mappings live here and nowhere else. Values are cheap to move and thread-compatible.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace codeact::core {

enum class Code {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// "InvalidArgument", "Unavailable", ... (the gRPC names, also the ApplicationFailure type).
std::string_view code_name(Code code);
// Parses a name produced by code_name(); unknown names give kUnknown.
Code code_from_name(std::string_view name);
// Unavailable, DeadlineExceeded, ResourceExhausted, Aborted and Unknown are worth retrying.
bool is_retryable(Code code);
// The HTTP status a server answers with for an error of this code: 400, 404, 409, 429, 500,
// 503, 504, ... (200 for kOk).
int http_status(Code code);
// The code of an HTTP response status, as a client sees it: 2xx kOk; 400 InvalidArgument,
// 401 Unauthenticated, 403 PermissionDenied, 404 NotFound, 409 Aborted, 412 FailedPrecondition,
// 416 OutOfRange, 429 ResourceExhausted, 499 Cancelled, other 4xx InvalidArgument; 501
// Unimplemented, 408 and every other 5xx Unavailable (the server or a gateway gave up: worth
// retrying); 1xx/3xx Unknown. Callers that know more about a service refine it (a Docker 409
// "already in use" is AlreadyExists).
Code code_from_http_status(int status);

// The exit statuses of the `codeact` command (README.md): `sandbox exec` exits kExitOk when the
// cell ran, kExitFailed when it raised, kExitUsage on a usage error, kExitUnavailable when the
// sandbox or Docker is unavailable.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnavailable = 3;
// The exit status for an error of this code: kExitUsage for InvalidArgument; kExitUnavailable
// when what the command needs is not there or does not answer (Unavailable, NotFound,
// DeadlineExceeded: Docker, the sandbox, Temporal, a model); kExitFailed otherwise (kExitOk for
// kOk).
int exit_code(Code code);

class Error {
 public:
  Error(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  bool retryable() const { return is_retryable(code_); }
  // "Unavailable: docker daemon is not running ..."
  std::string to_string() const;
  // Returns a copy whose message is "<context>: <message>".
  Error with_context(std::string_view context) const;

 private:
  Code code_;
  std::string message_;
};

Error cancelled(std::string message);
Error unknown_error(std::string message);
Error invalid_argument(std::string message);
Error deadline_exceeded(std::string message);
Error not_found(std::string message);
Error already_exists(std::string message);
Error permission_denied(std::string message);
Error resource_exhausted(std::string message);
Error failed_precondition(std::string message);
Error aborted(std::string message);
Error out_of_range(std::string message);
Error unimplemented(std::string message);
Error internal_error(std::string message);
Error unavailable(std::string message);
Error data_loss(std::string message);
Error unauthenticated(std::string message);

// Result<T>: holds either a T or an Error. Access to the wrong alternative is a programming
// error (asserted).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& {
    assert(!ok());
    return std::get<1>(v_);
  }
  Error&& error() && {
    assert(!ok());
    return std::get<1>(std::move(v_));
  }

  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : e_(std::move(error)) {}  // NOLINT

  bool ok() const { return !e_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const& {
    assert(!ok());
    return *e_;
  }
  Error&& error() && {
    assert(!ok());
    return std::move(*e_);
  }

 private:
  std::optional<Error> e_;
};

using Status = Result<void>;

inline Status ok_status() { return Status(); }

}  // namespace codeact::core

// Propagates an error: CODEACT_TRY(auto x, f()); or CODEACT_TRY_STATUS(g());
#define CODEACT_CONCAT_INNER_(a, b) a##b
#define CODEACT_CONCAT_(a, b) CODEACT_CONCAT_INNER_(a, b)
#define CODEACT_TRY_IMPL_(tmp, decl, expr)      \
  auto tmp = (expr);                            \
  if (!tmp.ok()) return std::move(tmp).error(); \
  decl = std::move(tmp).value()
#define CODEACT_TRY(decl, expr) \
  CODEACT_TRY_IMPL_(CODEACT_CONCAT_(codeact_try_, __LINE__), decl, expr)
#define CODEACT_TRY_STATUS(expr)                                          \
  do {                                                                    \
    auto codeact_status_ = (expr);                                        \
    if (!codeact_status_.ok()) return std::move(codeact_status_).error(); \
  } while (0)
