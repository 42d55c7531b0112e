// Model: the seam between codeact and an LLM.
//
// A Model turns a conversation (messages) plus request parameters (tools, output mode) and
// settings (max tokens, temperature, timeout, ...) into one ModelResponse, either at once
// (request) or as a stream of events ending with the complete response (request_stream).
// Providers (OpenAI-compatible, Gemini, Anthropic), FunctionModel and TestModel implement it;
// wrappers (WrapperModel) add one behaviour each. (The durable layer does not wrap a Model: its
// durable::DurableModel is an agent::AsyncModel that sends each request to a worker, where the
// agent's own Model answers it.)
//
// Everything passed in and out is JSON round-trippable (to_json / *_from_json below and in
// messages.hpp), so a wrapper can ship a request to another process and bring the response back.
//
// Thread-safety: implementations are thread-safe; several requests may run at once on one Model.
// Errors: Unauthenticated (401), PermissionDenied (403), InvalidArgument (400, bad input),
// ResourceExhausted (429 after retries), Unavailable (5xx / connection after retries, or a
// stream cut mid-way), DeadlineExceeded (timeout), Cancelled (cancel token, or the stream
// handler returned false), DataLoss (unreadable response). Messages carry the provider's own
// error text and never an API key.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "codeact/core/cancel.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/llm/messages.hpp"

namespace codeact::llm {

// ---------------------------------------------------------------------------------------------
// Request parameters

// A tool the model may call.
struct ToolDefinition {
  std::string name;
  std::string description;
  Json parameters_json_schema = Json{{"type", "object"}, {"properties", Json::object()}};
  // Ask the provider to enforce the schema exactly (OpenAI "strict"); nullopt = provider default.
  std::optional<bool> strict;
  // "function" for tools the agent runs, "output" for tools whose call is the final result.
  std::string kind = "function";
  bool operator==(const ToolDefinition&) const = default;
};

// How structured output is obtained from the model.
enum class OutputMode {
  kText,      // plain text answer (default)
  kTool,      // the answer is a call of one of `output_tools`
  kNative,    // provider-enforced JSON schema (OpenAI response_format, Gemini responseSchema)
  kPrompted,  // schema described in the instructions; the answer is JSON text
};
std::string_view output_mode_name(OutputMode mode);  // "text", "tool", "native", "prompted"
core::Result<OutputMode> output_mode_from_name(std::string_view name);

// The schema of structured output for kNative / kPrompted.
struct OutputObjectDefinition {
  std::string name = "final_result";
  std::string description;
  Json json_schema = Json::object();
  std::optional<bool> strict;
  bool operator==(const OutputObjectDefinition&) const = default;
};

struct ModelRequestParameters {
  std::vector<ToolDefinition> function_tools;
  OutputMode output_mode = OutputMode::kText;
  std::optional<OutputObjectDefinition> output_object;  // for kNative / kPrompted
  std::vector<ToolDefinition> output_tools;             // for kTool
  // When false the model must call a tool (tool_choice "required" / "any").
  bool allow_text_output = true;
  bool operator==(const ModelRequestParameters&) const = default;

  // function_tools followed by output_tools.
  std::vector<ToolDefinition> all_tools() const;
};

// Per-request knobs; unset fields take the provider's default. Not every provider supports every
// field; unsupported ones are ignored.
struct ModelSettings {
  std::optional<int64_t> max_tokens;  // Anthropic requires one: default 4096 there
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<double> timeout_seconds;  // whole request, per attempt
  std::optional<bool> parallel_tool_calls;
  std::optional<int64_t> seed;
  std::optional<double> presence_penalty;
  std::optional<double> frequency_penalty;
  std::vector<std::string> stop_sequences;
  std::vector<std::pair<std::string, std::string>> extra_headers;
  // Merged (JSON merge-patch) into the provider's request body last: an escape hatch.
  Json extra_body;
  bool operator==(const ModelSettings&) const = default;

  // A copy where every field set in `overrides` replaces this one's.
  ModelSettings merged(const ModelSettings& overrides) const;
};

// ---------------------------------------------------------------------------------------------
// Streaming events (after pydantic-ai's PartStartEvent / PartDeltaEvent)

// A new part begins at `index` of the response's parts. For a tool call, `part` holds the name
// and id known so far and args {} (arguments arrive as deltas).
struct PartStartEvent {
  int index = 0;
  ModelResponsePart part;
  bool operator==(const PartStartEvent&) const = default;
};

struct TextPartDelta {
  std::string content_delta;
  bool operator==(const TextPartDelta&) const = default;
};
// Arguments arrive as JSON text fragments that only parse once concatenated.
struct ToolCallPartDelta {
  std::string tool_name_delta;
  std::string args_delta;
  std::string tool_call_id;  // set when first known
  bool operator==(const ToolCallPartDelta&) const = default;
};
struct ThinkingPartDelta {
  std::string content_delta;
  std::string signature_delta;
  bool operator==(const ThinkingPartDelta&) const = default;
};
using ModelResponsePartDelta = std::variant<TextPartDelta, ToolCallPartDelta, ThinkingPartDelta>;

struct PartDeltaEvent {
  int index = 0;
  ModelResponsePartDelta delta;
  bool operator==(const PartDeltaEvent&) const = default;
};

// The part at `index` is complete (a tool call's args are parsed here).
struct PartEndEvent {
  int index = 0;
  ModelResponsePart part;
  bool operator==(const PartEndEvent&) const = default;
};

// Last event of a successful stream: the same response request_stream returns.
struct FinalResponseEvent {
  ModelResponse response;
  bool operator==(const FinalResponseEvent&) const = default;
};

using ModelStreamEvent =
    std::variant<PartStartEvent, PartDeltaEvent, PartEndEvent, FinalResponseEvent>;

// Receives events in order on the calling thread. Return false to stop the stream early
// (request_stream then returns Cancelled).
using StreamHandler = std::function<bool(const ModelStreamEvent&)>;

// ---------------------------------------------------------------------------------------------
// The interface

class Model {
 public:
  virtual ~Model() = default;

  // Sends one request and returns the complete response.
  // REQUIRES: messages is not empty and ends with a ModelRequest.
  virtual core::Result<ModelResponse> request(const std::vector<ModelMessage>& messages,
                                              const ModelSettings& settings,
                                              const ModelRequestParameters& params,
                                              const core::CancelToken* cancel = nullptr) = 0;

  // Like request(), streaming: `on_event` gets PartStart/PartDelta/PartEnd events as the
  // provider sends them, then one FinalResponseEvent; the same response is returned.
  // Default: calls request() and replays its parts as events.
  virtual core::Result<ModelResponse> request_stream(const std::vector<ModelMessage>& messages,
                                                     const ModelSettings& settings,
                                                     const ModelRequestParameters& params,
                                                     const StreamHandler& on_event,
                                                     const core::CancelToken* cancel = nullptr);

  // The model as the provider names it ("gpt-4.1", "gemini-2.5-pro").
  virtual std::string model_name() const = 0;
  // The provider ("openai", "google-gla", "anthropic", "ollama", "openai-compatible",
  // "function", "test").
  virtual std::string system() const = 0;
  // Settings applied under the per-request ones (request settings win). Default: none.
  virtual ModelSettings default_settings() const { return {}; }
};

// Emits the events a stream of `response` would have produced (start, one delta per part, end,
// final). Used by the default request_stream and by FunctionModel/TestModel. Returns false if
// the handler asked to stop.
bool replay_as_stream(const ModelResponse& response, const StreamHandler& on_event);

// Forwards everything to `wrapped`; subclass and override what you change.
class WrapperModel : public Model {
 public:
  explicit WrapperModel(std::shared_ptr<Model> wrapped) : wrapped_(std::move(wrapped)) {}

  core::Result<ModelResponse> request(const std::vector<ModelMessage>& messages,
                                      const ModelSettings& settings,
                                      const ModelRequestParameters& params,
                                      const core::CancelToken* cancel = nullptr) override {
    return wrapped_->request(messages, settings, params, cancel);
  }
  core::Result<ModelResponse> request_stream(const std::vector<ModelMessage>& messages,
                                             const ModelSettings& settings,
                                             const ModelRequestParameters& params,
                                             const StreamHandler& on_event,
                                             const core::CancelToken* cancel = nullptr) override {
    return wrapped_->request_stream(messages, settings, params, on_event, cancel);
  }
  std::string model_name() const override { return wrapped_->model_name(); }
  std::string system() const override { return wrapped_->system(); }
  ModelSettings default_settings() const override { return wrapped_->default_settings(); }

  const std::shared_ptr<Model>& wrapped() const { return wrapped_; }

 private:
  std::shared_ptr<Model> wrapped_;
};

// ---------------------------------------------------------------------------------------------
// JSON for everything a wrapper ships across a process boundary.

Json to_json(const ToolDefinition& tool);
Json to_json(const OutputObjectDefinition& output);
Json to_json(const ModelRequestParameters& params);
Json to_json(const ModelSettings& settings);
Json to_json(const ModelResponsePartDelta& delta);
Json to_json(
    const ModelStreamEvent&
        event);  // {"event_kind": "part_start"|"part_delta"|"part_end"|"final_response", ...}

core::Result<ToolDefinition> tool_definition_from_json(const Json& j);
core::Result<OutputObjectDefinition> output_object_from_json(const Json& j);
core::Result<ModelRequestParameters> request_parameters_from_json(const Json& j);
core::Result<ModelSettings> settings_from_json(const Json& j);
core::Result<ModelResponsePartDelta> part_delta_from_json(const Json& j);
core::Result<ModelStreamEvent> stream_event_from_json(const Json& j);

}  // namespace codeact::llm
