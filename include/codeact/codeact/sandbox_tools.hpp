// SandboxTools: the agent::Toolset through which a model works in ONE sandbox.
//
// Tools: execute_python, execute_bash, read_file, write_file, list_files, list_state_variables,
// read_state_variable, install_additional_packages, clear_python_state. Lifecycle operations
// (start/stop/restart/cleanup, info about other sandboxes) are not tools. The sandbox id is bound
// at construction: no tool schema has a container id, so a model cannot reach another sandbox
// (the seed let it pick any container on the host).
//
// What the model gets back:
//   - execute_python: a compact text — stdout/stderr (each cut to max_output_bytes, head and
//     tail kept, the cut reported), the final expression's value, the error with its traceback,
//     files the cell produced and figures (as paths), names that could not be persisted, and a
//     notice when the kernel was restarted. A raised exception and a cell timeout are results the
//     model reads, not tool failures.
//   - Bad arguments, missing files/variables and refused packages are ModelRetry (the model may
//     fix them); Docker/kernel failures are Errors (a durable wrapper retries those).
// Every execute_python and execute_bash call carries execution id `execution_id(ctx)`, derived
// from the run id, run step and tool_call_id: a retried call (a durable activity retry, a replayed
// step) returns the recorded result instead of running the cell or script again.
//
// Durable mode: the workflow wraps this toolset (agent::RunDrivers::wrap_toolset) so each call
// is an activity; the activity rebuilds SandboxTools from SandboxToolsOptions (JSON-serializable)
// and calls call_tool with the RunContext from the workflow.
//
// Thread-safe (the sandbox serializes cells).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codeact/agent/toolset.hpp"
#include "codeact/functions/sandbox_functions.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"

namespace codeact::codeact {

struct SandboxToolsOptions {
  std::string sandbox_id;                // REQUIRED
  double default_timeout_seconds = 120;  // a cell / bash script when the model gives none
  double max_timeout_seconds = 900;      // the most a model may ask for
  int64_t max_output_bytes = 8000;       // per stream, shown to the model (head + tail)
  int64_t max_read_bytes = 32000;        // read_file / read_state_variable text shown
  int max_retries = 3;                   // failures in a row per tool before the run fails
  std::string files_root = "/output";    // list_files default

  core::Json to_json() const;
  static core::Result<SandboxToolsOptions> from_json(const core::Json& j);
};

class SandboxTools final : public agent::Toolset {
 public:
  // `functions` (may be null): MCP tools / host / Python functions callable from cells.
  SandboxTools(std::shared_ptr<sandbox::SandboxManager> manager, SandboxToolsOptions options,
               std::shared_ptr<functions::SandboxFunctions> functions = nullptr);

  std::string id() const override { return "sandbox"; }
  agent::Task<core::Result<std::vector<agent::ToolInfo>>> get_tools(
      const agent::RunContext& ctx) override;
  agent::Task<agent::ToolResult> call_tool(const agent::ToolCall& call,
                                           const agent::RunContext& ctx) override;

  const SandboxToolsOptions& options() const { return options_; }

  // The tool names, in the order they are listed.
  static std::vector<std::string> tool_names();
  // "<run_id>/<run_step>/<tool_call_id>": stable across retries of one call, distinct per call.
  static std::string execution_id(const agent::RunContext& ctx);
  // The text the model reads for a cell.
  static std::string format_cell(const sandbox::ExecuteResult& r, double timeout_seconds);

 private:
  std::shared_ptr<sandbox::SandboxManager> manager_;
  SandboxToolsOptions options_;
  std::shared_ptr<functions::SandboxFunctions> functions_;
  std::shared_ptr<agent::FunctionToolset> tools_;
};

// Keeps the first and last halves of `text` when it is longer than `max_bytes` (UTF-8 safe),
// with a line "... [N bytes omitted] ..." between; `omitted` receives N.
std::string cut_middle(const std::string& text, int64_t max_bytes, int64_t* omitted = nullptr);

}  // namespace codeact::codeact
