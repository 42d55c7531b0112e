#include "codeact/temporal/failure.hpp"

namespace codeact::temporal {

std::string_view failure_kind_name(FailureKind kind) {
  switch (kind) {
    case FailureKind::kApplication:
      return "ApplicationFailure";
    case FailureKind::kTimeout:
      return "TimeoutFailure";
    case FailureKind::kCanceled:
      return "CanceledFailure";
    case FailureKind::kTerminated:
      return "TerminatedFailure";
    case FailureKind::kServer:
      return "ServerFailure";
    case FailureKind::kActivity:
      return "ActivityFailure";
    case FailureKind::kRpc:
      return "RpcFailure";
    case FailureKind::kOther:
      return "Failure";
  }
  return "Failure";
}

Failure Failure::application(std::string type, std::string message, bool non_retryable,
                             Json details) {
  Failure f;
  f.kind = FailureKind::kApplication;
  f.code = core::code_from_name(type);
  f.type = std::move(type);
  f.message = std::move(message);
  f.non_retryable = non_retryable;
  f.details = details.is_array() ? std::move(details) : Json::array({std::move(details)});
  return f;
}

Failure Failure::cancelled(std::string message) {
  Failure f;
  f.kind = FailureKind::kCanceled;
  f.code = core::Code::kCancelled;
  f.message = std::move(message);
  return f;
}

Failure Failure::from_error(const core::Error& error) {
  Failure f = application(std::string(core::code_name(error.code())), error.message(),
                          !core::is_retryable(error.code()));
  f.code = error.code();
  return f;
}

Failure Failure::rpc(const core::Error& error) {
  Failure f;
  f.kind = FailureKind::kRpc;
  f.code = error.code();
  f.type = std::string(core::code_name(error.code()));
  f.message = error.message();
  return f;
}

const Failure& Failure::root_cause() const {
  const Failure* f = this;
  while (f->cause) f = f->cause.get();
  return *f;
}

std::string Failure::to_string() const {
  std::string s(failure_kind_name(kind));
  if (!type.empty()) s += " " + type;
  if (!timeout_type.empty()) s += " (" + timeout_type + ")";
  s += ": " + message;
  if (cause) s += "; caused by " + cause->to_string();
  return s;
}

core::Error Failure::to_error() const {
  core::Code c = code;
  switch (kind) {
    case FailureKind::kCanceled:
      c = core::Code::kCancelled;
      break;
    case FailureKind::kTimeout:
      c = core::Code::kDeadlineExceeded;
      break;
    case FailureKind::kTerminated:
      c = core::Code::kAborted;
      break;
    case FailureKind::kActivity:
      if (cause) return cause->to_error();
      break;
    default:
      break;
  }
  return core::Error(c, to_string());
}

}  // namespace codeact::temporal
