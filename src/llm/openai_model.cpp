#include "codeact/llm/openai_model.hpp"

#include <algorithm>

#include "codeact/core/time.hpp"
#include "provider_http_internal.hpp"

namespace codeact::llm {

using core::HttpRequest;
using core::Result;
using internal::StreamAssembler;

namespace {

std::string map_finish_reason(std::string_view reason) {
  if (reason == "stop") return std::string(finish_reason::kStop);
  if (reason == "length") return std::string(finish_reason::kLength);
  if (reason == "tool_calls" || reason == "function_call")
    return std::string(finish_reason::kToolCall);
  if (reason == "content_filter") return std::string(finish_reason::kContentFilter);
  if (reason.empty()) return "";
  return std::string(finish_reason::kError);
}

Usage map_usage(const Json& u) {
  Usage usage;
  usage.requests = 1;
  if (!u.is_object()) return usage;
  usage.input_tokens = core::json_int(u, "prompt_tokens");
  usage.output_tokens = core::json_int(u, "completion_tokens");
  if (auto it = u.find("prompt_tokens_details"); it != u.end() && it->is_object()) {
    usage.cache_read_tokens = core::json_int(*it, "cached_tokens");
  }
  if (auto it = u.find("completion_tokens_details"); it != u.end() && it->is_object()) {
    for (auto& [key, value] : it->items()) {
      if (value.is_number_integer() && value.get<int64_t>() != 0) usage.details[key] = value;
    }
  }
  return usage;
}

Json tool_json(const ToolDefinition& tool) {
  Json function{{"name", tool.name}, {"parameters", tool.parameters_json_schema}};
  if (!tool.description.empty()) function["description"] = tool.description;
  if (tool.strict) function["strict"] = *tool.strict;
  return Json{{"type", "function"}, {"function", std::move(function)}};
}

void append_request(const ModelRequest& request, Json& out) {
  for (const auto& part : request.parts) {
    if (auto* p = std::get_if<SystemPromptPart>(&part)) {
      out.push_back(Json{{"role", "system"}, {"content", p->content}});
    } else if (auto* p = std::get_if<UserPromptPart>(&part)) {
      out.push_back(Json{{"role", "user"}, {"content", p->content}});
    } else if (auto* p = std::get_if<ToolReturnPart>(&part)) {
      out.push_back(Json{
          {"role", "tool"}, {"tool_call_id", p->tool_call_id}, {"content", p->content_text()}});
    } else if (auto* p = std::get_if<RetryPromptPart>(&part)) {
      if (!p->tool_call_id.empty() && !p->tool_name.empty()) {
        out.push_back(Json{
            {"role", "tool"}, {"tool_call_id", p->tool_call_id}, {"content", p->model_response()}});
      } else {
        out.push_back(Json{{"role", "user"}, {"content", p->model_response()}});
      }
    }
  }
}

void append_response(const ModelResponse& response, Json& out) {
  std::string text;
  Json tool_calls = Json::array();
  for (const auto& part : response.parts) {
    if (auto* p = std::get_if<TextPart>(&part)) {
      text += p->content;
    } else if (auto* p = std::get_if<ToolCallPart>(&part)) {
      tool_calls.push_back(
          Json{{"id", p->tool_call_id},
               {"type", "function"},
               {"function",
                {{"name", p->tool_name},
                 {"arguments", p->args_raw.empty() ? core::dump_json(p->args) : p->args_raw}}}});
    }
    // Thinking is not sent back: chat completions has no field for it.
  }
  Json message{{"role", "assistant"}};
  message["content"] = text.empty() && !tool_calls.empty() ? Json(nullptr) : Json(text);
  if (!tool_calls.empty()) message["tool_calls"] = std::move(tool_calls);
  out.push_back(std::move(message));
}

}  // namespace

OpenAIModel::OpenAIModel(OpenAIOptions options)
    : ProviderModel(std::move(options), "openai", kOpenAIBaseUrl) {
  if (!options_.use_max_completion_tokens) {
    options_.use_max_completion_tokens = options_.provider_name == "openai";
  }
}

Json OpenAIModel::build_request_body(const std::vector<ModelMessage>& messages,
                                     const ModelSettings& settings_in,
                                     const ModelRequestParameters& params, bool stream) const {
  ModelSettings settings = options_.default_settings.merged(settings_in);
  Json wire = Json::array();
  std::string instructions;
  for (const auto& message : messages) {
    if (auto* request = std::get_if<ModelRequest>(&message)) {
      append_request(*request, wire);
      if (!request->instructions.empty()) instructions = request->instructions;
    } else {
      append_response(std::get<ModelResponse>(message), wire);
    }
  }
  std::string extra_system = instructions;
  if (params.output_mode == OutputMode::kPrompted && params.output_object) {
    if (!extra_system.empty()) extra_system += "\n\n";
    extra_system += internal::prompted_output_instructions(*params.output_object);
  }
  if (!extra_system.empty())
    wire.insert(wire.begin(), Json{{"role", "system"}, {"content", extra_system}});

  Json body{{"model", options_.model_name}, {"messages", std::move(wire)}};
  auto tools = params.all_tools();
  if (!tools.empty()) {
    Json tools_json = Json::array();
    for (const auto& tool : tools) tools_json.push_back(tool_json(tool));
    body["tools"] = std::move(tools_json);
    body["tool_choice"] = params.allow_text_output ? "auto" : "required";
    if (settings.parallel_tool_calls) body["parallel_tool_calls"] = *settings.parallel_tool_calls;
  }
  if (params.output_mode == OutputMode::kNative && params.output_object) {
    const auto& out = *params.output_object;
    Json schema{{"name", out.name}, {"schema", out.json_schema}};
    if (!out.description.empty()) schema["description"] = out.description;
    if (out.strict) schema["strict"] = *out.strict;
    body["response_format"] = Json{{"type", "json_schema"}, {"json_schema", std::move(schema)}};
  }
  if (settings.max_tokens) {
    body[*options_.use_max_completion_tokens ? "max_completion_tokens" : "max_tokens"] =
        *settings.max_tokens;
  }
  if (settings.temperature) body["temperature"] = *settings.temperature;
  if (settings.top_p) body["top_p"] = *settings.top_p;
  if (settings.seed) body["seed"] = *settings.seed;
  if (settings.presence_penalty) body["presence_penalty"] = *settings.presence_penalty;
  if (settings.frequency_penalty) body["frequency_penalty"] = *settings.frequency_penalty;
  if (!settings.stop_sequences.empty()) body["stop"] = settings.stop_sequences;
  if (stream) {
    body["stream"] = true;
    if (options_.stream_include_usage) body["stream_options"] = Json{{"include_usage", true}};
  }
  if (settings.extra_body.is_object()) body.merge_patch(settings.extra_body);
  return body;
}

namespace {

internal::ProviderCall prepare(const OpenAIOptions& options, const ModelSettings& settings,
                               std::string body, const core::CancelToken* cancel) {
  core::Headers headers{{"Accept", "application/json"}};
  if (!options.api_key.empty()) headers.emplace_back("Authorization", "Bearer " + options.api_key);
  return internal::prepare_call(options, settings,
                                internal::join_url(options.base_url, "/chat/completions"),
                                std::move(headers), std::move(body), cancel);
}

// Reads a chat.completion document (the non-streamed answer).
Result<ModelResponse> parse_completion(const Json& j, const OpenAIOptions& options,
                                       const std::string& what) {
  if (auto error = internal::inline_error(j, what)) return *error;
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array() || choices->empty() ||
      !(*choices)[0].is_object()) {
    return core::data_loss(what +
                           ": response has no choices: " + core::dump_json(j).substr(0, 300));
  }
  const Json& choice = (*choices)[0];
  const Json& message = core::json_object(choice, "message");
  ModelResponse response;
  std::string reasoning = core::json_string(message, "reasoning_content");
  if (reasoning.empty()) reasoning = core::json_string(message, "reasoning");
  if (!reasoning.empty())
    response.parts.push_back(ThinkingPart{reasoning, "", options.provider_name});
  std::string content = core::json_string(message, "content");
  if (!content.empty()) response.parts.push_back(TextPart{content});
  std::string refusal = core::json_string(message, "refusal");
  if (content.empty() && !refusal.empty()) response.parts.push_back(TextPart{refusal});
  if (auto calls = message.find("tool_calls"); calls != message.end() && calls->is_array()) {
    for (const auto& c : *calls) {
      const Json& function = core::json_object(c, "function");
      Json args = function.value("arguments", Json(""));
      std::string id = core::json_string(c, "id");
      if (id.empty()) id = internal::generate_tool_call_id();
      ToolCallPart part;
      if (args.is_object()) {  // some compatible servers send an object
        part.tool_name = core::json_string(function, "name");
        part.args = args;
        part.tool_call_id = id;
      } else {
        part = ToolCallPart::from_args_text(
            core::json_string(function, "name"),
            args.is_string() ? args.get<std::string>() : core::dump_json(args), id);
      }
      response.parts.push_back(std::move(part));
    }
  }
  response.usage = map_usage(j.value("usage", Json()));
  response.model_name = core::json_string(j, "model", options.model_name);
  response.timestamp = core::now_rfc3339();
  response.provider_name = options.provider_name;
  response.provider_response_id = core::json_string(j, "id");
  std::string raw_reason = core::json_string(choice, "finish_reason");
  response.finish_reason = map_finish_reason(raw_reason);
  if (!raw_reason.empty()) response.provider_details = Json{{"finish_reason", raw_reason}};
  return response;
}

}  // namespace

Result<ModelResponse> OpenAIModel::request(const std::vector<ModelMessage>& messages,
                                           const ModelSettings& settings,
                                           const ModelRequestParameters& params,
                                           const core::CancelToken* cancel) {
  internal::ProviderCall call =
      prepare(options_, settings,
              core::dump_json(build_request_body(messages, settings, params, false)), cancel);
  const std::string& what = call.context.what;
  CODEACT_TRY(Json j, internal::request_json(*options_.transport, call));
  return parse_completion(j, options_, what);
}

Result<ModelResponse> OpenAIModel::request_stream(const std::vector<ModelMessage>& messages,
                                                  const ModelSettings& settings,
                                                  const ModelRequestParameters& params,
                                                  const StreamHandler& on_event,
                                                  const core::CancelToken* cancel) {
  internal::ProviderCall call =
      prepare(options_, settings,
              core::dump_json(build_request_body(messages, settings, params, true)), cancel);
  const std::string what = call.context.what;

  // Per-attempt stream state.
  std::optional<StreamAssembler> assembler;
  ModelResponse response;
  std::string raw_reason;
  bool done = false;
  std::optional<core::Error> stream_error;
  // OpenAI tool call index -> current tool call id (a reused index with a new id is a new call).
  std::vector<std::pair<int64_t, std::string>> call_ids;
  int generation = 0;

  auto reset = [&]() {
    assembler.emplace(on_event);
    response = ModelResponse{};
    raw_reason.clear();
    done = false;
    stream_error.reset();
    call_ids.clear();
  };
  call.context.may_retry = [&]() { return !assembler || !assembler->emitted(); };

  auto on_sse = [&](const core::SseEvent& event) -> bool {
    if (event.data == "[DONE]") {
      done = true;
      return true;
    }
    auto chunk = internal::stream_json(event, what);
    if (!chunk.ok()) {
      stream_error = std::move(chunk).error();
      return false;
    }
    const Json& j = *chunk;
    if (auto error = internal::inline_error(j, what)) {
      stream_error = *error;
      return false;
    }
    if (response.provider_response_id.empty())
      response.provider_response_id = core::json_string(j, "id");
    if (response.model_name.empty()) response.model_name = core::json_string(j, "model");
    if (auto u = j.find("usage"); u != j.end() && u->is_object()) response.usage = map_usage(*u);
    auto choices = j.find("choices");
    if (choices == j.end() || !choices->is_array()) return !assembler->stopped();
    for (const auto& choice : *choices) {
      if (!choice.is_object() || core::json_int(choice, "index") != 0) continue;
      std::string reason = core::json_string(choice, "finish_reason");
      if (!reason.empty()) raw_reason = reason;
      const Json& delta = core::json_object(choice, "delta");
      if (!delta.is_object()) continue;
      std::string reasoning = core::json_string(delta, "reasoning_content");
      if (reasoning.empty()) reasoning = core::json_string(delta, "reasoning");
      if (!reasoning.empty())
        assembler->thinking_delta("thinking", reasoning, "", options_.provider_name);
      assembler->text_delta("text", core::json_string(delta, "content"));
      auto calls = delta.find("tool_calls");
      if (calls == delta.end() || !calls->is_array()) continue;
      for (size_t pos = 0; pos < calls->size(); ++pos) {
        const Json& c = (*calls)[pos];
        if (!c.is_object()) continue;
        int64_t index = core::json_int(c, "index", static_cast<int64_t>(pos));
        std::string id = core::json_string(c, "id");
        const Json& function = core::json_object(c, "function");
        std::string name = core::json_string(function, "name");
        Json args_json = function.value("arguments", Json(""));
        std::string args =
            args_json.is_string() ? args_json.get<std::string>() : core::dump_json(args_json);
        // Find the key for this call index; a new id on a known index starts a new call.
        auto found = std::find_if(call_ids.begin(), call_ids.end(),
                                  [&](auto& kv) { return kv.first == index; });
        std::string key;
        if (found == call_ids.end()) {
          call_ids.emplace_back(index, id);
          key = "tool:" + std::to_string(index) + ":" + std::to_string(generation++);
          call_ids.back().second = key + "|" + id;
        } else {
          const std::string& stored = found->second;
          std::string stored_id = stored.substr(stored.find('|') + 1);
          key = stored.substr(0, stored.find('|'));
          if (!id.empty() && !stored_id.empty() && id != stored_id) {
            key = "tool:" + std::to_string(index) + ":" + std::to_string(generation++);
            found->second = key + "|" + id;
          } else if (stored_id.empty() && !id.empty()) {
            found->second = key + "|" + id;
          }
        }
        assembler->tool_call_delta(key, name, args, id);
      }
    }
    return !assembler->stopped();
  };

  std::string non_sse_body;
  auto http = internal::send_sse_with_retry(*options_.transport, call.make, call.context, reset,
                                            on_sse, &non_sse_body);
  CODEACT_TRY_STATUS(
      internal::stream_status(http, stream_error, assembler && assembler->stopped(), what));
  const size_t first = non_sse_body.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && non_sse_body[first] == '{') {
    // The server ignored "stream": true and sent one chat.completion document.
    CODEACT_TRY(Json j, internal::parse_response_body(non_sse_body, what));
    CODEACT_TRY(auto whole, parse_completion(j, options_, what));
    if (!replay_as_stream(whole, on_event)) {
      return core::cancelled(what + ": stream stopped by its consumer");
    }
    return whole;
  }
  if (!done && raw_reason.empty()) {
    return core::unavailable(what +
                             ": the response stream ended before the response was complete "
                             "(no finish_reason and no [DONE]); the connection was probably cut");
  }
  internal::finish_metadata(response, options_, map_finish_reason(raw_reason), raw_reason);
  assembler->finish(response);  // the response is complete even if the consumer stops now
  return response;
}

}  // namespace codeact::llm
