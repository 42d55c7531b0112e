// The message model shared by every provider, the agent loop, the HTTP API and the UI stream.
//
// After pydantic-ai's `messages.py`: a conversation is a list of ModelMessage, each either a
// ModelRequest (what codeact sends: system prompt, user prompt, tool returns, retry prompts) or a
// ModelResponse (what the model answered: text, tool calls, thinking, plus usage and metadata).
// Parts are plain value types held in std::variant; providers translate them to and from their
// own wire formats, nothing else in codeact knows those formats.
//
// JSON: every type has one JSON shape, tagged with "kind" ("request" / "response") on messages,
// "part_kind" on parts ("system-prompt", "user-prompt", "tool-return", "retry-prompt", "text",
// "tool-call", "thinking"), "event_kind" on stream events and "part_delta_kind" on deltas.
// to_json/from_json round-trip without loss (from_json(to_json(x)) == x). Unknown fields are
// ignored on input so the shape can grow additively.
//
// All types are values: copyable, comparable, thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::llm {

using core::Json;

// Current UTC time as RFC 3339 with milliseconds ("2026-11-29T18:20:00.123Z"): the same as
// core::now_rfc3339(), which new code calls.
std::string now_timestamp();

// ---------------------------------------------------------------------------------------------
// Request parts (codeact -> model)

// Instructions for the model. Several may appear; providers join them in order.
struct SystemPromptPart {
  std::string content;
  std::string timestamp;  // RFC 3339; "" when unknown
  bool operator==(const SystemPromptPart&) const = default;
};

// What the user asked.
struct UserPromptPart {
  std::string content;
  std::string timestamp;
  bool operator==(const UserPromptPart&) const = default;
};

// The result of running a tool the model called. `content` is any JSON value; a string is sent
// to the model as-is, anything else as its JSON text.
struct ToolReturnPart {
  std::string tool_name;
  Json content;
  std::string tool_call_id;
  std::string timestamp;
  // For the application, never sent to a provider (pydantic-ai's `metadata`): e.g. the typed
  // result of a tool whose model-facing content is text. Null = none (then not serialized).
  Json metadata;
  bool operator==(const ToolReturnPart&) const = default;

  // The content as the text sent to a provider that only accepts strings.
  std::string content_text() const;
};

// Asks the model to try again: a tool's arguments failed validation, the tool raised a retry,
// or the model answered text when structured output was required (then tool_name is empty).
// When tool_call_id is set, providers send it as the result of that tool call.
struct RetryPromptPart {
  std::string content;       // what was wrong, e.g. validation errors
  std::string tool_name;     // "" when not about a tool call
  std::string tool_call_id;  // "" when not about a tool call
  std::string timestamp;
  bool operator==(const RetryPromptPart&) const = default;

  // The text the model sees: content followed by "\n\nFix the errors and try again."
  std::string model_response() const;
};

using ModelRequestPart =
    std::variant<SystemPromptPart, UserPromptPart, ToolReturnPart, RetryPromptPart>;

// ---------------------------------------------------------------------------------------------
// Response parts (model -> codeact)

struct TextPart {
  std::string content;
  bool operator==(const TextPart&) const = default;
};

// A tool call. `args` is the arguments as a JSON object. When the model sent arguments that do
// not parse as a JSON object, `args` is an empty object and `args_raw` holds the exact text the
// model sent (so the agent can send a retry prompt quoting it); otherwise `args_raw` is "".
struct ToolCallPart {
  std::string tool_name;
  Json args = Json::object();
  std::string tool_call_id;
  std::string args_raw;
  // Provider-specific data that must be echoed back with this part in later requests (e.g.
  // Gemini's "thoughtSignature"). null when none.
  Json provider_details;
  bool operator==(const ToolCallPart&) const = default;

  bool args_valid() const { return args_raw.empty(); }
  // The arguments as a JSON object, or InvalidArgument quoting args_raw and the parse error.
  core::Result<Json> args_object() const;
  // Builds a part from argument text as a provider streamed it: "" means {}, a JSON object is
  // parsed into args, anything else is kept in args_raw.
  static ToolCallPart from_args_text(std::string tool_name, std::string_view args_text,
                                     std::string tool_call_id);
};

// Reasoning the model exposed (Anthropic thinking blocks, Gemini thoughts). `signature` must be
// sent back unchanged to the provider that produced it.
struct ThinkingPart {
  std::string content;
  std::string signature;
  std::string provider_name;  // which provider produced `signature`
  bool operator==(const ThinkingPart&) const = default;
};

using ModelResponsePart = std::variant<TextPart, ToolCallPart, ThinkingPart>;

// ---------------------------------------------------------------------------------------------
// Messages

// Token counts of one request (or, summed with +=, of a run).
struct Usage {
  int64_t requests = 0;  // model requests counted in this value (1 for a single response)
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  int64_t cache_read_tokens = 0;
  int64_t cache_write_tokens = 0;
  Json details = Json::object();  // provider-specific counters (reasoning_tokens, ...), summed
  bool operator==(const Usage&) const = default;

  int64_t total_tokens() const { return input_tokens + output_tokens; }
  Usage& operator+=(const Usage& other);
};

// Why the model stopped, normalized over providers (empty when the provider did not say).
namespace finish_reason {
inline constexpr std::string_view kStop = "stop";
inline constexpr std::string_view kLength = "length";
inline constexpr std::string_view kContentFilter = "content_filter";
inline constexpr std::string_view kToolCall = "tool_call";
inline constexpr std::string_view kError = "error";
}  // namespace finish_reason

struct ModelRequest {
  std::vector<ModelRequestPart> parts;
  // Instructions for this request only (not repeated from history); sent like a system prompt.
  std::string instructions;
  bool operator==(const ModelRequest&) const = default;

  static ModelRequest user_prompt(std::string content);
};

struct ModelResponse {
  std::vector<ModelResponsePart> parts;
  Usage usage;
  std::string model_name;
  std::string timestamp;
  std::string provider_name;         // "openai", "google-gla", "anthropic", "function", "test", ...
  std::string provider_response_id;  // the provider's id for this response, "" if none
  std::string finish_reason;         // one of finish_reason::k*, or ""
  Json provider_details;  // raw provider data worth keeping (e.g. {"finish_reason": "STOP"}), or
                          // null
  bool operator==(const ModelResponse&) const = default;

  // Concatenation of all TextPart contents ("" when none).
  std::string text() const;
  std::vector<ToolCallPart> tool_calls() const;
};

using ModelMessage = std::variant<ModelRequest, ModelResponse>;

// ---------------------------------------------------------------------------------------------
// JSON. to_json never fails; from_json gives InvalidArgument naming the offending path
// (e.g. "messages[3].parts[0]: unknown part_kind \"foo\"").

Json to_json(const ModelRequestPart& part);
Json to_json(const ModelResponsePart& part);
Json to_json(const Usage& usage);
Json to_json(const ModelRequest& message);
Json to_json(const ModelResponse& message);
Json to_json(const ModelMessage& message);
Json to_json(const std::vector<ModelMessage>& messages);

core::Result<ModelRequestPart> request_part_from_json(const Json& j);
core::Result<ModelResponsePart> response_part_from_json(const Json& j);
core::Result<Usage> usage_from_json(const Json& j);
core::Result<ModelRequest> request_from_json(const Json& j);
core::Result<ModelResponse> response_from_json(const Json& j);
core::Result<ModelMessage> message_from_json(const Json& j);
core::Result<std::vector<ModelMessage>> messages_from_json(const Json& j);

}  // namespace codeact::llm
