// Failures as Temporal sees them, and Outcome<T>: a value or a Failure.
//
// A Failure is the C++ form of temporal.api.failure.v1.Failure: what went wrong in a workflow or
// activity (an application error with a type, a timeout, a cancellation, a termination), with
// the chain of causes. Outcome<T> is what workflow code gets from an activity and what a client
// gets from a workflow run: the value, or the Failure with the server's message. Plain values,
// thread-compatible.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::temporal {

using core::Json;

enum class FailureKind {
  kApplication,  // ApplicationFailure: raised by workflow or activity code
  kTimeout,      // an activity or workflow ran past one of its timeouts
  kCanceled,     // cancelled on request
  kTerminated,   // terminated by an operator or client
  kServer,       // the server rejected or failed something
  kActivity,     // wrapper: an activity failed; `cause` says how
  kRpc,          // the call to the server itself failed (client side); `code` says how
  kOther,
};

std::string_view failure_kind_name(FailureKind kind);

struct Failure {
  FailureKind kind = FailureKind::kApplication;
  std::string message;
  std::string type;  // ApplicationFailure type, e.g. "ValueError", "InvalidArgument"
  bool non_retryable = false;
  Json details = Json::array();  // decoded detail payloads (an array)
  std::string stack_trace;
  std::string timeout_type;   // for kTimeout: "StartToClose", "ScheduleToClose", "Heartbeat", ...
  std::string activity_type;  // set when the failure came from an activity
  std::string activity_id;
  core::Code code = core::Code::kUnknown;  // for kRpc; for kApplication from code_from_name(type)
  std::shared_ptr<Failure> cause;

  static Failure application(std::string type, std::string message, bool non_retryable = false,
                             Json details = Json::array());
  // An ApplicationFailure whose type is the canonical code name and which is non-retryable when
  // the code is not worth retrying (core's one mapping).
  static Failure from_error(const core::Error& error);
  static Failure rpc(const core::Error& error);
  // A CanceledFailure (kind kCanceled, code kCancelled).
  static Failure cancelled(std::string message);

  // The innermost cause (this failure when it has none).
  const Failure& root_cause() const;
  // "<kind> <type>: <message>" including causes, for logs and errors.
  std::string to_string() const;
  // A core Error: the code from the type (or kCancelled/kDeadlineExceeded/kAborted by kind).
  core::Error to_error() const;
};

// Thrown by workflow code (or an activity) to fail with a given ApplicationFailure. Any other
// exception thrown by workflow code fails the workflow *task* (retried by the server), as in the
// official SDKs; this one fails the workflow execution.
class ApplicationError : public std::runtime_error {
 public:
  explicit ApplicationError(Failure failure)
      : std::runtime_error(failure.message), failure_(std::move(failure)) {}
  ApplicationError(std::string type, std::string message, bool non_retryable = false,
                   Json details = Json::array())
      : ApplicationError(Failure::application(std::move(type), std::move(message), non_retryable,
                                              std::move(details))) {}
  const Failure& failure() const { return failure_; }

 private:
  Failure failure_;
};

template <typename T>
class Outcome {
 public:
  Outcome(T value) : v_(std::move(value)) {}            // NOLINT: implicit by design
  Outcome(Failure failure) : v_(std::move(failure)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }
  const Failure& failure() const { return std::get<1>(v_); }
  // Throws ApplicationError(failure()) when failed: lets workflow code propagate a failure.
  T value_or_throw() && {
    if (!ok()) throw ApplicationError(failure());
    return std::get<0>(std::move(v_));
  }

 private:
  std::variant<T, Failure> v_;
};

}  // namespace codeact::temporal
