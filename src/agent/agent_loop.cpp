// The agent loop: Agent::run_task (one coroutine for direct and durable mode) and Agent::run.
//
// run_task is a short loop over named steps of one AgentRun (the state of a run): evaluate the
// instructions, list the tools, request the model, then handle the response — the output tool, the
// function tool calls, or the text. Each step that awaits an effect is a coroutine of its own.
#include <algorithm>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <random>

#include "codeact/agent/agent.hpp"
#include "codeact/core/time.hpp"

namespace codeact::agent {

using core::Result;
using llm::ModelRequest;
using llm::ModelResponse;
using llm::RetryPromptPart;
using llm::ToolCallPart;
using llm::ToolReturnPart;

namespace {

// CODEACT_TRY_STATUS and CODEACT_TRY for the coroutines below (co_return instead of return).
#define CODEACT_CO_TRY_STATUS_(expr)                                               \
  do {                                                                             \
    auto codeact_co_status_ = (expr);                                              \
    if (!codeact_co_status_.ok()) co_return std::move(codeact_co_status_).error(); \
  } while (0)
#define CODEACT_CO_TRY_(decl, expr)                                             \
  auto CODEACT_CONCAT_(codeact_co_result_, __LINE__) = (expr);                  \
  if (!CODEACT_CONCAT_(codeact_co_result_, __LINE__).ok())                      \
    co_return std::move(CODEACT_CONCAT_(codeact_co_result_, __LINE__)).error(); \
  decl = std::move(*CODEACT_CONCAT_(codeact_co_result_, __LINE__))

std::string random_run_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const char* hex = "0123456789abcdef";
  std::string id = "run-";
  for (int i = 0; i < 16; ++i) id += hex[rng() % 16];
  return id;
}

// Strips a Markdown code fence around JSON text (models add them despite instructions).
std::string strip_fence(const std::string& text) {
  auto b = text.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  auto e = text.find_last_not_of(" \t\r\n");
  std::string t = text.substr(b, e - b + 1);
  if (t.rfind("```", 0) == 0) {
    auto nl = t.find('\n');
    auto close = t.rfind("```");
    if (nl != std::string::npos && close != std::string::npos && close > nl)
      t = t.substr(nl + 1, close - nl - 1);
  }
  return t;
}

std::string limit_error(const std::string& what, int64_t limit, int64_t value) {
  return "usage limit exceeded: " + what + " of " + std::to_string(limit) + " (" +
         what.substr(0, what.rfind('_')) + " would be " + std::to_string(value) + ")";
}

// The part a tool result becomes in the next request.
std::variant<ToolReturnPart, RetryPromptPart> result_part(const ToolCall& call, const ToolResult& r,
                                                          const std::string& timestamp) {
  if (!r.ok()) {
    return RetryPromptPart{"Tool '" + call.tool_name + "' failed: " + r.error().to_string(),
                           call.tool_name, call.tool_call_id, timestamp};
  }
  if (const auto* ret = std::get_if<ToolReturn>(&*r)) {
    // The model reads the text; the typed content stays with the part for the application.
    if (ret->text)
      return ToolReturnPart{call.tool_name, *ret->text, call.tool_call_id, timestamp, ret->content};
    return ToolReturnPart{call.tool_name, ret->content, call.tool_call_id, timestamp};
  }
  return RetryPromptPart{std::get<ModelRetry>(*r).message, call.tool_name, call.tool_call_id,
                         timestamp};
}

// `handler`, called by one thread at a time: tool output (RunContext::on_output) may come from a
// tool's thread while the loop emits on its own.
EventHandler serialized(EventHandler handler) {
  if (!handler) return handler;
  return [mu = std::make_shared<std::mutex>(), handler = std::move(handler)](const AgentEvent& e) {
    std::lock_guard lock(*mu);
    handler(e);
  };
}

// The tools of one step, by name.
struct StepTools {
  std::vector<ToolInfo> tools;
  std::map<std::string, const ToolInfo*> by_name;
};

// A function tool call that passed the checks and will run.
struct PendingCall {
  ToolCall call;
  RunContext ctx;
  const ToolInfo* info = nullptr;
  size_t slot = 0;  // its place among the response's function calls
};

// What handling a response decided.
enum class Next { kContinue, kDone };

// One run of the loop: its settings, the conversation and the counters, and the steps.
// REQUIRES: lives (in run_task's frame) until every task of its steps has finished.
class AgentRun {
 public:
  AgentRun(const Agent& agent, std::string prompt, RunOptions options, RunDrivers drivers)
      : agent_(agent),
        opts_(agent.options()),
        who_("agent '" + opts_.name + "'"),
        prompt_(std::move(prompt)),
        options_(std::move(options)),
        model_(drivers.model ? drivers.model : std::make_shared<DirectModel>(agent.model())),
        toolset_(opts_.toolsets, opts_.name),
        limits_(options_.usage_limits.value_or(opts_.usage_limits)),
        settings_(options_.model_settings ? opts_.model_settings.merged(*options_.model_settings)
                                          : opts_.model_settings),
        now_(drivers.now ? drivers.now
                         : std::function<std::string()>([] { return core::now_rfc3339(); })),
        executor_(drivers.executor) {
    options_.on_event = serialized(std::move(options_.on_event));
  }

  Task<Result<AgentRunResult>> run() {
    start();
    for (int step = 1;; ++step) {
      if (options_.cancel && options_.cancel->cancelled())
        co_return core::cancelled(who_ + ": run cancelled");
      base_.run_step = step;
      base_.usage = result_.usage;

      auto prepared_task = prepare_request();
      core::Status prepared = co_await prepared_task;
      if (!prepared.ok()) co_return std::move(prepared).error();
      CODEACT_CO_TRY_STATUS_(check_request_limit());

      auto tools_task = list_tools();
      Result<StepTools> tools = co_await tools_task;
      if (!tools.ok()) co_return std::move(tools).error();

      auto response_task = request_model(*tools);
      Result<ModelResponse> response = co_await response_task;
      if (!response.ok()) co_return std::move(response).error();
      CODEACT_CO_TRY_STATUS_(check_token_limits());

      auto handled_task = handle_response(*response, *tools);
      Result<Next> next = co_await handled_task;
      if (!next.ok()) co_return std::move(next).error();
      if (*next == Next::kDone) co_return std::move(result_);
    }
  }

 private:
  // The run's identity, the history it continues and the first request (system prompts for a
  // new conversation, then the user prompt).
  void start() {
    result_.run_id = options_.run_id.empty() ? random_run_id() : options_.run_id;
    result_.messages = std::move(options_.message_history);
    result_.new_messages_start = result_.messages.size();
    base_.deps = options_.deps;
    base_.agent_name = opts_.name;
    base_.run_id = result_.run_id;
    base_.prompt = prompt_;
    base_.executor = executor_;
    base_.cancel = options_.cancel;
    base_.messages = &result_.messages;
    if (result_.messages.empty()) {
      for (const auto& sp : opts_.system_prompts)
        next_request_.parts.push_back(llm::SystemPromptPart{sp, now_()});
    }
    next_request_.parts.push_back(llm::UserPromptPart{prompt_, now_()});
  }

  // Evaluates the instructions (unless the model does) and appends the request to the
  // conversation.
  Task<core::Status> prepare_request() {
    if (!model_->evaluates_instructions()) {
      auto instructions_task = agent_.instructions(base_);
      Result<std::string> instructions = co_await instructions_task;
      if (!instructions.ok())
        co_return std::move(instructions).error().with_context(who_ + ": instructions");
      next_request_.instructions = std::move(*instructions);
    }
    result_.messages.push_back(std::move(next_request_));
    next_request_ = ModelRequest{};
    co_return core::ok_status();
  }

  core::Status check_request_limit() const {
    if (limits_.request_limit && result_.usage.requests + 1 > *limits_.request_limit) {
      return core::resource_exhausted(
          who_ + ": " +
          limit_error("request_limit", *limits_.request_limit, result_.usage.requests + 1));
    }
    return core::ok_status();
  }

  Task<Result<StepTools>> list_tools() {
    auto listed_task = toolset_.get_tools(base_);
    Result<std::vector<ToolInfo>> listed = co_await listed_task;
    if (!listed.ok()) co_return std::move(listed).error().with_context(who_ + ": listing tools");
    StepTools out;
    out.tools = std::move(*listed);
    for (const auto& t : out.tools) out.by_name[t.name()] = &t;
    const OutputSpec& output = opts_.output;
    if (output.mode == llm::OutputMode::kTool && out.by_name.count(output.name)) {
      co_return core::invalid_argument(who_ + ": a function tool is named like the output tool '" +
                                       output.name + "'");
    }
    co_return out;
  }

  // What the model is told besides the messages: the function tools and the output.
  llm::ModelRequestParameters request_parameters(const StepTools& tools) const {
    const OutputSpec& output = opts_.output;
    llm::ModelRequestParameters params;
    for (const auto& t : tools.tools) params.function_tools.push_back(t.definition);
    params.output_mode = output.mode;
    if (output.mode == llm::OutputMode::kTool) {
      llm::ToolDefinition def;
      def.name = output.name;
      def.description = output.description;
      def.parameters_json_schema = output.schema;
      def.kind = "output";
      params.output_tools.push_back(def);
      params.allow_text_output = false;
    } else if (output.mode == llm::OutputMode::kNative ||
               output.mode == llm::OutputMode::kPrompted) {
      llm::OutputObjectDefinition def;
      def.name = output.name;
      def.description = output.description;
      def.json_schema = output.schema;
      params.output_object = def;
    }
    return params;
  }

  // One model request; the response joins the conversation and the usage is counted.
  Task<Result<ModelResponse>> request_model(const StepTools& tools) {
    const int step = base_.run_step;
    emit(ModelRequestStartEvent{step});
    ModelCall call;
    call.messages = &result_.messages;
    call.settings = settings_;
    call.params = request_parameters(tools);
    call.ctx = &base_;
    if (options_.on_event) {
      const EventHandler* handler = &options_.on_event;
      call.on_stream = [handler, step](const llm::ModelStreamEvent& e) {
        if (!std::holds_alternative<llm::FinalResponseEvent>(e))
          (*handler)(ModelStreamEvent{step, e});
        return true;
      };
    }
    const size_t request_index = result_.messages.size() - 1;
    auto answered_task = model_->request(call);
    Result<ModelReply> answered = co_await answered_task;
    if (!answered.ok()) {
      co_return std::move(answered).error().with_context(who_ + ": model request " +
                                                         std::to_string(step));
    }
    if (answered->instructions) {
      std::get<ModelRequest>(result_.messages[request_index]).instructions =
          std::move(*answered->instructions);
    }
    ModelResponse response = std::move(answered->response);
    const int64_t requests_before = result_.usage.requests;
    result_.usage += response.usage;
    result_.usage.requests = requests_before + 1;
    result_.messages.push_back(response);
    emit(ModelResponseEvent{step, response});
    co_return response;
  }

  core::Status check_token_limits() const {
    struct TokenLimit {
      const char* name;
      const std::optional<int64_t>& limit;
      int64_t value;
    };
    const llm::Usage& u = result_.usage;
    for (const TokenLimit& l :
         {TokenLimit{"input_tokens_limit", limits_.input_tokens_limit, u.input_tokens},
          TokenLimit{"output_tokens_limit", limits_.output_tokens_limit, u.output_tokens},
          TokenLimit{"total_tokens_limit", limits_.total_tokens_limit, u.total_tokens()}}) {
      if (l.limit && l.value > *l.limit) {
        return core::resource_exhausted(who_ + ": usage limit exceeded: " + l.name + " of " +
                                        std::to_string(*l.limit) + " (used " +
                                        std::to_string(l.value) + ")");
      }
    }
    return core::ok_status();
  }

  // The output tool first (a valid final result ends the run), then the function tool calls,
  // then — when the model called no tool — its text.
  Task<Result<Next>> handle_response(const ModelResponse& response, const StepTools& tools) {
    const std::vector<ToolCallPart> calls = response.tool_calls();
    step_time_ = now_();
    output_retry_.reset();

    std::optional<size_t> output_call = find_output_call(calls);
    if (output_call) {
      CODEACT_CO_TRY_(bool done, handle_output_call(calls, *output_call));
      if (done) co_return Next::kDone;
    }
    std::vector<const ToolCallPart*> function_calls;
    for (size_t i = 0; i < calls.size(); ++i) {
      if (!output_call || i != *output_call) function_calls.push_back(&calls[i]);
    }
    if (!function_calls.empty()) {
      auto calls_task = run_function_calls(function_calls, tools);
      core::Status ran = co_await calls_task;
      if (!ran.ok()) co_return std::move(ran).error();
      co_return Next::kContinue;
    }
    if (output_retry_) {
      next_request_.parts.push_back(*output_retry_);
      co_return Next::kContinue;
    }
    co_return handle_text(response.text());
  }

  std::optional<size_t> find_output_call(const std::vector<ToolCallPart>& calls) const {
    if (opts_.output.mode != llm::OutputMode::kTool) return std::nullopt;
    for (size_t i = 0; i < calls.size(); ++i) {
      if (calls[i].tool_name == opts_.output.name) return i;
    }
    return std::nullopt;
  }

  // A valid output-tool call ends the run (true); an invalid one becomes a retry prompt.
  Result<bool> handle_output_call(const std::vector<ToolCallPart>& calls, size_t index) {
    const ToolCallPart& oc = calls[index];
    Json value = oc.args;
    std::vector<ArgError> errors;
    if (!oc.args_valid()) {
      errors.push_back({"(arguments)", "not a JSON object: " + oc.args_raw});
    } else if (opts_.output.validate) {
      errors = opts_.output.validate(value);
    }
    if (!errors.empty()) {
      CODEACT_TRY_STATUS(
          output_failed(format_arg_errors(errors), opts_.output.name, oc.tool_call_id));
      return false;
    }
    // Early end: the final result wins; other calls of this response are not run.
    ModelRequest closing;
    for (size_t i = 0; i < calls.size(); ++i) {
      closing.parts.push_back(ToolReturnPart{
          calls[i].tool_name,
          i == index ? Json("Final result processed.")
                     : Json("Tool not executed - a final result was already processed."),
          calls[i].tool_call_id, step_time_});
    }
    result_.messages.push_back(std::move(closing));
    finish(std::move(value), opts_.output.name);
    return true;
  }

  // Counts an output failure: a retry prompt for the next request, or Aborted past the limit.
  core::Status output_failed(std::string message, const std::string& tool_name,
                             const std::string& call_id) {
    if (++output_failures_ > opts_.max_output_retries) {
      return core::aborted(who_ + ": exceeded maximum retries (" +
                           std::to_string(opts_.max_output_retries) +
                           ") for the output; last problem: " + message);
    }
    output_retry_ = RetryPromptPart{std::move(message), tool_name, call_id, step_time_};
    return core::ok_status();
  }

  // Counts a failure of a tool: Aborted once it failed more than `max_retries` times in a row.
  core::Status tool_failed(const std::string& name, int max_retries, const std::string& problem) {
    if (++tool_failures_[name] > max_retries) {
      return core::aborted(who_ + ": tool '" + name + "' exceeded max retries count of " +
                           std::to_string(max_retries) + "; last problem: " + problem);
    }
    return core::ok_status();
  }

  // The checks a call passes before it runs: a known tool, JSON-object arguments, the tool-call
  // limit. A call that fails one gets a retry prompt at once (nullopt); an exceeded limit ends
  // the run.
  Result<std::optional<PendingCall>> check_call(const ToolCallPart& c, const StepTools& tools,
                                                size_t slot, size_t pending_count,
                                                std::optional<RetryPromptPart>& retry) {
    auto found = tools.by_name.find(c.tool_name);
    if (found == tools.by_name.end()) {
      std::string available;
      for (const auto& t : tools.tools)
        available += (available.empty() ? "'" : ", '") + t.name() + "'";
      if (opts_.output.mode == llm::OutputMode::kTool)
        available += (available.empty() ? "'" : ", '") + opts_.output.name + "'";
      std::string message = "Unknown tool name: '" + c.tool_name + "'. " +
                            (available.empty() ? std::string("No tools available.")
                                               : "Available tools: " + available);
      CODEACT_TRY_STATUS(tool_failed(c.tool_name, opts_.max_tool_retries, message));
      retry = RetryPromptPart{message, c.tool_name, c.tool_call_id, step_time_};
      return std::optional<PendingCall>();
    }
    const ToolInfo& info = *found->second;
    const int max_retries = info.max_retries.value_or(opts_.max_tool_retries);
    if (!c.args_valid()) {
      auto parsed = c.args_object();
      std::string message = (parsed.ok() ? std::string("the arguments are not a JSON object")
                                         : parsed.error().message()) +
                            "\nThe arguments received were: " + c.args_raw;
      CODEACT_TRY_STATUS(tool_failed(c.tool_name, max_retries, message));
      retry = RetryPromptPart{message, c.tool_name, c.tool_call_id, step_time_};
      return std::optional<PendingCall>();
    }
    const int64_t calls_after = result_.tool_calls + static_cast<int64_t>(pending_count) + 1;
    if (limits_.tool_calls_limit && calls_after > *limits_.tool_calls_limit) {
      return core::resource_exhausted(
          who_ + ": " + limit_error("tool_calls_limit", *limits_.tool_calls_limit, calls_after));
    }
    PendingCall p;
    p.call = ToolCall{c.tool_name, c.args, c.tool_call_id};
    p.ctx = base_;
    p.ctx.tool_name = c.tool_name;
    p.ctx.tool_call_id = c.tool_call_id;
    auto failures = tool_failures_.find(c.tool_name);
    p.ctx.retry = failures == tool_failures_.end() ? 0 : failures->second;
    p.ctx.max_retries = max_retries;
    if (options_.on_event) {
      // Valid while the call runs (RunContext::on_output): this run outlives its calls.
      p.ctx.on_output = [handler = &options_.on_event, step = base_.run_step, id = c.tool_call_id](
                            const std::string& stream, const std::string& text) {
        (*handler)(ToolOutputEvent{step, id, stream, text});
      };
    }
    p.info = &info;
    p.slot = slot;
    return std::optional<PendingCall>(std::move(p));
  }

  static Task<ToolResult> call_one(Toolset& toolset, const PendingCall& p,
                                   const EventHandler* handler, int run_step, std::string stamp) {
    auto call_task = toolset.call_tool(p.call, p.ctx);
    ToolResult r = co_await call_task;
    if (*handler) (*handler)(ToolResultEvent{run_step, result_part(p.call, r, stamp)});
    co_return r;
  }

  // Runs the calls that pass the checks — concurrently, unless one of them must run alone — and
  // puts every result (or retry prompt) into the next request, in the order of the response.
  Task<core::Status> run_function_calls(const std::vector<const ToolCallPart*>& function_calls,
                                        const StepTools& tools) {
    const int step = base_.run_step;
    std::vector<std::variant<ToolReturnPart, RetryPromptPart>> parts(function_calls.size());
    std::vector<PendingCall> pending;
    pending.reserve(function_calls.size());
    for (size_t i = 0; i < function_calls.size(); ++i) {
      std::optional<RetryPromptPart> retry;
      auto checked = check_call(*function_calls[i], tools, i, pending.size(), retry);
      if (!checked.ok()) co_return std::move(checked).error();
      if (*checked) {
        pending.push_back(std::move(**checked));
      } else {
        parts[i] = *retry;
        emit(ToolResultEvent{step, parts[i]});
      }
    }

    for (const auto& p : pending)
      emit(ToolCallEvent{step,
                         ToolCallPart{p.call.tool_name, p.call.args, p.call.tool_call_id, "", {}}});
    const bool sequential = std::any_of(pending.begin(), pending.end(),
                                        [](const PendingCall& p) { return p.info->sequential; });
    std::vector<ToolResult> outcomes;
    if (sequential || pending.size() == 1) {
      for (const auto& p : pending) {
        auto one = call_one(toolset_, p, &options_.on_event, step, step_time_);
        outcomes.push_back(co_await one);
      }
    } else {
      std::vector<Task<ToolResult>> tasks;
      for (const auto& p : pending)
        tasks.push_back(call_one(toolset_, p, &options_.on_event, step, step_time_));
      auto all = when_all(std::move(tasks));
      outcomes = co_await all;
    }

    for (size_t k = 0; k < pending.size(); ++k) {
      const PendingCall& p = pending[k];
      const ToolResult& r = outcomes[k];
      if (!r.ok() && r.error().code() == core::Code::kCancelled) {
        co_return r.error().with_context(who_ + ": tool '" + p.call.tool_name + "'");
      }
      parts[p.slot] = result_part(p.call, r, step_time_);
      if (r.ok() && std::holds_alternative<ToolReturn>(*r)) {
        tool_failures_.erase(p.call.tool_name);
        ++result_.tool_calls;
      } else {
        std::string problem = r.ok() ? std::get<ModelRetry>(*r).message : r.error().to_string();
        CODEACT_CO_TRY_STATUS_(tool_failed(p.call.tool_name, p.ctx.max_retries, problem));
      }
    }
    if (output_retry_) next_request_.parts.push_back(*output_retry_);
    for (auto& part : parts) {
      std::visit([&](auto& x) { next_request_.parts.push_back(std::move(x)); }, part);
    }
    co_return core::ok_status();
  }

  // A response without tool calls: its text is the answer (or is parsed as structured output).
  Result<Next> handle_text(const std::string& text) {
    const OutputSpec& output = opts_.output;
    if (output.mode == llm::OutputMode::kText) {
      if (!text.empty()) {
        finish(Json(text), "");
        return Next::kDone;
      }
      CODEACT_TRY_STATUS(
          output_failed("Responses without text or tool calls are not permitted.", "", ""));
    } else if (output.mode == llm::OutputMode::kTool) {
      CODEACT_TRY_STATUS(output_failed(
          "Plain text responses are not permitted, please include your response in a tool call "
          "(call '" +
              output.name + "' with the final result).",
          "", ""));
    } else {
      auto parsed = core::parse_json(strip_fence(text), "model output");
      std::vector<ArgError> errors;
      Json value;
      if (!parsed.ok()) {
        errors.push_back({"(output)", "not valid JSON: " + parsed.error().message()});
      } else {
        value = std::move(*parsed);
        if (output.validate) errors = output.validate(value);
      }
      if (errors.empty()) {
        finish(std::move(value), "");
        return Next::kDone;
      }
      CODEACT_TRY_STATUS(output_failed(format_arg_errors(errors), "", ""));
    }
    next_request_.parts.push_back(*output_retry_);
    return Next::kContinue;
  }

  void finish(Json value, const std::string& tool_name) {
    result_.output = value;
    emit(FinalResultEvent{base_.run_step, std::move(value), tool_name});
  }

  void emit(AgentEvent e) const {
    if (options_.on_event) options_.on_event(e);
  }

  const Agent& agent_;
  const AgentOptions& opts_;
  const std::string who_;
  const std::string prompt_;
  RunOptions options_;
  std::shared_ptr<AsyncModel> model_;
  CombinedToolset toolset_;
  const UsageLimits limits_;
  const llm::ModelSettings settings_;
  const std::function<std::string()> now_;
  Executor* executor_;

  AgentRunResult result_;
  RunContext base_;            // the context of the current step
  ModelRequest next_request_;  // what the next model request carries besides the instructions
  std::string step_time_;      // the timestamp of the current response's parts
  std::optional<RetryPromptPart> output_retry_;
  std::map<std::string, int> tool_failures_;  // consecutive failures per tool name
  int output_failures_ = 0;
};

#undef CODEACT_CO_TRY_STATUS_
#undef CODEACT_CO_TRY_

}  // namespace

// ---------------------------------------------------------------------------------------------

Task<Result<ModelReply>> DirectModel::request(const ModelCall& call) {
  llm::ModelSettings settings = model_->default_settings().merged(call.settings);
  const core::CancelToken* cancel = call.ctx ? call.ctx->cancel : nullptr;
  Result<ModelResponse> response =
      call.on_stream
          ? model_->request_stream(*call.messages, settings, call.params, call.on_stream, cancel)
          : model_->request(*call.messages, settings, call.params, cancel);
  if (!response.ok()) co_return std::move(response).error();
  co_return ModelReply{std::move(*response), std::nullopt};
}

OutputSpec OutputSpec::from_schema(Json schema, llm::OutputMode mode, std::string name) {
  OutputSpec s;
  s.mode = mode;
  s.name = std::move(name);
  s.schema = schema;
  s.validate = [schema = std::move(schema)](Json& value) {
    return validate_json_schema(value, schema);
  };
  return s;
}

std::string AgentRunResult::output_text() const {
  return output.is_string() ? output.get<std::string>() : core::dump_json(output);
}

Agent::Agent(std::shared_ptr<llm::Model> model, AgentOptions options)
    : model_(std::move(model)), options_(std::move(options)) {}

Result<AgentRunResult> Agent::run(const std::string& prompt, RunOptions options) const {
  RunLoop loop;
  RunDrivers drivers;
  drivers.executor = &loop;
  try {
    return loop.run(run_task(prompt, std::move(options), std::move(drivers)));
  } catch (const std::exception& e) {
    return core::internal_error("agent '" + options_.name +
                                "': run failed with an exception: " + e.what());
  } catch (...) {
    return core::internal_error("agent '" + options_.name +
                                "': run failed with an unknown exception");
  }
}

Task<Result<std::string>> Agent::instructions(const RunContext& ctx) const {
  std::string text = options_.instructions;
  if (options_.instructions_fn) {
    auto dynamic_task = options_.instructions_fn(ctx);
    Result<std::string> dynamic = co_await dynamic_task;
    if (!dynamic.ok()) co_return std::move(dynamic).error();
    if (!dynamic->empty()) text += (text.empty() ? "" : "\n\n") + *dynamic;
  }
  co_return text;
}

Task<Result<AgentRunResult>> Agent::run_task(std::string prompt, RunOptions options,
                                             RunDrivers drivers) const {
  AgentRun run(*this, std::move(prompt), std::move(options), std::move(drivers));
  auto task = run.run();
  co_return co_await task;
}

}  // namespace codeact::agent
