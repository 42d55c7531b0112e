// Agent: the agent loop (after pydantic-ai's `Agent` and its graph), written once as a coroutine.
//
//   prompt ─► [model request] ─► response ─┬─ tool calls ─► [run tools] ─► tool returns / retry
//                 ▲                        │                              prompts ─┐
//                 └────────────────────────┼──────────────────────────────────────┘
//                                          └─ final result (text, or structured output) ─► done
//
// The loop (Agent::run_task) is a Task (task.hpp). It awaits exactly three kinds of effects: the
// instructions function, a model request (AsyncModel::request) and toolset operations
// (Toolset::get_tools / call_tool). That is the seam for durability: the durable layer runs the
// same run_task inside a workflow, with RunDrivers whose AsyncModel schedules a model activity
// (and evaluates the instructions there, next to what they read) and with an Agent whose toolsets
// are wrappers that turn each call into an activity. Agent::run() is direct mode: a RunLoop
// drives the task on the calling thread, the model is called inline and tools run on threads,
// concurrently when the model asks for several at once (unless a tool is sequential).
//
// Behaviour:
//   - Instructions are static text plus an optional function of the RunContext (Agent::
//     instructions()); they are evaluated before every model request (so they can show the
//     sandbox's current variables and files) and recorded as ModelRequest::instructions. System
//     prompts go once, at the start of a new conversation.
//   - Tool arguments that fail validation, ModelRetry, tool errors and unknown tool names go back
//     to the model as RetryPromptParts. A tool failing more than its max_retries times in a row
//     fails the run (Aborted). Cancelled from a tool ends the run.
//   - Output: text, or a structured value validated against a JSON schema — through an output
//     tool `final_result` (OutputMode::kTool), the provider's native JSON schema (kNative) or the
//     schema described in the instructions the provider sends (kPrompted). Invalid output goes
//     back as a retry prompt, at most max_output_retries times in a row.
//   - Usage limits (requests, tokens, tool calls) stop the run with ResourceExhausted naming the
//     limit, before a request that would exceed the request limit and after a response that
//     exceeded a token limit.
//   - Events (AgentEvent) go to RunOptions::on_event in order: model request started, text
//     deltas and other stream events, the complete response, each tool call, the output of a
//     tool while it runs (ToolOutputEvent: the loop gives each call a RunContext::on_output when
//     on_event is set), each tool result, the final result. Delivered serially (one at a time,
//     never concurrently); in direct mode stream events come from the thread calling the model
//     and tool output from the thread running the tool. In durable mode a workflow's loop never
//     sees tool output (the tool runs in an activity on a worker, which publishes it to
//     durable::LiveOutput instead).
//
// Thread-safety: an Agent is immutable after construction; several runs may use it at once.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "codeact/agent/schema.hpp"
#include "codeact/agent/task.hpp"
#include "codeact/agent/toolset.hpp"
#include "codeact/core/cancel.hpp"
#include "codeact/core/result.hpp"
#include "codeact/llm/messages.hpp"
#include "codeact/llm/model.hpp"

namespace codeact::agent {

// ---------------------------------------------------------------------------------------------
// Events

struct ModelRequestStartEvent {  // a model step begins
  int run_step = 0;
};
struct ModelStreamEvent {  // a provider stream event (text delta, tool-call args delta, ...)
  int run_step = 0;
  llm::ModelStreamEvent event;
};
struct ModelResponseEvent {  // the complete response of a step
  int run_step = 0;
  llm::ModelResponse response;
};
struct ToolCallEvent {  // a function tool is about to run
  int run_step = 0;
  llm::ToolCallPart part;
};
// Output of a running tool call (a cell's prints), between its ToolCallEvent and its
// ToolResultEvent; only from tools that stream (SandboxTools' execute_python). The result still
// carries the whole output (cut as the model sees it): these events are a preview, not a record.
struct ToolOutputEvent {
  int run_step = 0;
  std::string tool_call_id;
  std::string stream;  // "stdout" | "stderr"
  std::string text;    // the next piece of that stream, as it came (not cut into lines)
};
struct ToolResultEvent {  // a tool call finished (return or retry prompt)
  int run_step = 0;
  std::variant<llm::ToolReturnPart, llm::RetryPromptPart> result;
};
struct FinalResultEvent {  // the run produced its output
  int run_step = 0;
  Json output;
  std::string tool_name;  // the output tool when structured output came through one, else ""
};
using AgentEvent = std::variant<ModelRequestStartEvent, ModelStreamEvent, ModelResponseEvent,
                                ToolCallEvent, ToolOutputEvent, ToolResultEvent, FinalResultEvent>;
using EventHandler = std::function<void(const AgentEvent&)>;

// {"event_kind": "model_request_start"|"model_stream"|"model_response"|"tool_call"|"tool_output"|
//  "tool_result"|"final_result", "run_step": n, ...}; a tool_output has "tool_call_id", "stream"
// and "text".
Json to_json(const AgentEvent& event);
// Convenience: "model_request_start", "text_delta" (for a text stream delta), "model_stream",
// "model_response", "tool_call", "tool_output", "tool_result", "final_result".
std::string event_kind(const AgentEvent& event);

// ---------------------------------------------------------------------------------------------
// Output

struct OutputSpec {
  llm::OutputMode mode = llm::OutputMode::kText;
  std::string name = "final_result";  // the output tool's name (kTool) / schema name
  std::string description = "The final response which ends this conversation";
  Json schema = Json::object();  // object schema of the structured output
  // Checks (and may normalize) a candidate output; errors become retry prompts.
  std::function<std::vector<ArgError>(Json& value)> validate;

  static OutputSpec text() { return {}; }
  // Structured output of type T (a struct with fields(), see schema.hpp).
  template <typename T>
  static OutputSpec of(llm::OutputMode mode = llm::OutputMode::kTool,
                       std::string name = "final_result") {
    OutputSpec s;
    s.mode = mode;
    s.name = std::move(name);
    s.schema = json_schema<T>();
    s.validate = [](Json& value) {
      std::vector<ArgError> errors;
      auto parsed = parse_args<T>(value, errors);
      if (parsed) value = to_json_value(*parsed);
      return errors;
    };
    return s;
  }
  // Structured output described by a JSON schema (checked with validate_json_schema).
  static OutputSpec from_schema(Json schema, llm::OutputMode mode = llm::OutputMode::kTool,
                                std::string name = "final_result");
};

// ---------------------------------------------------------------------------------------------
// Limits and results

struct UsageLimits {
  std::optional<int64_t> request_limit = 50;
  std::optional<int64_t> tool_calls_limit;
  std::optional<int64_t> input_tokens_limit;
  std::optional<int64_t> output_tokens_limit;
  std::optional<int64_t> total_tokens_limit;
};

struct AgentRunResult {
  Json output;  // a string for text output, else the validated structured value
  std::vector<llm::ModelMessage> messages;  // whole conversation: history + this run
  size_t new_messages_start = 0;            // index of this run's first message in `messages`
  llm::Usage usage;                         // this run only
  int64_t tool_calls = 0;                   // successful function tool calls in this run
  std::string run_id;

  std::vector<llm::ModelMessage> new_messages() const {
    return {messages.begin() + static_cast<std::ptrdiff_t>(new_messages_start), messages.end()};
  }
  // The output as text (a string output as-is, anything else as JSON).
  std::string output_text() const;
  // The structured output as T.
  template <typename T>
  core::Result<T> output_as() const {
    return parse_args<T>(output);
  }
};
Json to_json(const AgentRunResult& result);
core::Result<AgentRunResult> run_result_from_json(const Json& j);

// ---------------------------------------------------------------------------------------------
// The model seam the loop awaits

struct ModelCall {
  // The conversation, ending with the request to answer (its instructions already set unless
  // the model evaluates them, see AsyncModel::evaluates_instructions).
  const std::vector<llm::ModelMessage>* messages = nullptr;
  llm::ModelSettings settings;
  llm::ModelRequestParameters params;
  const RunContext* ctx = nullptr;
  // Stream events go here when set (the caller then prefers request_stream).
  llm::StreamHandler on_stream;
};

struct ModelReply {
  llm::ModelResponse response;
  // The instructions of the request, when the model evaluated them itself; the loop records
  // them on the request as if it had evaluated them.
  std::optional<std::string> instructions;
};

class AsyncModel {
 public:
  virtual ~AsyncModel() = default;
  // REQUIRES: everything `call` points to outlives the returned Task.
  virtual Task<core::Result<ModelReply>> request(const ModelCall& call) = 0;
  virtual std::string model_name() const = 0;
  // True when request() evaluates the agent's instructions where the model runs and returns
  // them in ModelReply::instructions (a durable model does, on the worker, in the same activity
  // as the request: they read the sandbox). The loop then does not evaluate them. Default false.
  virtual bool evaluates_instructions() const { return false; }
};

// Direct mode: calls an llm::Model inline (request_stream when events are wanted).
class DirectModel final : public AsyncModel {
 public:
  explicit DirectModel(std::shared_ptr<llm::Model> model) : model_(std::move(model)) {}
  Task<core::Result<ModelReply>> request(const ModelCall& call) override;
  std::string model_name() const override { return model_->model_name(); }

 private:
  std::shared_ptr<llm::Model> model_;
};

// ---------------------------------------------------------------------------------------------
// The agent

// Instructions: static text, or computed per model request from the run context (awaitable, so
// it may read the sandbox through activities in durable mode).
using InstructionsFn = std::function<Task<core::Result<std::string>>(const RunContext& ctx)>;

struct AgentOptions {
  std::string name = "agent";
  std::vector<std::string> system_prompts;
  std::string instructions;        // static part, sent before the dynamic part
  InstructionsFn instructions_fn;  // dynamic part; may be empty
  std::vector<std::shared_ptr<Toolset>> toolsets;
  OutputSpec output;
  llm::ModelSettings model_settings;
  int max_tool_retries = 1;    // default per-tool retries (pydantic-ai's default)
  int max_output_retries = 1;  // retries for invalid final output / text when a tool is required
  UsageLimits usage_limits;
};

struct RunOptions {
  std::vector<llm::ModelMessage> message_history;
  Json deps;
  EventHandler on_event;
  std::optional<UsageLimits> usage_limits;           // overrides the agent's
  std::optional<llm::ModelSettings> model_settings;  // merged over the agent's
  const core::CancelToken* cancel = nullptr;
  std::string run_id;  // "" = random (direct mode); a workflow passes a deterministic one
};

// What executes the run's effects. Direct mode fills it from the Agent; the durable layer gives
// an activity-backed model and the workflow's clock (its toolsets are the Agent's own: wrappers
// that schedule activities).
struct RunDrivers {
  std::shared_ptr<AsyncModel> model;  // null = DirectModel(agent.model())
  Executor* executor = nullptr;       // given to tools through RunContext::executor
  // Timestamps for message parts (RFC 3339). Default: core::now_rfc3339(); a workflow gives its
  // deterministic clock.
  std::function<std::string()> now;
};

class Agent {
 public:
  Agent(std::shared_ptr<llm::Model> model, AgentOptions options);

  // Direct mode: runs to the end on the calling thread.
  core::Result<AgentRunResult> run(const std::string& prompt, RunOptions options = {}) const;

  // The loop itself, for any driver. REQUIRES: the Agent outlives the Task.
  Task<core::Result<AgentRunResult>> run_task(std::string prompt, RunOptions options,
                                              RunDrivers drivers) const;

  // The instructions of one model request: the static part, then what instructions_fn gives for
  // `ctx` (separated by a blank line). What the loop records on each request; a durable model
  // calls it on the worker.
  Task<core::Result<std::string>> instructions(const RunContext& ctx) const;

  const AgentOptions& options() const { return options_; }
  const std::shared_ptr<llm::Model>& model() const { return model_; }
  const std::string& name() const { return options_.name; }

 private:
  std::shared_ptr<llm::Model> model_;
  AgentOptions options_;
};

}  // namespace codeact::agent
