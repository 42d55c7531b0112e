// SandboxTools: the agent::Toolset through which a model works in ONE sandbox.
//
// Tools (tool_names(), in the order listed): execute_python, execute_bash, read_file, write_file,
// list_files, list_state_variables, read_state_variable, install_additional_packages,
// clear_python_state. Lifecycle operations (start/stop/restart/cleanup, info about other
// sandboxes) are not tools. The sandbox id is bound at construction: no tool schema has a
// container id, so a model cannot reach another sandbox (the seed let it pick any container on
// the host).
//
// What the model gets back:
//   - execute_python: a compact text (format_cell) — stdout/stderr (each cut to max_output_bytes,
//     head and tail kept, the cut reported), the final expression's value, the error with its
//     traceback, files the cell produced and figures (as paths), names that could not be
//     persisted, and a notice when the kernel was restarted. A raised exception and a cell
//     timeout are results the model reads, not tool failures.
//   - Bad arguments, missing files/variables and refused packages are ModelRetry (the model may
//     fix them); Docker/kernel failures are Errors (a durable activity retries those), see
//     tool_result_from_error().
// While a cell runs, what it prints goes to the call's RunContext::on_output (when set), piece by
// piece as the kernel sends it (cut past the backend's stream cap); the result then has it all,
// cut to max_output_bytes. execute_bash does not stream: the backend returns a script's output
// when it ends (SandboxBackend::bash).
// Every call that changes the sandbox (execute_python, execute_bash, write_file,
// install_additional_packages' Python packages, clear_python_state) carries execution id
// `execution_id(ctx)`, derived from the run id, run step and tool_call_id: a retried call (a
// durable activity retry, a replayed step) returns the recorded result instead of running the
// cell, script, write, install or clear again. Calls from a re-run cell to host functions and
// MCP tools are not made again either (the kernel's call journal; docs/durable.md).
//
// Durable mode: the workflow's copy of this toolset (same id, same tools) turns each call into a
// codeact.tool_call activity; the worker binds the agent again (codeact/agent_binding.hpp) and
// calls this toolset's call_tool with the RunContext from the workflow.
//
// Owns nothing but shared handles: the backend and the functions are shared with other toolsets.
// Thread-safe (the backend serializes cells of one sandbox).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codeact/agent/toolset.hpp"
#include "codeact/core/result.hpp"
#include "codeact/functions/sandbox_functions.hpp"
#include "codeact/sandbox/sandbox_backend.hpp"

namespace codeact::codeact {

struct SandboxToolsOptions {
  std::string sandbox_id;                // REQUIRED (the binding sets it)
  double default_timeout_seconds = 120;  // a cell / bash script when the model gives none
  double max_timeout_seconds = 900;      // the most a model may ask for (at least 1)
  int64_t max_output_bytes = 8000;       // per stream, shown to the model (head + tail)
  int64_t max_read_bytes = 32000;        // read_file / read_state_variable text shown
  int max_retries = 3;                   // failures in a row per tool before the run fails
  std::string files_root = "/output";    // list_files default

  // InvalidArgument naming the first field out of range (no sandbox id, a maximum timeout below
  // 1 s, a default that is not positive, negative limits).
  core::Status validate() const;
  bool operator==(const SandboxToolsOptions&) const = default;
};

class SandboxTools final : public agent::Toolset {
 public:
  // The toolset's id, which names it in durable tool-call activities.
  static constexpr const char* kId = "sandbox";

  // `functions` (may be null): MCP tools / host / Python functions callable from cells.
  SandboxTools(std::shared_ptr<sandbox::SandboxBackend> backend, SandboxToolsOptions options,
               std::shared_ptr<functions::SandboxFunctions> functions = nullptr);

  std::string id() const override { return kId; }
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
  // The seconds a cell or script gets: `asked` (or default_timeout_seconds), clamped to
  // [1, max_timeout_seconds].
  static double timeout_for(const SandboxToolsOptions& options, std::optional<double> asked);

 private:
  SandboxToolsOptions options_;
  std::shared_ptr<agent::FunctionToolset> tools_;
};

// What a failed sandbox operation means to the model: an error it can act on (InvalidArgument,
// NotFound, PermissionDenied, FailedPrecondition, OutOfRange, AlreadyExists) becomes a ModelRetry
// with the error's message; any other error stays an Error (Unavailable, DeadlineExceeded,
// Internal... — a durable activity retries the retryable ones).
agent::ToolResult tool_result_from_error(const core::Error& error);

// Keeps the first and last halves of `text` when it is longer than `max_bytes` (UTF-8 safe: a
// character is never split), with a line "... [N bytes omitted] ..." between; `omitted`
// receives N. `max_bytes` <= 0 means no limit.
std::string cut_middle(const std::string& text, int64_t max_bytes, int64_t* omitted = nullptr);

}  // namespace codeact::codeact
