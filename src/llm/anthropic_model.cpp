#include "codeact/llm/anthropic_model.hpp"

#include "provider_http_internal.hpp"

namespace codeact::llm {

using core::HttpRequest;
using core::Result;
using internal::StreamAssembler;

namespace {

std::string map_stop_reason(std::string_view reason) {
  if (reason.empty()) return "";
  if (reason == "end_turn" || reason == "stop_sequence" || reason == "pause_turn") {
    return std::string(finish_reason::kStop);
  }
  if (reason == "max_tokens" || reason == "model_context_window_exceeded")
    return std::string(finish_reason::kLength);
  if (reason == "tool_use") return std::string(finish_reason::kToolCall);
  if (reason == "refusal") return std::string(finish_reason::kContentFilter);
  return std::string(finish_reason::kError);
}

// Anthropic counts cached prompt tokens apart from input_tokens; codeact's input_tokens is the
// whole prompt, as for the other providers.
void apply_usage(const Json& u, Usage& usage) {
  if (!u.is_object()) return;
  auto read = [&](const char* key, int64_t& field) {
    auto it = u.find(key);
    if (it != u.end() && it->is_number_integer()) field = it->get<int64_t>();
  };
  int64_t input = -1, cache_write = -1, cache_read = -1, output = -1;
  read("input_tokens", input);
  read("cache_creation_input_tokens", cache_write);
  read("cache_read_input_tokens", cache_read);
  read("output_tokens", output);
  if (cache_write >= 0) usage.cache_write_tokens = cache_write;
  if (cache_read >= 0) usage.cache_read_tokens = cache_read;
  if (input >= 0) usage.input_tokens = input + usage.cache_write_tokens + usage.cache_read_tokens;
  if (output >= 0) usage.output_tokens = output;
}

core::Code code_for_error_type(std::string_view type) {
  if (type == "invalid_request_error" || type == "request_too_large")
    return core::Code::kInvalidArgument;
  if (type == "authentication_error") return core::Code::kUnauthenticated;
  if (type == "permission_error") return core::Code::kPermissionDenied;
  if (type == "not_found_error") return core::Code::kNotFound;
  if (type == "rate_limit_error") return core::Code::kResourceExhausted;
  return core::Code::kUnavailable;  // api_error, overloaded_error, ...
}

void add_block(Json& messages, const char* role, Json block) {
  if (messages.empty() || messages.back()["role"] != role) {
    messages.push_back(Json{{"role", role}, {"content", Json::array()}});
  }
  messages.back()["content"].push_back(std::move(block));
}

Json tool_result(const std::string& id, std::string content, bool is_error) {
  Json block{{"type", "tool_result"}, {"tool_use_id", id}, {"content", std::move(content)}};
  if (is_error) block["is_error"] = true;
  return block;
}

}  // namespace

AnthropicModel::AnthropicModel(ProviderOptions options)
    : ProviderModel(std::move(options), "anthropic", kAnthropicBaseUrl) {}

Json AnthropicModel::build_request_body(const std::vector<ModelMessage>& messages,
                                        const ModelSettings& settings_in,
                                        const ModelRequestParameters& params, bool stream) const {
  ModelSettings settings = options_.default_settings.merged(settings_in);
  Json wire = Json::array();
  for (const auto& message : messages) {
    if (auto* request = std::get_if<ModelRequest>(&message)) {
      for (const auto& part : request->parts) {
        if (auto* p = std::get_if<UserPromptPart>(&part)) {
          add_block(wire, "user", Json{{"type", "text"}, {"text", p->content}});
        } else if (auto* p = std::get_if<ToolReturnPart>(&part)) {
          add_block(wire, "user", tool_result(p->tool_call_id, p->content_text(), false));
        } else if (auto* p = std::get_if<RetryPromptPart>(&part)) {
          if (!p->tool_call_id.empty() && !p->tool_name.empty()) {
            add_block(wire, "user", tool_result(p->tool_call_id, p->model_response(), true));
          } else {
            add_block(wire, "user", Json{{"type", "text"}, {"text", p->model_response()}});
          }
        }
      }
    } else {
      for (const auto& part : std::get<ModelResponse>(message).parts) {
        if (auto* p = std::get_if<TextPart>(&part)) {
          if (!p->content.empty())
            add_block(wire, "assistant", Json{{"type", "text"}, {"text", p->content}});
        } else if (auto* p = std::get_if<ToolCallPart>(&part)) {
          auto args = p->args_object();
          add_block(wire, "assistant",
                    Json{{"type", "tool_use"},
                         {"id", p->tool_call_id},
                         {"name", p->tool_name},
                         {"input", args.ok() ? *args : Json::object()}});
        } else if (auto* p = std::get_if<ThinkingPart>(&part)) {
          // Only Anthropic's own signed thinking may be sent back.
          if (!p->signature.empty() && p->provider_name == options_.provider_name) {
            add_block(
                wire, "assistant",
                Json{{"type", "thinking"}, {"thinking", p->content}, {"signature", p->signature}});
          }
        }
      }
    }
  }

  Json body{{"model", options_.model_name},
            {"max_tokens", settings.max_tokens.value_or(kAnthropicDefaultMaxTokens)},
            {"messages", std::move(wire)}};
  ModelRequestParameters effective = params;
  if (effective.output_mode == OutputMode::kNative) effective.output_mode = OutputMode::kPrompted;
  auto system = internal::system_texts(messages, effective);
  if (!system.empty()) {
    std::string joined;
    for (const auto& s : system) joined += (joined.empty() ? "" : "\n\n") + s;
    body["system"] = joined;
  }
  auto tools = params.all_tools();
  if (!tools.empty()) {
    Json tools_json = Json::array();
    for (const auto& tool : tools) {
      Json t{{"name", tool.name}, {"input_schema", tool.parameters_json_schema}};
      if (!tool.description.empty()) t["description"] = tool.description;
      tools_json.push_back(std::move(t));
    }
    body["tools"] = std::move(tools_json);
    Json choice{{"type", params.allow_text_output ? "auto" : "any"}};
    if (settings.parallel_tool_calls && !*settings.parallel_tool_calls)
      choice["disable_parallel_tool_use"] = true;
    body["tool_choice"] = std::move(choice);
  }
  if (settings.temperature) body["temperature"] = *settings.temperature;
  if (settings.top_p) body["top_p"] = *settings.top_p;
  if (!settings.stop_sequences.empty()) body["stop_sequences"] = settings.stop_sequences;
  if (stream) body["stream"] = true;
  if (settings.extra_body.is_object()) body.merge_patch(settings.extra_body);
  return body;
}

namespace {

internal::ProviderCall prepare(const ProviderOptions& options, const ModelSettings& settings,
                               std::string body, const core::CancelToken* cancel) {
  std::string base = options.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (!base.ends_with("/v1")) base += "/v1";
  core::Headers headers{{"anthropic-version", std::string(kAnthropicVersion)}};
  if (!options.api_key.empty()) headers.emplace_back("x-api-key", options.api_key);
  return internal::prepare_call(options, settings, base + "/messages", std::move(headers),
                                std::move(body), cancel);
}

core::Error error_from_event(const Json& j, const std::string& what) {
  const Json& error = core::json_object(j, "error");
  return core::Error(code_for_error_type(core::json_string(error, "type")),
                     what + ": " + internal::provider_error_message(core::dump_json(j)));
}

void finish_metadata(ModelResponse& response, const ProviderOptions& options,
                     const std::string& raw_reason) {
  internal::finish_metadata(response, options, map_stop_reason(raw_reason), raw_reason);
}

}  // namespace

Result<ModelResponse> AnthropicModel::request(const std::vector<ModelMessage>& messages,
                                              const ModelSettings& settings,
                                              const ModelRequestParameters& params,
                                              const core::CancelToken* cancel) {
  internal::ProviderCall call =
      prepare(options_, settings,
              core::dump_json(build_request_body(messages, settings, params, false)), cancel);
  const std::string& what = call.context.what;
  CODEACT_TRY(Json j, internal::request_json(*options_.transport, call));
  if (core::json_string(j, "type") == "error") return error_from_event(j, what);
  ModelResponse response;
  auto content = j.find("content");
  if (content == j.end() || !content->is_array()) {
    return core::data_loss(what +
                           ": response has no content array: " + core::dump_json(j).substr(0, 300));
  }
  for (const auto& block : *content) {
    std::string type = core::json_string(block, "type");
    if (type == "text") {
      response.parts.push_back(TextPart{core::json_string(block, "text")});
    } else if (type == "tool_use") {
      ToolCallPart part;
      part.tool_name = core::json_string(block, "name");
      part.tool_call_id = core::json_string(block, "id");
      Json input = block.value("input", Json::object());
      if (input.is_object()) {
        part.args = input;
      } else {
        part.args_raw = core::dump_json(input);
      }
      response.parts.push_back(std::move(part));
    } else if (type == "thinking") {
      response.parts.push_back(ThinkingPart{core::json_string(block, "thinking"),
                                            core::json_string(block, "signature"),
                                            options_.provider_name});
    }
  }
  apply_usage(core::json_object(j, "usage"), response.usage);
  response.model_name = core::json_string(j, "model");
  response.provider_response_id = core::json_string(j, "id");
  finish_metadata(response, options_, core::json_string(j, "stop_reason"));
  return response;
}

Result<ModelResponse> AnthropicModel::request_stream(const std::vector<ModelMessage>& messages,
                                                     const ModelSettings& settings,
                                                     const ModelRequestParameters& params,
                                                     const StreamHandler& on_event,
                                                     const core::CancelToken* cancel) {
  internal::ProviderCall call =
      prepare(options_, settings,
              core::dump_json(build_request_body(messages, settings, params, true)), cancel);
  const std::string what = call.context.what;
  std::optional<StreamAssembler> assembler;
  ModelResponse response;
  std::string raw_reason;
  bool stopped_message = false;
  std::optional<core::Error> stream_error;
  // Anthropic block index -> kind of block ("text", "tool_use", "thinking", or "" for ignored).
  std::vector<std::pair<int64_t, std::string>> blocks;

  auto reset = [&]() {
    assembler.emplace(on_event);
    response = ModelResponse{};
    raw_reason.clear();
    stopped_message = false;
    stream_error.reset();
    blocks.clear();
  };
  call.context.may_retry = [&]() { return !assembler || !assembler->emitted(); };

  auto block_kind = [&](int64_t index) -> std::string {
    for (const auto& [i, kind] : blocks) {
      if (i == index) return kind;
    }
    return "";
  };

  auto on_sse = [&](const core::SseEvent& event) -> bool {
    auto chunk = internal::stream_json(event, what);
    if (!chunk.ok()) {
      stream_error = std::move(chunk).error();
      return false;
    }
    const Json& j = *chunk;
    std::string type = core::json_string(j, "type", event.event);
    if (type == "error") {
      stream_error = error_from_event(j, what);
      return false;
    }
    if (type == "message_start") {
      const Json& message = core::json_object(j, "message");
      response.provider_response_id = core::json_string(message, "id");
      response.model_name = core::json_string(message, "model");
      apply_usage(core::json_object(message, "usage"), response.usage);
    } else if (type == "content_block_start") {
      int64_t index = core::json_int(j, "index");
      const Json& block = core::json_object(j, "content_block");
      std::string kind = core::json_string(block, "type");
      std::string key = "block:" + std::to_string(index);
      if (kind == "text") {
        blocks.emplace_back(index, kind);
        assembler->text_delta(key, core::json_string(block, "text"));
      } else if (kind == "tool_use") {
        blocks.emplace_back(index, kind);
        // "input" here is always {} in practice; the arguments come as input_json_delta.
        Json input = block.value("input", Json::object());
        std::string initial = input.is_object() && input.empty() ? "" : core::dump_json(input);
        assembler->tool_call_delta(key, core::json_string(block, "name"), initial,
                                   core::json_string(block, "id"));
      } else if (kind == "thinking") {
        blocks.emplace_back(index, kind);
        assembler->thinking_delta(key, core::json_string(block, "thinking"),
                                  core::json_string(block, "signature"), options_.provider_name);
      } else {
        blocks.emplace_back(index, "");  // redacted_thinking, server tools, ...: not modelled
      }
    } else if (type == "content_block_delta") {
      int64_t index = core::json_int(j, "index");
      std::string key = "block:" + std::to_string(index);
      const Json& delta = core::json_object(j, "delta");
      std::string delta_type = core::json_string(delta, "type");
      std::string kind = block_kind(index);
      if (delta_type == "text_delta" && kind == "text") {
        assembler->text_delta(key, core::json_string(delta, "text"));
      } else if (delta_type == "input_json_delta" && kind == "tool_use") {
        assembler->tool_call_delta(key, "", core::json_string(delta, "partial_json"), "");
      } else if (delta_type == "thinking_delta" && kind == "thinking") {
        assembler->thinking_delta(key, core::json_string(delta, "thinking"), "",
                                  options_.provider_name);
      } else if (delta_type == "signature_delta" && kind == "thinking") {
        assembler->thinking_delta(key, "", core::json_string(delta, "signature"),
                                  options_.provider_name);
      }
    } else if (type == "message_delta") {
      const Json& delta = core::json_object(j, "delta");
      std::string reason = core::json_string(delta, "stop_reason");
      if (!reason.empty()) raw_reason = reason;
      apply_usage(core::json_object(j, "usage"), response.usage);
    } else if (type == "message_stop") {
      stopped_message = true;
    }
    // ping and content_block_stop need no action.
    return !assembler->stopped();
  };

  auto http =
      internal::send_sse_with_retry(*options_.transport, call.make, call.context, reset, on_sse);
  CODEACT_TRY_STATUS(
      internal::stream_status(http, stream_error, assembler && assembler->stopped(), what));
  if (!stopped_message) {
    return core::unavailable(what +
                             ": the response stream ended before message_stop; the connection was "
                             "probably cut");
  }
  finish_metadata(response, options_, raw_reason);
  assembler->finish(response);
  return response;
}

}  // namespace codeact::llm
