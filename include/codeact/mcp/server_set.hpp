// McpServerSet: the MCP servers of a configuration, started lazily, with their tools bound to
// Python callable names. This is what the agent layer uses (the seed's `_get_mcp_toolsets`) and
// what the CodeAct toolset injects into sandboxes.
//
// Tool names become Python identifiers once (python_identifier) and that identifier is the name
// the model sees and calls. Two servers offering the same (identifier) name is an error naming
// both servers and the tool. Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codeact/core/result.hpp"
#include "codeact/mcp/client.hpp"
#include "codeact/mcp/python_signature.hpp"
#include "codeact/mcp/server_config.hpp"

namespace codeact::mcp {

struct ToolBinding {
  std::string server;      // server name in the config
  McpTool tool;            // as the server advertised it
  PythonSignature python;  // python.name is the callable name
};

class McpServerSet {
 public:
  explicit McpServerSet(std::vector<McpServerEntry> servers);
  explicit McpServerSet(std::vector<McpServerConfig> servers);
  // From app_conf.yml (see load_mcp_servers).
  static core::Result<std::shared_ptr<McpServerSet>> from_config_file(
      const std::string& explicit_path = "");
  ~McpServerSet();

  std::vector<std::string> names() const;
  bool contains(const std::string& server) const;
  // The client of a server (NotFound for an unknown name; the config error for a broken entry).
  core::Result<std::shared_ptr<McpClient>> client(const std::string& server);
  // Tools of the given servers (all when empty), in server then tool order. Errors: unknown
  // server, a server that cannot start, a name exposed twice.
  core::Result<std::vector<ToolBinding>> tools(const std::vector<std::string>& servers = {});
  // Calls a tool by the server's tool name.
  core::Result<McpCallResult> call(
      const std::string& server, const std::string& tool, const Json& arguments,
      std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  // Closes every connection.
  void close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Binds tools of several servers to callable names: InvalidArgument naming both servers when two
// tools get the same name. `tools` is (server, tool) in the order wanted.
core::Result<std::vector<ToolBinding>> bind_tools(
    const std::vector<std::pair<std::string, McpTool>>& tools);

}  // namespace codeact::mcp
