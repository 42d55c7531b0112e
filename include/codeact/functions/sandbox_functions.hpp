// SandboxFunctions: everything sandbox code can call besides Python itself — MCP tools, host
// functions (C++) and custom Python functions — and the glue that puts them into a sandbox
// (DESIGN.md layer `functions`, below the CodeAct agent; it knows nothing of agents or models).
//
//   - MCP tools and host functions become stubs in the kernel (register_functions); a call
//     travels over the kernel's bridge to the host, which calls the MCP server or the C++
//     function. MCP results come back as Python values: structuredContent as objects (a scalar
//     wrapped as {"result": v} is unwrapped), text as str, images/audio/blobs saved as files
//     under /output/mcp/ and returned by path, several parts as a list. A tool error (isError) or
//     a JSON-RPC error is raised in the sandbox as ToolError with the server's message.
//   - Python functions are defined in the kernel once per kernel (SandboxBackend::define); their
//     missing third-party imports are installed once, not per call.
//   - Secrets stay on the host: MCP env/headers are used only by the host's MCP clients; the
//     sandbox sees signatures and results, never configuration.
// prepare() is idempotent and cheap when nothing changed (one kernel round trip): it re-runs
// after a kernel restart or `clear`, which drop kernel-provided names.
//
// Every operation takes the sandbox as a SandboxBackend& and an id: one SandboxFunctions may serve
// many sandboxes (a durable worker keeps one per agent for its whole life, so MCP servers start
// once). The McpServerSet is shared, not owned; the tool list of its servers is cached until a
// server says it changed (list_changed).
// Thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/functions/host_function.hpp"
#include "codeact/functions/python_functions.hpp"
#include "codeact/mcp/server_set.hpp"
#include "codeact/sandbox/sandbox_backend.hpp"

namespace codeact::functions {

// One function callable from sandbox code, as tools_as_func shows it.
struct FunctionInfo {
  std::string name;
  std::string signature;  // "def f(a: int) -> Any"
  std::string doc;
  std::vector<std::string> classes;  // TypedDicts the signature refers to
  std::string origin;                // "mcp:<server>", "host", "python:<file>"
  // Classes, def line, docstring, "..." (what the model reads).
  std::string text() const;
  core::Json to_json() const;
};

// Saves bytes produced by a tool (an image) where sandbox code can read them; returns the path
// as the sandbox sees it.
using FileSink =
    std::function<core::Result<std::string>(const std::string& path, std::string_view bytes)>;
FileSink sandbox_file_sink(sandbox::SandboxBackend& backend, const std::string& sandbox_id);

struct SandboxFunctionsOptions {
  std::shared_ptr<mcp::McpServerSet> mcp;  // may be null
  // Servers of `mcp` whose tools are offered; empty = every configured server.
  std::vector<std::string> mcp_servers;
  std::vector<HostFunction> host_functions;
  std::vector<PythonFunctionSource> python_functions;
  // Per MCP call; 0 = the server's configured timeout.
  std::chrono::milliseconds tool_timeout{0};
  // Where files from tool results go (sandbox path).
  std::string artifacts_dir = "/output/mcp";
};

class SandboxFunctions {
 public:
  explicit SandboxFunctions(SandboxFunctionsOptions options);
  ~SandboxFunctions();

  // MCP tools and host functions (no sandbox needed). Errors: a server that cannot start, a
  // name offered twice (naming both sources).
  core::Result<std::vector<FunctionInfo>> bridged_functions();
  // All functions, Python ones included (their source is analysed in the sandbox's kernel).
  core::Result<std::vector<FunctionInfo>> functions(sandbox::SandboxBackend& backend,
                                                    const std::string& sandbox_id);
  // The prompt variable: one text block per function.
  core::Result<std::vector<std::string>> tools_as_func(sandbox::SandboxBackend& backend,
                                                       const std::string& sandbox_id);

  // Makes every function callable in the sandbox's kernel (stubs, definitions, packages).
  core::Status prepare(sandbox::SandboxBackend& backend, const std::string& sandbox_id);
  // The host side of the bridge: dispatches a call from sandbox code.
  sandbox::BridgeHandler bridge_handler(FileSink files);
  // prepare(), then the cell with this object's bridge (request.bridge is replaced).
  core::Result<sandbox::ExecuteResult> execute(sandbox::SandboxBackend& backend,
                                               const std::string& sandbox_id,
                                               sandbox::ExecuteRequest request);

  // Converts an MCP tool result to the value sandbox code receives (see the header comment).
  static core::Result<core::Json> to_python_value(const mcp::McpCallResult& result,
                                                  const mcp::ToolBinding& binding,
                                                  const FileSink& files,
                                                  const std::string& artifacts_dir);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace codeact::functions
