#include "codeact/llm/gemini_model.hpp"

#include "provider_http_internal.hpp"

namespace codeact::llm {

using core::HttpRequest;
using core::Result;
using internal::StreamAssembler;

namespace {

std::string map_finish_reason(std::string_view reason) {
  if (reason.empty()) return "";
  if (reason == "STOP") return std::string(finish_reason::kStop);
  if (reason == "MAX_TOKENS") return std::string(finish_reason::kLength);
  if (reason == "SAFETY" || reason == "RECITATION" || reason == "BLOCKLIST" ||
      reason == "PROHIBITED_CONTENT" || reason == "SPII" || reason == "IMAGE_SAFETY" ||
      reason == "LANGUAGE") {
    return std::string(finish_reason::kContentFilter);
  }
  return std::string(finish_reason::kError);  // MALFORMED_FUNCTION_CALL, OTHER, ...
}

Usage map_usage(const Json& u) {
  Usage usage;
  usage.requests = 1;
  if (!u.is_object()) return usage;
  usage.input_tokens = core::json_int(u, "promptTokenCount");
  int64_t thoughts = core::json_int(u, "thoughtsTokenCount");
  usage.output_tokens = core::json_int(u, "candidatesTokenCount") + thoughts;
  usage.cache_read_tokens = core::json_int(u, "cachedContentTokenCount");
  if (thoughts != 0) usage.details["thoughts_tokens"] = thoughts;
  int64_t tool_prompt = core::json_int(u, "toolUsePromptTokenCount");
  if (tool_prompt != 0) usage.details["tool_use_prompt_tokens"] = tool_prompt;
  return usage;
}

// Appends `part` to the last content when it has `role`, else starts a new content.
void add_part(Json& contents, const char* role, Json part) {
  if (contents.empty() || contents.back()["role"] != role) {
    contents.push_back(Json{{"role", role}, {"parts", Json::array()}});
  }
  contents.back()["parts"].push_back(std::move(part));
}

Json function_response(const std::string& name, const Json& content) {
  Json response = content.is_object() ? content : Json{{"return_value", content}};
  return Json{{"functionResponse", {{"name", name}, {"response", std::move(response)}}}};
}

}  // namespace

GeminiModel::GeminiModel(ProviderOptions options)
    : ProviderModel(std::move(options), "google-gla", kGeminiBaseUrl) {}

Json GeminiModel::build_request_body(const std::vector<ModelMessage>& messages,
                                     const ModelSettings& settings_in,
                                     const ModelRequestParameters& params) const {
  ModelSettings settings = options_.default_settings.merged(settings_in);
  Json contents = Json::array();
  for (const auto& message : messages) {
    if (auto* request = std::get_if<ModelRequest>(&message)) {
      for (const auto& part : request->parts) {
        if (auto* p = std::get_if<UserPromptPart>(&part)) {
          add_part(contents, "user", Json{{"text", p->content}});
        } else if (auto* p = std::get_if<ToolReturnPart>(&part)) {
          add_part(contents, "user", function_response(p->tool_name, p->content));
        } else if (auto* p = std::get_if<RetryPromptPart>(&part)) {
          if (!p->tool_name.empty()) {
            add_part(contents, "user",
                     Json{{"functionResponse",
                           {{"name", p->tool_name},
                            {"response", {{"call_error", p->model_response()}}}}}});
          } else {
            add_part(contents, "user", Json{{"text", p->model_response()}});
          }
        }
        // System prompts go to systemInstruction.
      }
    } else {
      const auto& response = std::get<ModelResponse>(message);
      for (const auto& part : response.parts) {
        if (auto* p = std::get_if<TextPart>(&part)) {
          if (!p->content.empty()) add_part(contents, "model", Json{{"text", p->content}});
        } else if (auto* p = std::get_if<ToolCallPart>(&part)) {
          auto args = p->args_object();
          Json call{{"functionCall",
                     {{"name", p->tool_name}, {"args", args.ok() ? *args : Json::object()}}}};
          std::string signature = core::json_string(p->provider_details, "thought_signature");
          if (!signature.empty()) call["thoughtSignature"] = signature;
          add_part(contents, "model", std::move(call));
        }
        // Thoughts are not sent back; their signatures ride on the function calls.
      }
    }
  }

  Json body{{"contents", std::move(contents)}};
  auto system = internal::system_texts(messages, params);
  if (!system.empty()) {
    Json parts = Json::array();
    for (auto& text : system) parts.push_back(Json{{"text", text}});
    body["systemInstruction"] = Json{{"parts", std::move(parts)}};
  }
  auto tools = params.all_tools();
  if (!tools.empty()) {
    Json declarations = Json::array();
    for (const auto& tool : tools) {
      Json d{{"name", tool.name}, {"description", tool.description}};
      d["parametersJsonSchema"] = tool.parameters_json_schema;
      declarations.push_back(std::move(d));
    }
    body["tools"] = Json::array({Json{{"functionDeclarations", std::move(declarations)}}});
    if (!params.allow_text_output) {
      body["toolConfig"] = Json{{"functionCallingConfig", {{"mode", "ANY"}}}};
    }
  }
  Json generation = Json::object();
  if (settings.max_tokens) generation["maxOutputTokens"] = *settings.max_tokens;
  if (settings.temperature) generation["temperature"] = *settings.temperature;
  if (settings.top_p) generation["topP"] = *settings.top_p;
  if (settings.seed) generation["seed"] = *settings.seed;
  if (settings.presence_penalty) generation["presencePenalty"] = *settings.presence_penalty;
  if (settings.frequency_penalty) generation["frequencyPenalty"] = *settings.frequency_penalty;
  if (!settings.stop_sequences.empty()) generation["stopSequences"] = settings.stop_sequences;
  if (params.output_mode == OutputMode::kNative && params.output_object) {
    generation["responseMimeType"] = "application/json";
    generation["responseJsonSchema"] = params.output_object->json_schema;
  }
  if (!generation.empty()) body["generationConfig"] = std::move(generation);
  if (settings.extra_body.is_object()) body.merge_patch(settings.extra_body);
  return body;
}

namespace {

std::string api_base(const std::string& base) {
  std::string b = base;
  while (!b.empty() && b.back() == '/') b.pop_back();
  auto ends_with = [&](std::string_view s) {
    return b.size() >= s.size() && b.compare(b.size() - s.size(), s.size(), s) == 0;
  };
  if (ends_with("/v1beta") || ends_with("/v1") || ends_with("/v1alpha")) return b;
  return b + "/v1beta";
}

internal::ProviderCall prepare(const ProviderOptions& options, const ModelSettings& settings,
                               std::string body, bool stream, const core::CancelToken* cancel) {
  std::string url = api_base(options.base_url) + "/models/" + core::url_encode(options.model_name) +
                    (stream ? ":streamGenerateContent?alt=sse" : ":generateContent");
  core::Headers headers;
  if (!options.api_key.empty()) headers.emplace_back("x-goog-api-key", options.api_key);
  return internal::prepare_call(options, settings, std::move(url), std::move(headers),
                                std::move(body), cancel);
}

// Reads the parts of candidates[0] of one (possibly partial) GenerateContentResponse.
// Returns false when the prompt was blocked (error set).
struct ChunkReader {
  const ProviderOptions& options;
  const std::string& what;
  ModelResponse& response;
  std::string raw_reason;

  std::optional<core::Error> read_metadata(const Json& j) {
    if (auto u = j.find("usageMetadata"); u != j.end() && u->is_object())
      response.usage = map_usage(*u);
    std::string version = core::json_string(j, "modelVersion");
    if (!version.empty()) response.model_name = version;
    std::string id = core::json_string(j, "responseId");
    if (!id.empty()) response.provider_response_id = id;
    auto candidates = j.find("candidates");
    if (candidates == j.end() || !candidates->is_array() || candidates->empty()) {
      auto feedback = j.find("promptFeedback");
      if (feedback != j.end() && feedback->is_object() && feedback->contains("blockReason")) {
        return core::invalid_argument(what + ": Gemini blocked the prompt (blockReason " +
                                      core::json_string(*feedback, "blockReason") + ")");
      }
      return std::nullopt;
    }
    std::string reason = core::json_string((*candidates)[0], "finishReason");
    if (!reason.empty()) raw_reason = reason;
    return std::nullopt;
  }
};

const Json* first_candidate_parts(const Json& j) {
  auto candidates = j.find("candidates");
  if (candidates == j.end() || !candidates->is_array() || candidates->empty()) return nullptr;
  const Json& c = (*candidates)[0];
  auto content = c.find("content");
  if (content == c.end() || !content->is_object()) return nullptr;
  auto parts = content->find("parts");
  if (parts == content->end() || !parts->is_array()) return nullptr;
  return &*parts;
}

void finish_metadata(ModelResponse& response, const ProviderOptions& options,
                     const std::string& raw_reason) {
  internal::finish_metadata(response, options, map_finish_reason(raw_reason), raw_reason);
}

}  // namespace

Result<ModelResponse> GeminiModel::request(const std::vector<ModelMessage>& messages,
                                           const ModelSettings& settings,
                                           const ModelRequestParameters& params,
                                           const core::CancelToken* cancel) {
  internal::ProviderCall call =
      prepare(options_, settings, core::dump_json(build_request_body(messages, settings, params)),
              false, cancel);
  const std::string& what = call.context.what;
  CODEACT_TRY(Json j, internal::request_json(*options_.transport, call));
  if (auto error = internal::inline_error(j, what)) return *error;
  ModelResponse response;
  ChunkReader reader{options_, what, response, ""};
  if (auto error = reader.read_metadata(j)) return *error;
  if (const Json* parts = first_candidate_parts(j)) {
    for (const auto& part : *parts) {
      if (!part.is_object()) continue;
      std::string signature = core::json_string(part, "thoughtSignature");
      if (auto fc = part.find("functionCall"); fc != part.end() && fc->is_object()) {
        ToolCallPart call_part;
        call_part.tool_name = core::json_string(*fc, "name");
        Json args = fc->value("args", Json::object());
        if (args.is_object()) {
          call_part.args = args;
        } else {
          call_part.args_raw = core::dump_json(args);
        }
        call_part.tool_call_id = core::json_string(*fc, "id");
        if (call_part.tool_call_id.empty())
          call_part.tool_call_id = internal::generate_tool_call_id();
        if (!signature.empty()) call_part.provider_details = Json{{"thought_signature", signature}};
        response.parts.push_back(std::move(call_part));
      } else if (part.contains("text")) {
        std::string text = core::json_string(part, "text");
        if (core::json_bool(part, "thought")) {
          response.parts.push_back(ThinkingPart{text, signature, options_.provider_name});
        } else if (!text.empty()) {
          if (!response.parts.empty() && std::holds_alternative<TextPart>(response.parts.back())) {
            std::get<TextPart>(response.parts.back()).content += text;
          } else {
            response.parts.push_back(TextPart{text});
          }
        }
      }
    }
  }
  finish_metadata(response, options_, reader.raw_reason);
  return response;
}

Result<ModelResponse> GeminiModel::request_stream(const std::vector<ModelMessage>& messages,
                                                  const ModelSettings& settings,
                                                  const ModelRequestParameters& params,
                                                  const StreamHandler& on_event,
                                                  const core::CancelToken* cancel) {
  internal::ProviderCall call =
      prepare(options_, settings, core::dump_json(build_request_body(messages, settings, params)),
              true, cancel);
  const std::string what = call.context.what;
  std::optional<StreamAssembler> assembler;
  ModelResponse response;
  std::optional<ChunkReader> reader;
  std::optional<core::Error> stream_error;
  int part_counter = 0;
  std::string text_key;  // key of the text part being extended, "" when the last part was not text
  std::string thought_key;  // same for thoughts

  auto reset = [&]() {
    assembler.emplace(on_event);
    response = ModelResponse{};
    reader.emplace(ChunkReader{options_, what, response, ""});
    stream_error.reset();
    part_counter = 0;
    text_key.clear();
    thought_key.clear();
  };
  call.context.may_retry = [&]() { return !assembler || !assembler->emitted(); };

  auto on_sse = [&](const core::SseEvent& event) -> bool {
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
    if (auto error = reader->read_metadata(j)) {
      stream_error = *error;
      return false;
    }
    const Json* parts = first_candidate_parts(j);
    if (parts == nullptr) return !assembler->stopped();
    for (const auto& part : *parts) {
      if (!part.is_object()) continue;
      std::string signature = core::json_string(part, "thoughtSignature");
      if (auto fc = part.find("functionCall"); fc != part.end() && fc->is_object()) {
        text_key.clear();
        thought_key.clear();
        std::string id = core::json_string(*fc, "id");
        if (id.empty()) id = internal::generate_tool_call_id();
        Json args = fc->value("args", Json::object());
        Json details = signature.empty() ? Json() : Json{{"thought_signature", signature}};
        assembler->tool_call_delta("call:" + std::to_string(part_counter++),
                                   core::json_string(*fc, "name"), core::dump_json(args), id,
                                   details);
      } else if (part.contains("text")) {
        std::string text = core::json_string(part, "text");
        if (core::json_bool(part, "thought")) {
          text_key.clear();
          if (thought_key.empty()) thought_key = "thought:" + std::to_string(part_counter++);
          assembler->thinking_delta(thought_key, text, signature, options_.provider_name);
        } else {
          thought_key.clear();
          if (text_key.empty()) text_key = "text:" + std::to_string(part_counter++);
          assembler->text_delta(text_key, text);
        }
      }
    }
    return !assembler->stopped();
  };

  auto http =
      internal::send_sse_with_retry(*options_.transport, call.make, call.context, reset, on_sse);
  CODEACT_TRY_STATUS(
      internal::stream_status(http, stream_error, assembler && assembler->stopped(), what));
  if (reader->raw_reason.empty()) {
    return core::unavailable(what +
                             ": the response stream ended before the response was complete "
                             "(no finishReason); the connection was probably cut");
  }
  finish_metadata(response, options_, reader->raw_reason);
  assembler->finish(response);
  return response;
}

}  // namespace codeact::llm
