// McpClient: a connection to one MCP server (any transport), started on first use.
//
// Lifecycle: initialize (our latest protocol version; the server's answer must be one we speak)
// then notifications/initialized; tools/list follows nextCursor to the end and is cached until the
// server sends notifications/tools/list_changed; tools/call returns content and
// structuredContent. A request that is not answered within its timeout is cancelled
// (notifications/cancelled) and gives DeadlineExceeded; a server that crashed, hung (timed out)
// or sent garbage is closed and started again on the next call, so one bad call never leaves the
// client unusable. Server requests we do not serve (sampling, elicitation) get "method not
// found"; ping and roots/list are answered.
// Thread-safe: calls from several threads run concurrently over one connection.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codeact/core/cancel.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/mcp/server_config.hpp"
#include "codeact/mcp/transport.hpp"

namespace codeact::mcp {

// Protocol versions we speak, newest first; initialize asks for the first.
const std::vector<std::string>& supported_protocol_versions();

struct McpTool {
  std::string name;
  std::string title;
  std::string description;
  Json input_schema = Json::object();
  Json output_schema;  // null when the tool declares none
  Json annotations;    // null when absent
  static McpTool from_json(const Json& j);
  Json to_json() const;
};

struct McpCallResult {
  bool is_error = false;
  Json content = Json::array();  // [{type: text|image|audio|resource|resource_link, ...}]
  Json structured;               // structuredContent, null when absent
  // The text parts joined with "\n".
  std::string text() const;
};

struct McpServerInfo {
  std::string name;
  std::string version;
  std::string protocol_version;
  std::string instructions;
  Json capabilities = Json::object();
};

// Makes the transport of each connection (a restart makes a new one).
using TransportFactory = std::function<std::unique_ptr<McpTransport>(const McpServerConfig&)>;

class McpClient {
 public:
  // Connects through make_transport(config) (transport.hpp): the transport the config names.
  explicit McpClient(McpServerConfig config);
  // Connects through transports made by `make_transport` instead: a fake in tests, a fuzzed one,
  // or an application's own.
  McpClient(McpServerConfig config, TransportFactory make_transport);
  ~McpClient();
  McpClient(const McpClient&) = delete;
  McpClient& operator=(const McpClient&) = delete;

  // Starts the server and initializes the session if that is not done yet. Errors say which
  // server, what failed and (stdio) what it wrote on stderr.
  core::Status connect();
  // All tools (every page). Cached; refreshed after notifications/tools/list_changed.
  core::Result<std::vector<McpTool>> list_tools();
  // Calls a tool. `timeout` 0 = the server's configured timeout. A tool that reports isError is
  // NOT an Error here (see McpCallResult::is_error); JSON-RPC errors and transport failures are.
  core::Result<McpCallResult> call_tool(
      const std::string& name, const Json& arguments,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(0),
      const core::CancelToken* cancel = nullptr);
  // Any request (result object or Error).
  core::Result<Json> request(const std::string& method, Json params,
                             std::chrono::milliseconds timeout = std::chrono::milliseconds(0),
                             const core::CancelToken* cancel = nullptr);
  // Stops the server / ends the session. A later call connects again.
  void close();

  const McpServerConfig& config() const;
  // Valid after connect().
  McpServerInfo server_info() const;
  // Counts notifications/tools/list_changed received (for callers that cache signatures).
  int64_t tools_generation() const;
  // Called (from a transport thread) when the server says its tool list changed.
  void set_on_tools_changed(std::function<void()> callback);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace codeact::mcp
