// The agent loop: Agent::run_task (one coroutine for direct and durable mode) and Agent::run.
#include <algorithm>
#include <exception>
#include <map>
#include <random>

#include "codeact/agent/agent.hpp"

namespace codeact::agent {

using core::Result;
using llm::ModelRequest;
using llm::ModelResponse;
using llm::RetryPromptPart;
using llm::ToolCallPart;
using llm::ToolReturnPart;

// CODEACT_TRY_STATUS for coroutines.
#define CODEACT_CO_TRY_STATUS(expr)                                    \
  do {                                                                 \
    auto codeact_co_status_ = (expr);                                  \
    if (!codeact_co_status_.ok()) co_return std::move(codeact_co_status_).error(); \
  } while (0)

namespace {

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
    if (nl != std::string::npos && close != std::string::npos && close > nl) t = t.substr(nl + 1, close - nl - 1);
  }
  return t;
}

std::string limit_error(const std::string& what, int64_t limit, int64_t value) {
  return "usage limit exceeded: " + what + " of " + std::to_string(limit) + " (" + what.substr(0, what.rfind('_')) +
         " would be " + std::to_string(value) + ")";
}

// The parts a tool result becomes in the next request.
std::variant<ToolReturnPart, RetryPromptPart> result_part(const ToolCall& call, const ToolResult& r,
                                                          const std::string& timestamp) {
  if (!r.ok()) {
    return RetryPromptPart{"Tool '" + call.tool_name + "' failed: " + r.error().to_string(), call.tool_name,
                           call.tool_call_id, timestamp};
  }
  if (const auto* ret = std::get_if<ToolReturn>(&*r)) {
    return ToolReturnPart{call.tool_name, ret->text ? Json(*ret->text) : ret->content, call.tool_call_id, timestamp};
  }
  return RetryPromptPart{std::get<ModelRetry>(*r).message, call.tool_name, call.tool_call_id, timestamp};
}

struct PendingCall {
  ToolCall call;
  RunContext ctx;
  const ToolInfo* info = nullptr;
};

}  // namespace

// ---------------------------------------------------------------------------------------------

Task<Result<ModelResponse>> DirectModel::request(const ModelCall& call) {
  llm::ModelSettings settings = model_->default_settings().merged(call.settings);
  const core::CancelToken* cancel = call.ctx ? call.ctx->cancel : nullptr;
  if (call.on_stream) {
    co_return model_->request_stream(*call.messages, settings, call.params, call.on_stream, cancel);
  }
  co_return model_->request(*call.messages, settings, call.params, cancel);
}

OutputSpec OutputSpec::from_schema(Json schema, llm::OutputMode mode, std::string name) {
  OutputSpec s;
  s.mode = mode;
  s.name = std::move(name);
  s.schema = schema;
  s.validate = [schema = std::move(schema)](Json& value) { return validate_json_schema(value, schema); };
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
    return core::internal_error("agent '" + options_.name + "': run failed with an exception: " + e.what());
  } catch (...) {
    return core::internal_error("agent '" + options_.name + "': run failed with an unknown exception");
  }
}

Task<Result<AgentRunResult>> Agent::run_task(std::string prompt, RunOptions options, RunDrivers drivers) const {
  const std::string who = "agent '" + options_.name + "'";
  std::shared_ptr<AsyncModel> model = drivers.model ? drivers.model : std::make_shared<DirectModel>(model_);
  std::vector<std::shared_ptr<Toolset>> sets;
  for (const auto& t : options_.toolsets) sets.push_back(drivers.wrap_toolset ? drivers.wrap_toolset(t) : t);
  CombinedToolset toolset(std::move(sets), options_.name);
  const UsageLimits limits = options.usage_limits.value_or(options_.usage_limits);
  const llm::ModelSettings settings =
      options.model_settings ? options_.model_settings.merged(*options.model_settings) : options_.model_settings;
  const OutputSpec& output = options_.output;
  const EventHandler& emit_fn = options.on_event;
  auto emit = [&emit_fn](AgentEvent e) {
    if (emit_fn) emit_fn(e);
  };
  const std::function<std::string()> now =
      drivers.now ? drivers.now : std::function<std::string()>([] { return llm::now_timestamp(); });

  AgentRunResult result;
  result.run_id = options.run_id.empty() ? random_run_id() : options.run_id;
  result.messages = std::move(options.message_history);
  result.new_messages_start = result.messages.size();

  RunContext base;
  base.deps = options.deps;
  base.agent_name = options_.name;
  base.run_id = result.run_id;
  base.prompt = prompt;
  base.executor = drivers.executor;
  base.cancel = options.cancel;
  base.messages = &result.messages;

  ModelRequest request;
  if (result.messages.empty()) {
    for (const auto& sp : options_.system_prompts) request.parts.push_back(llm::SystemPromptPart{sp, now()});
  }
  request.parts.push_back(llm::UserPromptPart{prompt, now()});

  std::map<std::string, int> tool_failures;  // consecutive failures per tool name
  int output_failures = 0;

  for (int step = 1;; ++step) {
    if (options.cancel && options.cancel->cancelled()) co_return core::cancelled(who + ": run cancelled");
    base.run_step = step;
    base.usage = result.usage;

    // Instructions, evaluated for every request.
    std::string instructions = options_.instructions;
    if (options_.instructions_fn) {
      auto dynamic = co_await options_.instructions_fn(base);
      if (!dynamic.ok()) co_return std::move(dynamic).error().with_context(who + ": instructions");
      if (!dynamic->empty()) instructions += (instructions.empty() ? "" : "\n\n") + *dynamic;
    }
    if (output.mode == llm::OutputMode::kPrompted) {
      instructions += (instructions.empty() ? "" : "\n\n") +
                      std::string("Always respond with a JSON object that's compatible with this schema:\n\n") +
                      core::dump_json(output.schema) +
                      "\n\nDon't include any text or Markdown fencing before or after.";
    }
    request.instructions = instructions;
    result.messages.push_back(std::move(request));
    request = ModelRequest{};

    if (limits.request_limit && result.usage.requests + 1 > *limits.request_limit) {
      co_return core::resource_exhausted(who + ": " + limit_error("request_limit", *limits.request_limit,
                                                                  result.usage.requests + 1));
    }

    auto listed = co_await toolset.get_tools(base);
    if (!listed.ok()) co_return std::move(listed).error().with_context(who + ": listing tools");
    const std::vector<ToolInfo> tools = std::move(*listed);
    std::map<std::string, const ToolInfo*> by_name;
    for (const auto& t : tools) by_name[t.name()] = &t;
    if (output.mode == llm::OutputMode::kTool && by_name.count(output.name)) {
      co_return core::invalid_argument(who + ": a function tool is named like the output tool '" + output.name + "'");
    }

    llm::ModelRequestParameters params;
    for (const auto& t : tools) params.function_tools.push_back(t.definition);
    params.output_mode = output.mode;
    if (output.mode == llm::OutputMode::kTool) {
      llm::ToolDefinition def;
      def.name = output.name;
      def.description = output.description;
      def.parameters_json_schema = output.schema;
      def.kind = "output";
      params.output_tools.push_back(def);
      params.allow_text_output = false;
    } else if (output.mode == llm::OutputMode::kNative || output.mode == llm::OutputMode::kPrompted) {
      llm::OutputObjectDefinition def;
      def.name = output.name;
      def.description = output.description;
      def.json_schema = output.schema;
      params.output_object = def;
    }

    emit(ModelRequestStartEvent{step});
    ModelCall call;
    call.messages = &result.messages;
    call.settings = settings;
    call.params = params;
    call.ctx = &base;
    if (emit_fn) {
      call.on_stream = [&emit_fn, step](const llm::ModelStreamEvent& e) {
        if (!std::holds_alternative<llm::FinalResponseEvent>(e)) emit_fn(ModelStreamEvent{step, e});
        return true;
      };
    }
    auto answered = co_await model->request(call);
    if (!answered.ok()) {
      co_return std::move(answered).error().with_context(who + ": model request " + std::to_string(step));
    }
    ModelResponse response = std::move(*answered);
    int64_t requests_before = result.usage.requests;
    result.usage += response.usage;
    result.usage.requests = requests_before + 1;
    result.messages.push_back(response);
    emit(ModelResponseEvent{step, response});

    struct TokenLimit {
      const char* name;
      const std::optional<int64_t>& limit;
      int64_t value;
    };
    for (const TokenLimit& l : {TokenLimit{"input_tokens_limit", limits.input_tokens_limit, result.usage.input_tokens},
                                TokenLimit{"output_tokens_limit", limits.output_tokens_limit, result.usage.output_tokens},
                                TokenLimit{"total_tokens_limit", limits.total_tokens_limit, result.usage.total_tokens()}}) {
      if (l.limit && l.value > *l.limit) {
        co_return core::resource_exhausted(who + ": usage limit exceeded: " + l.name + " of " +
                                           std::to_string(*l.limit) + " (used " + std::to_string(l.value) + ")");
      }
    }

    const std::vector<ToolCallPart> calls = response.tool_calls();
    const std::string ts = now();

    // 1. The output tool, when the model called it.
    std::optional<size_t> output_call;
    if (output.mode == llm::OutputMode::kTool) {
      for (size_t i = 0; i < calls.size(); ++i) {
        if (calls[i].tool_name == output.name) {
          output_call = i;
          break;
        }
      }
    }
    std::optional<RetryPromptPart> output_retry;
    auto output_failed = [&](std::string message, const std::string& tool_name, const std::string& call_id) -> Result<bool> {
      if (++output_failures > options_.max_output_retries) {
        return core::aborted(who + ": exceeded maximum retries (" + std::to_string(options_.max_output_retries) +
                             ") for the output; last problem: " + message);
      }
      output_retry = RetryPromptPart{std::move(message), tool_name, call_id, ts};
      return true;
    };
    auto finish = [&](Json value, const std::string& tool_name) {
      result.output = value;
      emit(FinalResultEvent{step, std::move(value), tool_name});
    };

    if (output_call) {
      const ToolCallPart& oc = calls[*output_call];
      Json value = oc.args;
      std::vector<ArgError> errors;
      if (!oc.args_valid()) {
        errors.push_back({"(arguments)", "not a JSON object: " + oc.args_raw});
      } else if (output.validate) {
        errors = output.validate(value);
      }
      if (errors.empty()) {
        // Early end: the final result wins; other calls of this response are not run.
        ModelRequest closing;
        for (size_t i = 0; i < calls.size(); ++i) {
          closing.parts.push_back(ToolReturnPart{calls[i].tool_name,
                                                 i == *output_call ? Json("Final result processed.")
                                                                   : Json("Tool not executed - a final result was already processed."),
                                                 calls[i].tool_call_id, ts});
        }
        result.messages.push_back(std::move(closing));
        finish(std::move(value), output.name);
        co_return result;
      }
      auto failed = output_failed(format_arg_errors(errors), output.name, oc.tool_call_id);
      if (!failed.ok()) co_return std::move(failed).error();
    }

    // 2. Function tool calls.
    std::vector<const ToolCallPart*> function_calls;
    for (size_t i = 0; i < calls.size(); ++i) {
      if (!output_call || i != *output_call) function_calls.push_back(&calls[i]);
    }
    if (!function_calls.empty()) {
      std::vector<std::variant<ToolReturnPart, RetryPromptPart>> parts(function_calls.size());
      std::vector<PendingCall> pending;
      pending.reserve(function_calls.size());
      std::vector<size_t> pending_slot;
      std::string last_problem;
      auto count_failure = [&](const std::string& name, int max_retries, const std::string& problem) -> core::Status {
        if (++tool_failures[name] > max_retries) {
          return core::aborted(who + ": tool '" + name + "' exceeded max retries count of " +
                               std::to_string(max_retries) + "; last problem: " + problem);
        }
        return core::ok_status();
      };

      for (size_t i = 0; i < function_calls.size(); ++i) {
        const ToolCallPart& c = *function_calls[i];
        auto found = by_name.find(c.tool_name);
        if (found == by_name.end()) {
          std::string available;
          for (const auto& t : tools) available += (available.empty() ? "'" : ", '") + t.name() + "'";
          if (output.mode == llm::OutputMode::kTool) available += (available.empty() ? "'" : ", '") + output.name + "'";
          std::string message = "Unknown tool name: '" + c.tool_name + "'. " +
                                (available.empty() ? std::string("No tools available.") : "Available tools: " + available);
          CODEACT_CO_TRY_STATUS(count_failure(c.tool_name, options_.max_tool_retries, message));
          parts[i] = RetryPromptPart{message, c.tool_name, c.tool_call_id, ts};
          emit(ToolResultEvent{step, parts[i]});
          continue;
        }
        const ToolInfo& info = *found->second;
        int max_retries = info.max_retries.value_or(options_.max_tool_retries);
        if (!c.args_valid()) {
          auto parsed = c.args_object();
          std::string message = (parsed.ok() ? std::string("the arguments are not a JSON object")
                                             : parsed.error().message()) +
                                "\nThe arguments received were: " + c.args_raw;
          CODEACT_CO_TRY_STATUS(count_failure(c.tool_name, max_retries, message));
          parts[i] = RetryPromptPart{message, c.tool_name, c.tool_call_id, ts};
          emit(ToolResultEvent{step, parts[i]});
          continue;
        }
        if (limits.tool_calls_limit && result.tool_calls + static_cast<int64_t>(pending.size()) + 1 > *limits.tool_calls_limit) {
          co_return core::resource_exhausted(who + ": " + limit_error("tool_calls_limit", *limits.tool_calls_limit,
                                                                      result.tool_calls + static_cast<int64_t>(pending.size()) + 1));
        }
        PendingCall p;
        p.call = ToolCall{c.tool_name, c.args, c.tool_call_id};
        p.ctx = base;
        p.ctx.tool_name = c.tool_name;
        p.ctx.tool_call_id = c.tool_call_id;
        p.ctx.retry = tool_failures.count(c.tool_name) ? tool_failures[c.tool_name] : 0;
        p.ctx.max_retries = max_retries;
        p.info = &info;
        pending.push_back(std::move(p));
        pending_slot.push_back(i);
      }

      // Run: concurrently, unless one of them must run alone.
      for (const auto& p : pending) emit(ToolCallEvent{step, ToolCallPart{p.call.tool_name, p.call.args, p.call.tool_call_id, "", {}}});
      bool sequential = std::any_of(pending.begin(), pending.end(), [](const PendingCall& p) { return p.info->sequential; });
      std::vector<ToolResult> outcomes;
      auto run_one = [](Toolset& ts_ref, const PendingCall& p, const EventHandler* handler, int run_step,
                        std::string stamp) -> Task<ToolResult> {
        ToolResult r = co_await ts_ref.call_tool(p.call, p.ctx);
        if (*handler) (*handler)(ToolResultEvent{run_step, result_part(p.call, r, stamp)});
        co_return r;
      };
      if (sequential || pending.size() == 1) {
        for (const auto& p : pending) outcomes.push_back(co_await run_one(toolset, p, &emit_fn, step, ts));
      } else {
        std::vector<Task<ToolResult>> tasks;
        for (const auto& p : pending) tasks.push_back(run_one(toolset, p, &emit_fn, step, ts));
        outcomes = co_await when_all(std::move(tasks));
      }

      for (size_t k = 0; k < pending.size(); ++k) {
        const PendingCall& p = pending[k];
        const ToolResult& r = outcomes[k];
        if (!r.ok() && r.error().code() == core::Code::kCancelled) {
          co_return r.error().with_context(who + ": tool '" + p.call.tool_name + "'");
        }
        parts[pending_slot[k]] = result_part(p.call, r, ts);
        if (r.ok() && std::holds_alternative<ToolReturn>(*r)) {
          tool_failures.erase(p.call.tool_name);
          ++result.tool_calls;
        } else {
          std::string problem = r.ok() ? std::get<ModelRetry>(*r).message : r.error().to_string();
          CODEACT_CO_TRY_STATUS(count_failure(p.call.tool_name, p.ctx.max_retries, problem));
        }
      }
      if (output_retry) request.parts.push_back(*output_retry);
      for (auto& part : parts) {
        std::visit([&](auto& x) { request.parts.push_back(std::move(x)); }, part);
      }
      continue;
    }
    if (output_retry) {
      request.parts.push_back(*output_retry);
      continue;
    }

    // 3. No tool calls: the text is the answer (or must be parsed as structured output).
    const std::string text = response.text();
    if (output.mode == llm::OutputMode::kText) {
      if (!text.empty()) {
        finish(Json(text), "");
        co_return result;
      }
      auto failed = output_failed("Responses without text or tool calls are not permitted.", "", "");
      if (!failed.ok()) co_return std::move(failed).error();
    } else if (output.mode == llm::OutputMode::kTool) {
      auto failed = output_failed("Plain text responses are not permitted, please include your response in a tool "
                                  "call (call '" + output.name + "' with the final result).", "", "");
      if (!failed.ok()) co_return std::move(failed).error();
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
        co_return result;
      }
      auto failed = output_failed(format_arg_errors(errors), "", "");
      if (!failed.ok()) co_return std::move(failed).error();
    }
    request.parts.push_back(*output_retry);
  }
}

}  // namespace codeact::agent
