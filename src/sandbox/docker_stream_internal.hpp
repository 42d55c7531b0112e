// Readers for what the Docker engine streams back: newline-delimited JSON messages (build, pull,
// import progress) and the 8-byte-header multiplexed stdout/stderr stream (logs, exec).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::sandbox {

// Splits a byte stream into JSON messages ("{...}\r\n{...}") and passes each parsed one on.
// Lines that are not JSON are passed on as {"stream": line}.
class JsonMessageStream {
 public:
  explicit JsonMessageStream(std::function<void(const core::Json&)> on_message)
      : on_message_(std::move(on_message)) {}
  void feed(std::string_view chunk);
  void finish();  // flushes a last message without its newline

 private:
  void emit(std::string_view line);
  std::function<void(const core::Json&)> on_message_;
  std::string buffer_;
};

// Joins text fragments and passes on complete lines (without "\n" / "\r").
class LineAssembler {
 public:
  explicit LineAssembler(std::function<void(std::string_view)> on_line)
      : on_line_(std::move(on_line)) {}
  void feed(std::string_view text);
  void finish();

 private:
  std::function<void(std::string_view)> on_line_;
  std::string buffer_;
};

// Splits Docker's multiplexed stream (frames of [stream, 0, 0, 0, size:4 big-endian] + payload)
// into stdout and stderr. Data that is not framed (a TTY container) goes to stdout whole.
void demultiplex(std::string_view data, std::string* out, std::string* err);

// An Error for an HTTP error status from the engine: 400 InvalidArgument, 404 NotFound (a missing
// image adds the `codeact image build` hint), 409 AlreadyExists/FailedPrecondition, 500 Internal,
// 503 Unavailable; the message is "docker: <what>: <daemon message>".
core::Error docker_http_error(int status, const std::string& body, std::string_view what);

}  // namespace codeact::sandbox
