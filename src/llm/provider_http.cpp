#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <random>

#include "codeact/core/log.hpp"
#include "codeact/core/strings.hpp"
#include "codeact/core/time.hpp"
#include "provider_http_internal.hpp"

namespace codeact::llm::internal {

using core::Code;
using core::HttpRequest;
using core::HttpResponse;
using core::Result;
using std::chrono::milliseconds;

namespace {

constexpr size_t kErrorBodyLimit = 64 * 1024;

std::string message_from_error_object(const Json& error) {
  if (error.is_string()) return error.get<std::string>();
  if (!error.is_object()) return "";
  std::string message = core::json_string(error, "message");
  std::string type = core::json_string(error, "type");
  if (type.empty()) type = core::json_string(error, "status");  // Gemini: "INVALID_ARGUMENT"
  if (type.empty()) type = core::json_string(error, "code");    // OpenAI: "invalid_api_key"
  if (message.empty()) return "";
  return type.empty() ? message : type + ": " + message;
}

// "30s", "1.5s", "0.25s".
std::string format_seconds(milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + "s";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fs", static_cast<double>(d.count()) / 1000.0);
  std::string out = buf;
  while (out.size() > 3 && out[out.size() - 2] == '0')
    out.erase(out.size() - 2, 1);  // "1.50s" -> "1.5s"
  return out;
}

}  // namespace

std::optional<milliseconds> parse_retry_after(std::string_view value,
                                              std::chrono::system_clock::time_point now) {
  std::string v = core::trim(value);
  if (v.empty()) return std::nullopt;
  if (std::isdigit(static_cast<unsigned char>(v[0]))) {
    char* end = nullptr;
    double seconds = std::strtod(v.c_str(), &end);
    if (end == nullptr || *end != '\0' || !std::isfinite(seconds) || seconds < 0)
      return std::nullopt;
    return milliseconds(static_cast<int64_t>(seconds * 1000));
  }
  // HTTP-date (IMF-fixdate): "Wed, 21 Oct 2015 07:28:00 GMT".
  std::tm tm{};
  const char* end = strptime(v.c_str(), "%a, %d %b %Y %H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  std::time_t when = timegm(&tm);
  if (when == static_cast<std::time_t>(-1)) return std::nullopt;
  auto target = std::chrono::system_clock::from_time_t(when);
  if (target <= now) return milliseconds(0);
  return std::chrono::duration_cast<milliseconds>(target - now);
}

std::optional<milliseconds> retry_after_of(const HttpResponse& response,
                                           std::chrono::system_clock::time_point now) {
  std::string ms = response.header("retry-after-ms");
  if (!ms.empty()) {
    char* end = nullptr;
    double value = std::strtod(ms.c_str(), &end);
    if (end != nullptr && *end == '\0' && std::isfinite(value) && value >= 0) {
      return milliseconds(static_cast<int64_t>(value));
    }
  }
  return parse_retry_after(response.header("retry-after"), now);
}

std::string provider_error_message(std::string_view body) {
  auto parsed = core::parse_json(body, "error body");
  if (parsed.ok()) {
    Json j = std::move(parsed).value();
    if (j.is_array() && !j.empty()) j = j[0];  // Gemini streams errors as [{"error": ...}]
    if (j.is_object()) {
      if (auto it = j.find("error"); it != j.end()) {
        std::string m = message_from_error_object(*it);
        if (!m.empty()) return m;
      }
      std::string m = core::json_string(j, "message");
      if (!m.empty()) return m;
      if (auto it = j.find("detail"); it != j.end()) {
        return it->is_string() ? it->get<std::string>() : core::dump_json(*it);
      }
    }
  }
  std::string text = core::abbreviate(core::trim(body), 500);
  return text.empty() ? "(empty response body)" : text;
}

std::optional<core::Error> inline_error(const Json& j, const std::string& what) {
  auto it = j.find("error");
  if (it == j.end() || it->is_null()) return std::nullopt;
  Code code = Code::kUnavailable;
  if (it->is_object()) {
    auto c = it->find("code");
    if (c != it->end() && c->is_number_integer() && c->get<int>() >= 400)
      code = core::code_from_http_status(c->get<int>());
  }
  return core::Error(code, what + ": " + provider_error_message(core::dump_json(j)));
}

std::string redact(std::string text, std::string_view secret) {
  if (secret.empty()) return text;
  size_t pos = 0;
  while ((pos = text.find(secret, pos)) != std::string::npos) {
    text.replace(pos, secret.size(), "***");
    pos += 3;
  }
  return text;
}

Result<Json> request_json(core::HttpTransport& transport, const ProviderCall& call) {
  CODEACT_TRY(auto http, send_with_retry(transport, call.make, call.context));
  return parse_response_body(http.body, call.context.what);
}

Result<Json> stream_json(const core::SseEvent& event, const std::string& what) {
  auto j = core::parse_json(event.data, "stream event");
  if (!j.ok() || !j->is_object())
    return core::data_loss(what + ": unreadable stream event: " + event.data.substr(0, 200));
  return std::move(j).value();
}

core::Status stream_status(const Result<HttpResponse>& http,
                           const std::optional<core::Error>& stream_error, bool consumer_stopped,
                           const std::string& what) {
  if (stream_error) return *stream_error;
  if (consumer_stopped) return core::cancelled(what + ": stream stopped by its consumer");
  if (!http.ok()) return http.error();
  return core::ok_status();
}

Result<Json> parse_response_body(std::string_view body, const std::string& what) {
  auto j = core::parse_json(body, "the response body");
  if (!j.ok()) {
    if (core::json_nests_deeper_than(body))
      return core::data_loss(what + ": " + j.error().message());
    std::string start(body.substr(0, 200));
    return core::data_loss(what + ": the response body is not JSON (" +
                           std::to_string(body.size()) + " bytes): " + start);
  }
  return std::move(j).value();
}

milliseconds request_timeout(const ModelSettings& settings, milliseconds fallback) {
  if (settings.timeout_seconds && *settings.timeout_seconds > 0) {
    return milliseconds(static_cast<int64_t>(*settings.timeout_seconds * 1000));
  }
  return fallback;
}

std::string join_url(std::string_view base, std::string_view path) {
  std::string out(base);
  while (!out.empty() && out.back() == '/') out.pop_back();
  if (!path.empty() && path.front() != '/') out.push_back('/');
  out.append(path);
  return out;
}

ProviderCall prepare_call(const ProviderOptions& options, const ModelSettings& settings,
                          std::string url, core::Headers headers, std::string body,
                          const core::CancelToken* cancel) {
  ProviderCall call;
  call.context = send_context(options, cancel);
  ModelSettings merged = options.default_settings.merged(settings);
  headers.insert(headers.begin(), {"Content-Type", "application/json"});
  for (const auto& h : options.extra_headers) headers.push_back(h);
  for (const auto& h : merged.extra_headers) headers.push_back(h);
  call.make = [url = std::move(url), headers = std::move(headers), body = std::move(body),
               timeout = request_timeout(merged, options.request_timeout)]() {
    HttpRequest request;
    request.method = "POST";
    request.url = url;
    request.headers = headers;
    request.body = body;
    request.timeout = timeout;
    return request;
  };
  return call;
}

Result<HttpResponse> send_with_retry(core::HttpTransport& transport,
                                     const std::function<HttpRequest()>& make_request,
                                     const SendContext& ctx) {
  core::Clock& clock = core::clock_or_real(ctx.clock);
  const auto start = clock.steady_now();
  const RetryPolicy& policy = ctx.retry;
  milliseconds backoff = policy.initial_backoff;
  for (int attempt = 1;; ++attempt) {
    if (ctx.cancel != nullptr && ctx.cancel->cancelled()) {
      return core::cancelled(ctx.what + ": request cancelled");
    }
    HttpRequest request = make_request();
    request.cancel = ctx.cancel;
    std::string captured;  // a streamed error body
    if (request.on_body) {
      auto inner = std::move(request.on_body);
      request.on_body = [&captured, inner = std::move(inner)](std::string_view chunk) {
        if (captured.size() < kErrorBodyLimit)
          captured.append(chunk.substr(0, kErrorBodyLimit - captured.size()));
        return inner(chunk);
      };
    }
    auto result = transport.send(request);

    std::optional<core::Error> error;
    std::optional<milliseconds> retry_after;
    if (!result.ok()) {
      const core::Error& e = result.error();
      if (e.code() == Code::kCancelled) return core::cancelled(ctx.what + ": request cancelled");
      std::string message = redact(e.message(), ctx.secret);
      if (e.code() == Code::kDeadlineExceeded) {
        return core::deadline_exceeded(
            ctx.what + ": no complete response within " + format_seconds(request.timeout) +
            " (raise ModelSettings::timeout_seconds if the model needs longer; " + message + ")");
      }
      error = core::Error(e.code(), ctx.what + ": " + message);
    } else if (result->status >= 200 && result->status < 300) {
      return result;
    } else {
      const HttpResponse& response = *result;
      std::string body = request.on_body ? captured : response.body;
      retry_after = retry_after_of(response, clock.system_now());
      std::string message = ctx.what + ": HTTP " + std::to_string(response.status) + ": " +
                            redact(provider_error_message(body), ctx.secret);
      if (retry_after) message += " (retry after " + format_seconds(*retry_after) + ")";
      error = core::Error(core::code_from_http_status(response.status), message);
    }

    const bool retryable =
        error->code() == Code::kUnavailable || error->code() == Code::kResourceExhausted;
    if (!retryable || attempt >= policy.max_attempts || (ctx.may_retry && !ctx.may_retry())) {
      if (retryable && attempt > 1)
        return error->with_context("after " + std::to_string(attempt) + " attempts");
      return *error;
    }
    milliseconds wait = std::min(backoff, policy.max_backoff);
    if (retry_after) {
      if (*retry_after > policy.max_retry_after) return *error;
      wait = std::max(wait, *retry_after);
    }
    auto elapsed = std::chrono::duration_cast<milliseconds>(clock.steady_now() - start);
    if (elapsed + wait > policy.max_total) {
      return error->with_context("after " + std::to_string(attempt) + " attempts");
    }
    core::log().info("{} (attempt {}/{}); retrying in {} ms", error->message(), attempt,
                     policy.max_attempts, wait.count());
    if (!clock.sleep_for(wait, ctx.cancel))
      return core::cancelled(ctx.what + ": request cancelled");
    backoff = milliseconds(
        static_cast<int64_t>(static_cast<double>(backoff.count()) * policy.backoff_multiplier));
  }
}

Result<HttpResponse> send_sse_with_retry(core::HttpTransport& transport,
                                         const std::function<HttpRequest()>& make_request,
                                         const SendContext& context,
                                         const std::function<void()>& reset,
                                         const std::function<bool(const core::SseEvent&)>& on_event,
                                         std::string* non_sse_body) {
  constexpr size_t kNonSseLimit = 4 * 1024 * 1024;
  core::SseParser parser;
  bool aborted = false;
  bool saw_event = false;
  std::string raw;
  auto make = [&]() {
    parser.reset();
    aborted = false;
    saw_event = false;
    raw.clear();
    reset();
    HttpRequest request = make_request();
    request.on_body = [&](std::string_view chunk) {
      if (aborted) return false;
      if (non_sse_body != nullptr && !saw_event && raw.size() < kNonSseLimit) {
        raw.append(chunk.substr(0, kNonSseLimit - raw.size()));
      }
      parser.feed(chunk, [&](core::SseEvent&& event) {
        saw_event = true;
        if (!aborted && !on_event(event)) aborted = true;
      });
      return !aborted;
    };
    return request;
  };
  auto result = send_with_retry(transport, make, context);
  if (non_sse_body != nullptr) *non_sse_body = saw_event ? std::string() : std::move(raw);
  return result;
}

std::string prompted_output_instructions(const OutputObjectDefinition& output) {
  std::string text = "Always respond with a JSON object that's compatible with this schema:\n\n" +
                     core::dump_json(output.json_schema) +
                     "\n\nDon't include any text or Markdown fencing before or after.";
  if (!output.description.empty()) text = output.description + "\n\n" + text;
  return text;
}

std::vector<std::string> system_texts(const std::vector<ModelMessage>& messages,
                                      const ModelRequestParameters& params) {
  std::vector<std::string> out;
  std::string instructions;
  for (const auto& message : messages) {
    if (auto* request = std::get_if<ModelRequest>(&message)) {
      for (const auto& part : request->parts) {
        if (auto* system = std::get_if<SystemPromptPart>(&part)) out.push_back(system->content);
      }
      if (!request->instructions.empty()) instructions = request->instructions;
    }
  }
  if (!instructions.empty()) out.push_back(instructions);
  if (params.output_mode == OutputMode::kPrompted && params.output_object) {
    out.push_back(prompted_output_instructions(*params.output_object));
  }
  return out;
}

std::string generate_tool_call_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id.push_back(kHex[rng() % 16]);
  return id;
}

// ---------------------------------------------------------------------------------------------
// StreamAssembler

int StreamAssembler::index_for(const std::string& key, Part::Kind kind, bool& created) {
  for (const auto& [k, index] : keys_) {
    if (k == key) {
      created = false;
      return index;
    }
  }
  Part part{};
  part.kind = kind;
  parts_.push_back(std::move(part));
  int index = static_cast<int>(parts_.size()) - 1;
  keys_.emplace_back(key, index);
  created = true;
  return index;
}

bool StreamAssembler::has_part(const std::string& key) const {
  return std::any_of(keys_.begin(), keys_.end(), [&](const auto& kv) { return kv.first == key; });
}

void StreamAssembler::close_key(const std::string& key) {
  keys_.erase(
      std::remove_if(keys_.begin(), keys_.end(), [&](const auto& kv) { return kv.first == key; }),
      keys_.end());
}

void StreamAssembler::emit(const ModelStreamEvent& event) {
  if (stopped_) return;
  emitted_ = true;
  if (!handler_(event)) stopped_ = true;
}

void StreamAssembler::text_delta(const std::string& key, std::string_view delta) {
  if (delta.empty()) return;
  bool created = false;
  int index = index_for(key, Part::kText, created);
  parts_[index].content.append(delta);
  if (created) emit(PartStartEvent{index, TextPart{}});
  emit(PartDeltaEvent{index, TextPartDelta{std::string(delta)}});
}

void StreamAssembler::thinking_delta(const std::string& key, std::string_view content,
                                     std::string_view signature, std::string_view provider_name) {
  bool created = false;
  int index = index_for(key, Part::kThinking, created);
  Part& part = parts_[index];
  part.content.append(content);
  part.signature.append(signature);
  if (part.provider_name.empty()) part.provider_name = std::string(provider_name);
  if (created) emit(PartStartEvent{index, ThinkingPart{"", "", std::string(provider_name)}});
  if (!content.empty() || !signature.empty()) {
    emit(PartDeltaEvent{index, ThinkingPartDelta{std::string(content), std::string(signature)}});
  }
}

void StreamAssembler::tool_call_delta(const std::string& key, std::string_view name_delta,
                                      std::string_view args_delta, std::string_view tool_call_id,
                                      const Json& provider_details) {
  bool created = false;
  int index = index_for(key, Part::kToolCall, created);
  Part& part = parts_[index];
  if (created) {
    part.tool_name = std::string(name_delta);
    part.tool_call_id = std::string(tool_call_id);
    part.provider_details = provider_details;
    ToolCallPart start;
    start.tool_name = part.tool_name;
    start.tool_call_id = part.tool_call_id;
    start.provider_details = provider_details;
    emit(PartStartEvent{index, std::move(start)});
    if (!args_delta.empty()) {
      part.content.append(args_delta);
      emit(PartDeltaEvent{index, ToolCallPartDelta{"", std::string(args_delta), ""}});
    }
    return;
  }
  part.tool_name.append(name_delta);
  if (part.tool_call_id.empty()) part.tool_call_id = std::string(tool_call_id);
  if (!provider_details.is_null()) part.provider_details = provider_details;
  part.content.append(args_delta);
  if (!name_delta.empty() || !args_delta.empty()) {
    emit(PartDeltaEvent{index, ToolCallPartDelta{std::string(name_delta), std::string(args_delta),
                                                 std::string(tool_call_id)}});
  }
}

ModelResponsePart StreamAssembler::to_part(const Part& part) const {
  switch (part.kind) {
    case Part::kText:
      return TextPart{part.content};
    case Part::kThinking:
      return ThinkingPart{part.content, part.signature, part.provider_name};
    case Part::kToolCall: {
      ToolCallPart call = ToolCallPart::from_args_text(
          part.tool_name, part.content,
          part.tool_call_id.empty() ? generate_tool_call_id() : part.tool_call_id);
      call.provider_details = part.provider_details;
      return call;
    }
  }
  return TextPart{};
}

void StreamAssembler::finish(ModelResponse& response) {
  response.parts.clear();
  for (size_t i = 0; i < parts_.size(); ++i) {
    response.parts.push_back(to_part(parts_[i]));
    emit(PartEndEvent{static_cast<int>(i), response.parts.back()});
  }
  emit(FinalResponseEvent{response});
}

SendContext send_context(const ProviderOptions& options, const core::CancelToken* cancel) {
  SendContext context;
  context.what = options.provider_name + " model \"" + options.model_name + "\"";
  context.secret = options.api_key;
  context.retry = options.retry;
  context.cancel = cancel;
  context.clock = options.clock.get();
  return context;
}

void finish_metadata(ModelResponse& response, const ProviderOptions& options,
                     std::string finish_reason, const std::string& raw_reason) {
  if (response.model_name.empty()) response.model_name = options.model_name;
  response.usage.requests = 1;
  response.timestamp = core::now_rfc3339();
  response.provider_name = options.provider_name;
  response.finish_reason = std::move(finish_reason);
  if (!raw_reason.empty()) response.provider_details = Json{{"finish_reason", raw_reason}};
}

}  // namespace codeact::llm::internal
