// Tools and toolsets (after pydantic-ai's `tools.py` and `toolsets/`).
//
// A Toolset lists the tools the model may call (get_tools) and runs one call (call_tool). Both are
// Tasks, so the agent loop can await them inside a workflow: the durable layer wraps each of an
// agent's toolsets so that each call becomes an activity routed by the toolset's id(), without a
// second loop. Wrappers add one behaviour each:
// FilteredToolset (hide tools), PrefixedToolset (name -> prefix_name), RenamedToolset (explicit
// renames), CombinedToolset (several toolsets as one; a name may appear only once).
//
// A tool call ends as one of:
//   - ToolReturn: the result (JSON content; optional text shown to the model instead of content);
//   - ModelRetry: a message for the model, which may try again (bad arguments, "file not found");
//   - Error: the tool failed. The loop returns it to the model as a retry prompt too (the model
//     can often recover), except Cancelled, which ends the run.
// Retries are counted per tool name against ToolInfo::max_retries (default: the agent's).
//
// Thread-safety: get_tools/call_tool may be called concurrently for different calls; tool
// handlers of non-sequential tools must be thread-safe (direct mode runs them on threads).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "codeact/agent/schema.hpp"
#include "codeact/agent/task.hpp"
#include "codeact/core/cancel.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/llm/messages.hpp"
#include "codeact/llm/model.hpp"

namespace codeact::agent {

// Where a tool sends what it shows while it runs (a cell's prints), before its result: `stream`
// is "stdout" or "stderr", `text` the next piece of that stream, in order (not cut into lines).
// May be called from any thread the tool runs on; must return quickly.
using ToolOutputSink = std::function<void(const std::string& stream, const std::string& text)>;

// What a tool (and the instructions function) knows about the run. Copyable; apart from the
// executor, cancel and messages pointers and the output sink it is plain data, so the durable
// layer ships it to an activity (its JSON form is in durable/payloads.hpp).
struct RunContext {
  Json deps;  // user data for tools and instructions (e.g. {"sandbox_id": ...})
  std::string agent_name;
  std::string run_id;
  int run_step = 0;    // 1 for the first model request
  llm::Usage usage;    // usage so far
  std::string prompt;  // the user prompt of this run
  // Set for tool calls:
  std::string tool_name;
  std::string tool_call_id;
  int retry = 0;  // how many times this tool has failed in a row so far
  int max_retries = 0;
  // Not serialized:
  Executor* executor = nullptr;  // where to resume after blocking work (null = inline)
  const core::CancelToken* cancel = nullptr;
  // The conversation so far. Null in a durable tool call (the codeact.tool_call activity does
  // not carry the conversation; durable/durable_agent.hpp); set for the instructions.
  const std::vector<llm::ModelMessage>* messages = nullptr;
  // Set for a tool call when someone watches the run: the agent loop turns what a tool sends here
  // into ToolOutputEvents (agent.hpp); a durable worker publishes it (durable/live_output.hpp).
  // Empty = nobody watches (a tool then need not ask for live output at all). Valid while the
  // call runs; a tool must not keep it past its return.
  ToolOutputSink on_output;
};

struct ToolReturn {
  Json content;
  // When set, the model sees this text instead of content; content then goes with the
  // ToolReturnPart as its metadata, for the application (events, the page).
  std::optional<std::string> text;
  bool operator==(const ToolReturn&) const = default;
};

struct ModelRetry {
  std::string message;
  bool operator==(const ModelRetry&) const = default;
};

using ToolOutcome = std::variant<ToolReturn, ModelRetry>;
using ToolResult = core::Result<ToolOutcome>;

// A tool definition as the agent sees it: what the model is told plus the loop's policy.
struct ToolInfo {
  llm::ToolDefinition definition;
  // Failures allowed before the run fails; nullopt = the agent's default.
  std::optional<int> max_retries;
  // Never run concurrently with other calls of the same model response.
  bool sequential = false;
  bool operator==(const ToolInfo&) const = default;

  const std::string& name() const { return definition.name; }
};

struct ToolCall {
  std::string tool_name;
  Json args = Json::object();
  std::string tool_call_id;
};

class Toolset {
 public:
  virtual ~Toolset() = default;
  // A stable id, unique among an agent's toolsets: the durable layer routes each codeact.tool_call
  // activity to the toolset with this id on the worker.
  virtual std::string id() const = 0;
  // The tools available for this run step. In durable mode it is called once per run, when the
  // agent is prepared (codeact.agent_prepare), and that list serves every step
  // (durable/durable_agent.hpp).
  virtual Task<core::Result<std::vector<ToolInfo>>> get_tools(const RunContext& ctx) = 0;
  // Runs one call. REQUIRES: call.tool_name was listed by get_tools for this step.
  // `ctx.tool_name`, `tool_call_id`, `retry`, `max_retries` describe this call.
  virtual Task<ToolResult> call_tool(const ToolCall& call, const RunContext& ctx) = 0;
};

// ---------------------------------------------------------------------------------------------
// Function tools

// A tool backed by a C++ function.
struct Tool {
  ToolInfo info;
  // Runs the call; blocking is fine (direct mode runs it on a thread unless sequential).
  std::function<ToolResult(const Json& args, const RunContext& ctx)> handler;

  // A tool whose arguments are the struct Args (see schema.hpp). Arguments that fail validation
  // come back to the model as a ModelRetry naming each bad field; the handler sees only valid Args.
  // `fn` is (const Args&, const RunContext&) -> ToolResult.
  template <typename Args, typename F>
  static Tool typed(std::string name, std::string description, F fn) {
    Tool t;
    t.info.definition.name = name;
    t.info.definition.description = std::move(description);
    t.info.definition.parameters_json_schema = json_schema<Args>();
    t.handler = [fn = std::move(fn)](const Json& args, const RunContext& ctx) -> ToolResult {
      std::vector<ArgError> errors;
      auto parsed = parse_args<Args>(args, errors);
      if (!parsed) return ToolOutcome{ModelRetry{format_arg_errors(errors)}};
      return fn(*parsed, ctx);
    };
    return t;
  }

  // A tool defined by a JSON schema; arguments are checked against the schema
  // (validate_json_schema) before `fn` sees them.
  static Tool from_schema(std::string name, std::string description, Json parameters_schema,
                          std::function<ToolResult(const Json& args, const RunContext& ctx)> fn);

  Tool&& sequential(bool yes = true) && {
    info.sequential = yes;
    return std::move(*this);
  }
  Tool&& max_retries(int n) && {
    info.max_retries = n;
    return std::move(*this);
  }
};

// Toolset of function tools. Calls of non-sequential tools run on their own thread when the
// context has an executor. C++ exceptions thrown by a handler become Internal errors.
class FunctionToolset : public Toolset {
 public:
  explicit FunctionToolset(std::vector<Tool> tools = {}, std::string id = "functions");
  void add(Tool tool);

  std::string id() const override { return id_; }
  Task<core::Result<std::vector<ToolInfo>>> get_tools(const RunContext& ctx) override;
  Task<ToolResult> call_tool(const ToolCall& call, const RunContext& ctx) override;

 private:
  std::string id_;
  std::vector<Tool> tools_;
};

// ---------------------------------------------------------------------------------------------
// Wrappers

// Forwards everything to `wrapped`.
class WrapperToolset : public Toolset {
 public:
  explicit WrapperToolset(std::shared_ptr<Toolset> wrapped) : wrapped_(std::move(wrapped)) {}
  std::string id() const override { return wrapped_->id(); }
  Task<core::Result<std::vector<ToolInfo>>> get_tools(const RunContext& ctx) override {
    return wrapped_->get_tools(ctx);
  }
  Task<ToolResult> call_tool(const ToolCall& call, const RunContext& ctx) override {
    return wrapped_->call_tool(call, ctx);
  }
  const std::shared_ptr<Toolset>& wrapped() const { return wrapped_; }

 protected:
  std::shared_ptr<Toolset> wrapped_;
};

// Only the tools for which `keep(ctx, tool)` is true are listed (and callable).
class FilteredToolset : public WrapperToolset {
 public:
  using Predicate = std::function<bool(const RunContext&, const ToolInfo&)>;
  FilteredToolset(std::shared_ptr<Toolset> wrapped, Predicate keep)
      : WrapperToolset(std::move(wrapped)), keep_(std::move(keep)) {}
  // Keeps all tools except those named in `names` (the seed's blacklist).
  static std::shared_ptr<FilteredToolset> excluding(std::shared_ptr<Toolset> wrapped,
                                                    std::vector<std::string> names);
  Task<core::Result<std::vector<ToolInfo>>> get_tools(const RunContext& ctx) override;
  Task<ToolResult> call_tool(const ToolCall& call, const RunContext& ctx) override;

 private:
  Predicate keep_;
};

// Tool `x` appears as `<prefix>_x`.
class PrefixedToolset : public WrapperToolset {
 public:
  PrefixedToolset(std::shared_ptr<Toolset> wrapped, std::string prefix)
      : WrapperToolset(std::move(wrapped)), prefix_(std::move(prefix)) {}
  std::string id() const override { return prefix_ + "_" + wrapped_->id(); }
  Task<core::Result<std::vector<ToolInfo>>> get_tools(const RunContext& ctx) override;
  Task<ToolResult> call_tool(const ToolCall& call, const RunContext& ctx) override;

 private:
  std::string prefix_;
};

// Renames tools: `new_names` maps the name the model sees to the wrapped tool's name.
class RenamedToolset : public WrapperToolset {
 public:
  RenamedToolset(std::shared_ptr<Toolset> wrapped, std::map<std::string, std::string> new_to_old)
      : WrapperToolset(std::move(wrapped)), new_to_old_(std::move(new_to_old)) {}
  Task<core::Result<std::vector<ToolInfo>>> get_tools(const RunContext& ctx) override;
  Task<ToolResult> call_tool(const ToolCall& call, const RunContext& ctx) override;

 private:
  std::map<std::string, std::string> new_to_old_;
};

// Several toolsets as one. get_tools fails with InvalidArgument when two toolsets list the same
// name. call_tool routes by the most recent listing (listing again when it has none).
class CombinedToolset : public Toolset {
 public:
  explicit CombinedToolset(std::vector<std::shared_ptr<Toolset>> toolsets,
                           std::string id = "combined")
      : toolsets_(std::move(toolsets)), id_(std::move(id)) {}
  std::string id() const override { return id_; }
  Task<core::Result<std::vector<ToolInfo>>> get_tools(const RunContext& ctx) override;
  Task<ToolResult> call_tool(const ToolCall& call, const RunContext& ctx) override;
  const std::vector<std::shared_ptr<Toolset>>& toolsets() const { return toolsets_; }

 private:
  std::vector<std::shared_ptr<Toolset>> toolsets_;
  std::string id_;
  std::mutex mu_;
  std::map<std::string, size_t> route_;  // GUARDED_BY(mu_): tool name -> index in toolsets_
};

}  // namespace codeact::agent
