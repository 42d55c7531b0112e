// What the HTTP providers share: sending with retries, reading each provider's error body,
// mapping HTTP status to error codes, and the request/stream plumbing around SSE.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "codeact/core/http_client.hpp"
#include "codeact/core/sse.hpp"
#include "codeact/llm/model.hpp"
#include "codeact/llm/provider_options.hpp"

namespace codeact::llm::internal {

// The wait a Retry-After (or retry-after-ms) header asks for; nullopt when absent or unreadable.
// Accepts delta-seconds ("12", "1.5") and HTTP dates ("Wed, 21 Oct 2015 07:28:00 GMT").
std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now);
// The wait `response` asks for: retry-after-ms, else Retry-After read against `now`.
std::optional<std::chrono::milliseconds> retry_after_of(const core::HttpResponse& response,
                                                        std::chrono::system_clock::time_point now);

// The human-readable message in a provider error body: {"error": {"message": ...}} (OpenAI,
// Gemini, Anthropic, llama.cpp), [{"error": ...}] (Gemini), {"error": "..."} (Ollama),
// {"message": ...} / {"detail": ...} (vLLM, proxies), with the error type/status prefixed when
// given. Falls back to the (truncated) body text.
std::string provider_error_message(std::string_view body);

// The error of an {"error": ...} member inside a 2xx body or stream chunk (OpenAI-compatible
// servers and Gemini report failures this way); nullopt when there is none. Its code comes from
// the error's numeric "code" when that is an HTTP status (core::code_from_http_status),
// Unavailable otherwise.
std::optional<core::Error> inline_error(const Json& j, const std::string& what);

// Removes every occurrence of `secret` (when non-empty) from `text`.
std::string redact(std::string text, std::string_view secret);

struct SendContext {
  std::string what;    // "openai model \"gpt-4.1\"": starts every error message
  std::string secret;  // the API key: never appears in an error message
  RetryPolicy retry;
  const core::CancelToken* cancel = nullptr;
  core::Clock* clock = nullptr;  // null = core::real_clock(); not owned
  // For streams: false once an event has reached the caller (then no retry).
  std::function<bool()> may_retry;
};

// The context every provider request starts from: "<provider> model \"<name>\"" as the error
// prefix, the API key to redact, the retry policy, the clock (options.clock, which must outlive
// the context).
SendContext send_context(const ProviderOptions& options, const core::CancelToken* cancel);

// Fills what every provider's response carries: model name (if the body had none), one request,
// timestamp, provider name, the mapped finish reason and the raw one in provider_details.
void finish_metadata(ModelResponse& response, const ProviderOptions& options,
                     std::string finish_reason, const std::string& raw_reason);

// One provider request, ready to send: make() builds the request of each attempt, `context`
// is what send_with_retry / send_sse_with_retry need.
struct ProviderCall {
  std::function<core::HttpRequest()> make;
  SendContext context;
};

// A JSON POST of `body` to `url`, the way every provider sends one: Content-Type
// application/json, then `headers` (the provider's own: its key header, API version, Accept),
// then options.extra_headers, then the extra headers of `settings` merged over
// options.default_settings; per-attempt timeout from those settings or options.request_timeout;
// errors prefixed and the key redacted as send_context() says.
ProviderCall prepare_call(const ProviderOptions& options, const ModelSettings& settings,
                          std::string url, core::Headers headers, std::string body,
                          const core::CancelToken* cancel);

// Sends the request returned by make_request() (called again for each attempt, so a stream's
// state can be reset) until it gets a 2xx response, a non-retryable outcome, or the retry policy
// is exhausted. A non-2xx response becomes an Error (code from the status, message from the
// provider's error body, Retry-After noted). Waits and the policy's max_total are measured on
// context.clock: the first attempt starts the count, and time spent in requests counts. For a
// streamed request the first 64 KiB of the body
// are kept for that purpose.
core::Result<core::HttpResponse> send_with_retry(
    core::HttpTransport& transport, const std::function<core::HttpRequest()>& make_request,
    const SendContext& context);

// A non-streamed provider request: send_with_retry, then the 2xx body parsed as JSON
// (parse_response_body).
core::Result<Json> request_json(core::HttpTransport& transport, const ProviderCall& call);

// The data of one stream event as a JSON object; DataLoss quoting its start otherwise.
core::Result<Json> stream_json(const core::SseEvent& event, const std::string& what);

// How a streamed request ended, checked in this order: the error a stream event reported, the
// consumer's stop (Cancelled), the HTTP outcome. OK when the stream ran to its end; the provider
// then checks that the response was complete.
core::Status stream_status(const core::Result<core::HttpResponse>& http,
                           const std::optional<core::Error>& stream_error, bool consumer_stopped,
                           const std::string& what);

// Parses a 2xx response body; DataLoss quoting its start when it is not JSON.
core::Result<Json> parse_response_body(std::string_view body, const std::string& what);

// Per-attempt timeout from settings or the provider default.
std::chrono::milliseconds request_timeout(const ModelSettings& settings,
                                          std::chrono::milliseconds fallback);

// "https://x/v1" + "/chat/completions" without doubled or missing slashes.
std::string join_url(std::string_view base, std::string_view path);

// The instruction added to the system prompt for OutputMode::kPrompted (pydantic-ai's wording).
std::string prompted_output_instructions(const OutputObjectDefinition& output);

// System prompts in order, then the instructions of the last request that has any: the text a
// provider with a single system field sends.
std::vector<std::string> system_texts(const std::vector<ModelMessage>& messages,
                                      const ModelRequestParameters& params);

// A fresh id for a tool call whose provider gave none ("call_" + 24 hex digits).
std::string generate_tool_call_id();

// Accumulates a streamed response and emits PartStart/PartDelta events as pieces arrive,
// then PartEnd for every part and the FinalResponseEvent in finish(). Parts are keyed by the
// provider's own identifier (Anthropic's block index, OpenAI's tool call index, ...).
class StreamAssembler {
 public:
  explicit StreamAssembler(const StreamHandler& handler) : handler_(handler) {}

  void text_delta(const std::string& key, std::string_view delta);
  void thinking_delta(const std::string& key, std::string_view content, std::string_view signature,
                      std::string_view provider_name);
  // Starts a tool call part (if `key` is new) and appends what is given.
  void tool_call_delta(const std::string& key, std::string_view name_delta,
                       std::string_view args_delta, std::string_view tool_call_id,
                       const Json& provider_details = nullptr);
  bool has_part(const std::string& key) const;
  // Forget `key` so the next delta under it starts a new part.
  void close_key(const std::string& key);

  // Builds response.parts, emits PartEnd events and the FinalResponseEvent.
  void finish(ModelResponse& response);

  bool emitted() const { return emitted_; }
  // The handler returned false.
  bool stopped() const { return stopped_; }

 private:
  struct Part {
    enum Kind { kText, kThinking, kToolCall } kind;
    std::string content;  // text, thinking, or args text
    std::string signature;
    std::string provider_name;
    std::string tool_name;
    std::string tool_call_id;
    Json provider_details;
  };
  int index_for(const std::string& key, Part::Kind kind, bool& created);
  void emit(const ModelStreamEvent& event);
  ModelResponsePart to_part(const Part& part) const;

  const StreamHandler& handler_;
  std::vector<Part> parts_;
  std::vector<std::pair<std::string, int>> keys_;
  bool emitted_ = false;
  bool stopped_ = false;
};

// Drives one streamed provider request: feeds body bytes through an SSE parser to `on_event`,
// stops on cancel or when the handler asked to stop. Returns the HTTP result like
// send_with_retry; `reset` is called before every attempt. When `non_sse_body` is given and a
// 2xx body held no SSE event at all, it receives that body (up to 4 MiB): some compatible
// servers answer a streamed request with one plain JSON document.
core::Result<core::HttpResponse> send_sse_with_retry(
    core::HttpTransport& transport, const std::function<core::HttpRequest()>& make_request,
    const SendContext& context, const std::function<void()>& reset,
    const std::function<bool(const core::SseEvent&)>& on_event,
    std::string* non_sse_body = nullptr);

}  // namespace codeact::llm::internal
