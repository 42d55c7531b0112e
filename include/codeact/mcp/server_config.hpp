// McpServerConfig: how to reach one MCP server, as written under `mcp_servers:` in app_conf.yml.
//
//   mcp_servers:
//     time:  { command: mcp-server-time, args: [], env: {} }                    # stdio
//     docs:  { url: "http://127.0.0.1:8000/mcp",
//              headers: { Authorization: "Bearer ${DOCS_TOKEN}" } }       # streamable HTTP
//     old:   { url: "http://127.0.0.1:9000/sse" }                         # HTTP+SSE (2024-11-05)
//
// Keys: command/args/env/cwd (stdio), url/headers (HTTP), transport (stdio | http | sse; default
// from the keys, and "sse" for a URL whose path ends in /sse), timeout (seconds per request,
// default 60), init_timeout (seconds to start and initialize, default 30).
// ${VAR} is interpolated per server, when that server is read, so an unset variable only breaks
// the server that uses it. Env values and headers are credentials: they go to the server process
// or its HTTP requests only (never into a sandbox, a prompt or a Temporal payload), and
// to_json(redact=true) hides them.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "codeact/core/config.hpp"
#include "codeact/core/http_client.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::mcp {

using core::Json;

enum class TransportKind { kStdio, kStreamableHttp, kSse };

std::string_view transport_name(TransportKind kind);  // "stdio", "http", "sse"

struct McpServerConfig {
  std::string name;
  TransportKind transport = TransportKind::kStdio;
  // stdio
  std::string command;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;  // added to the inherited environment
  std::string cwd;
  // HTTP (Streamable HTTP or HTTP+SSE)
  std::string url;
  core::Headers headers;
  std::chrono::milliseconds timeout{60000};       // per request
  std::chrono::milliseconds init_timeout{30000};  // start + initialize

  // Parses one entry of `mcp_servers` (after interpolation). InvalidArgument naming the server
  // and the key when something is wrong.
  static core::Result<McpServerConfig> from_json(const std::string& name, const Json& j);
  // {name, transport, command, args, cwd, url, env: {K: "***"}, headers: {K: "***"}, ...}
  Json to_json(bool redact = true) const;
  // "stdio: mcp-server-time" / "http: http://127.0.0.1:8000/mcp"
  std::string describe() const;
};

// One entry per server under `mcp_servers`, in name order (Json objects are sorted); a server
// whose entry is broken (bad key, unset ${VAR}) comes back as an error for that server only.
struct McpServerEntry {
  std::string name;
  core::Result<McpServerConfig> config;
};

// Reads `mcp_servers` from an app_conf.yml document (a missing section is an empty list).
core::Result<std::vector<McpServerEntry>> parse_mcp_servers(
    const Json& app_conf, const core::EnvLookup& env = core::getenv_string);
// Finds app_conf.yml (explicit path, $APP_CONFIG_PATH, ./, ~/.config/codeact/, /etc/codeact/)
// and reads its `mcp_servers`.
core::Result<std::vector<McpServerEntry>> load_mcp_servers(
    const std::string& explicit_path = "", const core::EnvLookup& env = core::getenv_string);

}  // namespace codeact::mcp
