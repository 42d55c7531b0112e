#include "codeact/core/result.hpp"

#include <array>

namespace codeact::core {
namespace {
constexpr std::array<std::string_view, 17> kNames = {
    "OK",       "Cancelled",      "Unknown",          "InvalidArgument",   "DeadlineExceeded",
    "NotFound", "AlreadyExists",  "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
    "Aborted",  "OutOfRange",     "Unimplemented",    "Internal",          "Unavailable",
    "DataLoss", "Unauthenticated"};
}  // namespace

std::string_view code_name(Code code) {
  auto i = static_cast<size_t>(code);
  return i < kNames.size() ? kNames[i] : "Unknown";
}

Code code_from_name(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == name) return static_cast<Code>(i);
  }
  return Code::kUnknown;
}

bool is_retryable(Code code) {
  switch (code) {
    case Code::kUnavailable:
    case Code::kDeadlineExceeded:
    case Code::kResourceExhausted:
    case Code::kAborted:
    case Code::kUnknown:
      return true;
    default:
      return false;
  }
}

int http_status(Code code) {
  switch (code) {
    case Code::kOk:
      return 200;
    case Code::kCancelled:
      return 499;
    case Code::kInvalidArgument:
    case Code::kOutOfRange:
      return 400;
    case Code::kFailedPrecondition:
      return 409;
    case Code::kUnauthenticated:
      return 401;
    case Code::kPermissionDenied:
      return 403;
    case Code::kNotFound:
      return 404;
    case Code::kAlreadyExists:
    case Code::kAborted:
      return 409;
    case Code::kResourceExhausted:
      return 429;
    case Code::kUnimplemented:
      return 501;
    case Code::kUnavailable:
      return 503;
    case Code::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

Code code_from_http_status(int status) {
  if (status >= 200 && status < 300) return Code::kOk;
  switch (status) {
    case 400:
      return Code::kInvalidArgument;
    case 401:
      return Code::kUnauthenticated;
    case 403:
      return Code::kPermissionDenied;
    case 404:
      return Code::kNotFound;
    case 408:
      return Code::kUnavailable;
    case 409:
      return Code::kAborted;
    case 412:
      return Code::kFailedPrecondition;
    case 416:
      return Code::kOutOfRange;
    case 429:
      return Code::kResourceExhausted;
    case 499:
      return Code::kCancelled;
    case 501:
      return Code::kUnimplemented;
    default:
      break;
  }
  if (status >= 500 && status < 600) return Code::kUnavailable;
  if (status >= 400 && status < 500) return Code::kInvalidArgument;
  return Code::kUnknown;
}

int exit_code(Code code) {
  switch (code) {
    case Code::kOk:
      return kExitOk;
    case Code::kInvalidArgument:
      return kExitUsage;
    case Code::kUnavailable:
    case Code::kNotFound:
    case Code::kDeadlineExceeded:
      return kExitUnavailable;
    default:
      return kExitFailed;
  }
}

std::string Error::to_string() const {
  std::string out(code_name(code_));
  out += ": ";
  out += message_;
  return out;
}

Error Error::with_context(std::string_view context) const {
  std::string msg(context);
  msg += ": ";
  msg += message_;
  return Error(code_, std::move(msg));
}

Error cancelled(std::string m) { return Error(Code::kCancelled, std::move(m)); }
Error unknown_error(std::string m) { return Error(Code::kUnknown, std::move(m)); }
Error invalid_argument(std::string m) { return Error(Code::kInvalidArgument, std::move(m)); }
Error deadline_exceeded(std::string m) { return Error(Code::kDeadlineExceeded, std::move(m)); }
Error not_found(std::string m) { return Error(Code::kNotFound, std::move(m)); }
Error already_exists(std::string m) { return Error(Code::kAlreadyExists, std::move(m)); }
Error permission_denied(std::string m) { return Error(Code::kPermissionDenied, std::move(m)); }
Error resource_exhausted(std::string m) { return Error(Code::kResourceExhausted, std::move(m)); }
Error failed_precondition(std::string m) { return Error(Code::kFailedPrecondition, std::move(m)); }
Error aborted(std::string m) { return Error(Code::kAborted, std::move(m)); }
Error out_of_range(std::string m) { return Error(Code::kOutOfRange, std::move(m)); }
Error unimplemented(std::string m) { return Error(Code::kUnimplemented, std::move(m)); }
Error internal_error(std::string m) { return Error(Code::kInternal, std::move(m)); }
Error unavailable(std::string m) { return Error(Code::kUnavailable, std::move(m)); }
Error data_loss(std::string m) { return Error(Code::kDataLoss, std::move(m)); }
Error unauthenticated(std::string m) { return Error(Code::kUnauthenticated, std::move(m)); }

}  // namespace codeact::core
