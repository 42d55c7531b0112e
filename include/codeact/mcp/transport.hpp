// McpTransport: moves JSON-RPC messages between the client and one MCP server.
//
// Three implementations (make_transport picks one from the config):
//   - stdio: the server is a child process; newline-delimited JSON on its stdin/stdout; every
//     stderr line goes to the log (and the last lines into the error when it exits);
//   - Streamable HTTP (2025-03-26+): each message is POSTed; the answer is JSON or an SSE stream;
//     the session id (Mcp-Session-Id) is kept and sent back; a GET stream carries server
//     notifications when the server offers one;
//   - HTTP+SSE (2024-11-05): a GET event stream announces the POST endpoint and carries every
//     answer.
// Received messages are delivered to the handler given to start(), from the transport's own
// threads (stdio, SSE) or from inside send() (Streamable HTTP). When the connection ends (the
// process exits, the stream closes) on_closed is called once with the reason.
// Thread-safe: send() may be called from several threads.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "codeact/core/cancel.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/mcp/server_config.hpp"

namespace codeact::mcp {

struct TransportHandlers {
  std::function<void(Json message)> on_message;
  std::function<void(const core::Error& reason)> on_closed;
  // A line/event that is not JSON: the client fails the requests in flight with it.
  std::function<void(const core::Error& problem)> on_malformed;
};

class McpTransport {
 public:
  virtual ~McpTransport() = default;
  // Connects (spawns the process, opens the stream). Unavailable / NotFound with the reason.
  virtual core::Status start(TransportHandlers handlers, std::chrono::milliseconds timeout) = 0;
  // Sends one message. For Streamable HTTP this also reads the answer (up to `timeout`).
  virtual core::Status send(const Json& message, std::chrono::milliseconds timeout,
                            const core::CancelToken* cancel) = 0;
  // Tells the transport which protocol version was negotiated (HTTP sends it as a header).
  virtual void set_protocol_version(const std::string& /*version*/) {}
  // Ends the connection (kills the process after a short grace period). Idempotent.
  virtual void close() = 0;
  // Last lines the server wrote on stderr (stdio), for error messages; "" otherwise.
  virtual std::string stderr_tail() const { return ""; }
};

std::unique_ptr<McpTransport> make_transport(const McpServerConfig& config);

}  // namespace codeact::mcp
