// The retry, error-mapping and Retry-After rules every HTTP provider shares, checked through the
// OpenAI-compatible provider against a local server.
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <thread>

#include "../../src/llm/provider_http_internal.hpp"
#include "codeact/llm/openai_model.hpp"
#include "fake_provider_server.hpp"
#include "manual_clock.hpp"
#include "stream_recorder.hpp"

namespace codeact::llm {
namespace {

using namespace std::chrono_literals;
using codeact::testing::ManualClock;
using testing::FakeProviderServer;
using testing::json_response;
using testing::ScriptedResponse;
using testing::user_says;

Json ok_body() {
  return Json::parse(R"({"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})");
}

OpenAIOptions options_for(const FakeProviderServer& server, RetryPolicy retry = {}) {
  OpenAIOptions o;
  o.model_name = "m";
  o.api_key = "sk-secret-key-123";
  o.base_url = server.base_url("/v1");
  o.retry = retry;
  return o;
}

RetryPolicy fast_retry(int attempts) {
  RetryPolicy r;
  r.max_attempts = attempts;
  r.initial_backoff = 10ms;
  r.max_backoff = 50ms;
  return r;
}

// An HttpTransport answering from a script, each answer taking `latency` on the clock.
class ScriptedTransport final : public core::HttpTransport {
 public:
  explicit ScriptedTransport(ManualClock& clock) : clock_(clock) {}
  void answer(int status, core::Headers headers = {}) {
    core::HttpResponse r;
    r.status = status;
    r.headers = std::move(headers);
    r.body = status == 200 ? core::dump_json(ok_body()) : R"({"error": {"message": "busy"}})";
    script_.push_back(std::move(r));
  }
  core::Result<core::HttpResponse> send(const core::HttpRequest&) override {
    starts_.push_back(clock_.elapsed());
    clock_.advance(latency);
    if (script_.empty()) return core::unavailable("connection refused");
    core::HttpResponse r = std::move(script_.front());
    script_.pop_front();
    return r;
  }
  // When each attempt started, as time since the clock's start.
  const std::vector<std::chrono::milliseconds>& starts() const { return starts_; }
  std::chrono::milliseconds latency{0};

 private:
  ManualClock& clock_;
  std::deque<core::HttpResponse> script_;
  std::vector<std::chrono::milliseconds> starts_;
};

internal::SendContext context_on(ManualClock& clock, RetryPolicy retry,
                                 const core::CancelToken* cancel = nullptr) {
  internal::SendContext ctx;
  ctx.what = "p model \"m\"";
  ctx.retry = retry;
  ctx.clock = &clock;
  ctx.cancel = cancel;
  return ctx;
}

core::Result<core::HttpResponse> send(ScriptedTransport& transport,
                                      const internal::SendContext& ctx) {
  return internal::send_with_retry(
      transport, [] { return core::HttpRequest{}; }, ctx);
}

TEST(RetrySchedule, BackoffGrowsByTheMultiplierUpToItsCap) {
  ManualClock clock;
  ScriptedTransport transport(clock);
  for (int i = 0; i < 6; ++i) transport.answer(503);
  RetryPolicy retry;  // 500 ms initial, x2
  retry.max_attempts = 6;
  retry.max_backoff = 3s;
  auto r = send(transport, context_on(clock, retry));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kUnavailable);
  EXPECT_EQ(clock.sleeps(), (std::vector<std::chrono::milliseconds>{500ms, 1s, 2s, 3s, 3s}));
  EXPECT_EQ(transport.starts().size(), 6u);
  EXPECT_NE(r.error().message().find("after 6 attempts"), std::string::npos) << r.error().message();
}

TEST(RetrySchedule, SucceedsOnTheAttemptThatGets2xx) {
  ManualClock clock;
  ScriptedTransport transport(clock);
  transport.answer(429);
  transport.answer(502);
  transport.answer(200);
  auto r = send(transport, context_on(clock, RetryPolicy{}));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(clock.sleeps(), (std::vector<std::chrono::milliseconds>{500ms, 1s}));
}

TEST(RetrySchedule, NoAttemptStartsPastMaxTotalCountingTimeSpentInRequests) {
  ManualClock clock;
  ScriptedTransport transport(clock);
  transport.latency = 1s;  // every answer takes a second
  for (int i = 0; i < 10; ++i) transport.answer(503);
  RetryPolicy retry;
  retry.max_attempts = 10;
  retry.initial_backoff = 1s;
  retry.max_backoff = 60s;
  retry.max_total = 10s;  // llm.retry.max_total_seconds: 10
  auto r = send(transport, context_on(clock, retry));
  ASSERT_FALSE(r.ok());
  // Attempts start at 0, 2, 5 and 10 s; the next would start at 11 + 8 = 19 s > 10 s.
  EXPECT_EQ(transport.starts(), (std::vector<std::chrono::milliseconds>{0s, 2s, 5s, 10s}));
  EXPECT_EQ(clock.sleeps(), (std::vector<std::chrono::milliseconds>{1s, 2s, 4s}));
  EXPECT_NE(r.error().message().find("after 4 attempts"), std::string::npos) << r.error().message();
}

TEST(RetrySchedule, RetryAfterLongerThanTheBackoffIsWaitedShorterIsNot) {
  ManualClock clock(std::chrono::system_clock::from_time_t(1445412480));  // 07:28:00 GMT
  ScriptedTransport transport(clock);
  transport.answer(429, {{"Retry-After", "7"}});
  transport.answer(429, {{"retry-after-ms", "250"}});
  transport.answer(503, {{"Retry-After", "Wed, 21 Oct 2015 07:28:20 GMT"}});
  transport.answer(200);
  auto r = send(transport, context_on(clock, RetryPolicy{}));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  // 7 s asked > 500 ms backoff; 250 ms asked < 1 s backoff; the date is 20 s after the clock's
  // start, reached at 8 s: 12 s left.
  EXPECT_EQ(clock.sleeps(), (std::vector<std::chrono::milliseconds>{7s, 1s, 12s}));
}

TEST(RetrySchedule, ARetryAfterBeyondTheLimitEndsTheRetriesWithoutWaiting) {
  ManualClock clock;
  ScriptedTransport transport(clock);
  transport.answer(429, {{"Retry-After", "61"}});
  transport.answer(200);
  auto r = send(transport, context_on(clock, RetryPolicy{}));  // max_retry_after 60 s
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kResourceExhausted);
  EXPECT_NE(r.error().message().find("(retry after 61s)"), std::string::npos)
      << r.error().message();
  EXPECT_TRUE(clock.sleeps().empty());
  EXPECT_EQ(transport.starts().size(), 1u);
}

TEST(RetrySchedule, CancellingDuringTheBackoffEndsTheRequest) {
  ManualClock clock;
  ScriptedTransport transport(clock);
  transport.answer(503);
  transport.answer(200);
  core::CancelToken cancel;
  clock.on_sleep = [&](std::chrono::milliseconds) { cancel.cancel(); };
  auto r = send(transport, context_on(clock, RetryPolicy{}, &cancel));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kCancelled);
  EXPECT_EQ(transport.starts().size(), 1u) << "no attempt after the cancel";
}

TEST(RetryAfter, ParsesSecondsAndHttpDates) {
  auto now = std::chrono::system_clock::from_time_t(1445412480);  // Wed, 21 Oct 2015 07:28:00 GMT
  EXPECT_EQ(internal::parse_retry_after("3", now), 3000ms);
  EXPECT_EQ(internal::parse_retry_after(" 1.5 ", now), 1500ms);
  EXPECT_EQ(internal::parse_retry_after("Wed, 21 Oct 2015 07:28:07 GMT", now), 7000ms);
  EXPECT_EQ(internal::parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now), 0ms)
      << "a past date: no wait";
  EXPECT_EQ(internal::parse_retry_after("soon", now), std::nullopt);
  EXPECT_EQ(internal::parse_retry_after("", now), std::nullopt);
}

TEST(ProviderErrors, ReadsEachProvidersErrorBody) {
  EXPECT_EQ(
      internal::provider_error_message(
          R"({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}})"),
      "invalid_request_error: Incorrect API key provided");
  EXPECT_EQ(
      internal::provider_error_message(
          R"({"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}})"),
      "INVALID_ARGUMENT: API key not valid.");
  EXPECT_EQ(
      internal::provider_error_message(
          R"({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})"),
      "overloaded_error: Overloaded");
  EXPECT_EQ(
      internal::provider_error_message(
          R"([{"error": {"code": 429, "message": "Quota", "status": "RESOURCE_EXHAUSTED"}}])"),
      "RESOURCE_EXHAUSTED: Quota");
  EXPECT_EQ(internal::provider_error_message(R"({"error": "model 'qwen' not found"})"),
            "model 'qwen' not found");
  EXPECT_EQ(
      internal::provider_error_message(R"({"object": "error", "message": "bad", "code": 400})"),
      "bad");
  EXPECT_EQ(internal::provider_error_message("<html>Bad Gateway</html>"),
            "<html>Bad Gateway</html>");
}

TEST(ProviderErrors, AnErrorInsideA2xxBodyTakesItsCodeFromTheStatusItNames) {
  auto quota = internal::inline_error(
      Json::parse(
          R"({"error": {"code": 429, "message": "Quota", "status": "RESOURCE_EXHAUSTED"}})"),
      "gemini model \"g\"");
  ASSERT_TRUE(quota.has_value());
  EXPECT_EQ(quota->code(), core::Code::kResourceExhausted);
  EXPECT_EQ(quota->message(), "gemini model \"g\": RESOURCE_EXHAUSTED: Quota");
  auto no_status =
      internal::inline_error(Json::parse(R"({"error": {"message": "upstream broke"}})"), "m");
  ASSERT_TRUE(no_status.has_value());
  EXPECT_EQ(no_status->code(), core::Code::kUnavailable);
  EXPECT_FALSE(
      internal::inline_error(Json::parse(R"({"choices": [], "error": null})"), "m").has_value());
}

TEST(ProviderHttp, EveryProviderPostsJsonWithItsHeadersThenTheConfiguredOnes) {
  ProviderOptions options;
  options.provider_name = "p";
  options.model_name = "m";
  options.api_key = "k";
  options.extra_headers = {{"X-Org", "o"}};
  options.default_settings.extra_headers = {{"X-Default", "d"}};
  options.default_settings.timeout_seconds = 7;
  ModelSettings settings;
  settings.extra_headers = {{"X-Call", "c"}};
  auto call =
      internal::prepare_call(options, settings, "http://h/v1/x", {{"x-key", "k"}}, "{}", nullptr);
  core::HttpRequest first = call.make();
  EXPECT_EQ(first.method, "POST");
  EXPECT_EQ(first.url, "http://h/v1/x");
  EXPECT_EQ(first.body, "{}");
  EXPECT_EQ(first.headers, (core::Headers{{"Content-Type", "application/json"},
                                          {"x-key", "k"},
                                          {"X-Org", "o"},
                                          {"X-Default", "d"},
                                          {"X-Call", "c"}}));
  EXPECT_EQ(first.timeout, 7000ms) << "the settings' timeout, merged over the defaults";
  EXPECT_EQ(call.context.what, "p model \"m\"");
  EXPECT_EQ(call.context.secret, "k");
  core::HttpRequest retry = call.make();  // each attempt gets the same request afresh
  EXPECT_EQ(retry.headers, first.headers);
  EXPECT_EQ(retry.body, first.body);

  settings.timeout_seconds.reset();
  options.default_settings.timeout_seconds.reset();
  options.request_timeout = 1234ms;
  EXPECT_EQ(internal::prepare_call(options, settings, "u", {}, "", nullptr).make().timeout, 1234ms);
}

TEST(ProviderHttp, MapsStatusToCodeWithoutRetryAndKeepsTheKeyOut) {
  struct Case {
    int status;
    core::Code code;
  };
  for (auto c : {Case{400, core::Code::kInvalidArgument}, Case{401, core::Code::kUnauthenticated},
                 Case{403, core::Code::kPermissionDenied}, Case{404, core::Code::kNotFound}}) {
    FakeProviderServer server;
    server.enqueue(json_response(
        Json{{"error",
              {{"message", "provider says no; key sk-secret-key-123 rejected"}, {"type", "t"}}}},
        c.status));
    OpenAIModel model(options_for(server, fast_retry(4)));
    auto r = model.request(user_says("hi"), {}, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), c.code) << c.status;
    EXPECT_NE(r.error().message().find("provider says no"), std::string::npos)
        << r.error().message();
    EXPECT_NE(r.error().message().find("HTTP " + std::to_string(c.status)), std::string::npos);
    EXPECT_EQ(r.error().message().find("sk-secret-key-123"), std::string::npos)
        << r.error().message();
    EXPECT_EQ(server.request_count(), 1u) << "no retry on " << c.status;
  }
}

TEST(ProviderHttp, AReplyNestedAMillionDeepIsAnErrorNotACrash) {
  // A hostile or broken endpoint: 2 MB of brackets used to be copied recursively and overflow
  // the stack. Now the reply is refused before it is parsed.
  FakeProviderServer server;
  ScriptedResponse deep;
  deep.chunks = {std::string(1'000'000, '[') + std::string(1'000'000, ']')};
  server.enqueue(deep);
  OpenAIModel model(options_for(server, fast_retry(1)));
  auto r = model.request(user_says("hi"), {}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kDataLoss);
  EXPECT_NE(r.error().message().find("nested more than 256 levels deep"), std::string::npos)
      << r.error().message();
}

TEST(ProviderHttp, RetriesA429AfterTheServersRetryAfter) {
  FakeProviderServer server;
  ScriptedResponse limited =
      json_response(Json{{"error", {{"message", "Rate limit reached"}}}}, 429);
  limited.headers = {{"Retry-After", "1"}};
  server.enqueue(limited);
  server.enqueue(json_response(ok_body()));
  OpenAIOptions options = options_for(server, fast_retry(3));
  auto clock = std::make_shared<ManualClock>();
  options.clock = clock;
  OpenAIModel model(options);
  auto r = model.request(user_says("hi"), {}, {});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->text(), "ok");
  EXPECT_EQ(server.request_count(), 2u);
  EXPECT_EQ(clock->sleeps(), std::vector<std::chrono::milliseconds>{1s})
      << "Retry-After: 1 must be honoured over the 10 ms backoff";
}

TEST(ProviderHttp, GivesUpAfterMaxAttemptsOn5xx) {
  FakeProviderServer server;
  for (int i = 0; i < 3; ++i)
    server.enqueue(json_response(Json{{"error", {{"message", "upstream down"}}}}, 503));
  OpenAIModel model(options_for(server, fast_retry(3)));
  auto r = model.request(user_says("hi"), {}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kUnavailable);
  EXPECT_NE(r.error().message().find("upstream down"), std::string::npos);
  EXPECT_NE(r.error().message().find("3 attempts"), std::string::npos) << r.error().message();
  EXPECT_EQ(server.request_count(), 3u);
}

TEST(ProviderHttp, RetryAfterBeyondTheLimitIsNotWaitedFor) {
  FakeProviderServer server;
  ScriptedResponse limited = json_response(Json{{"error", {{"message", "daily quota"}}}}, 429);
  limited.headers = {{"Retry-After", "3600"}};
  server.enqueue(limited);
  OpenAIModel model(options_for(server, fast_retry(3)));
  auto start = std::chrono::steady_clock::now();
  auto r = model.request(user_says("hi"), {}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kResourceExhausted);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_NE(r.error().message().find("retry after 3600"), std::string::npos) << r.error().message();
}

TEST(ProviderHttp, ConnectionRefusedIsUnavailableAfterRetries) {
  int port = 0;
  {
    FakeProviderServer probe;
    port = probe.port();
  }  // closed: nothing listens there now
  OpenAIOptions o;
  o.model_name = "m";
  o.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  o.retry = fast_retry(2);
  OpenAIModel model(o);
  auto r = model.request(user_says("hi"), {}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kUnavailable) << r.error().to_string();
}

TEST(ProviderHttp, TimeoutIsDeadlineExceeded) {
  FakeProviderServer server;
  ScriptedResponse slow = json_response(ok_body());
  slow.delay = 2s;
  server.enqueue(slow);
  OpenAIModel model(options_for(server, fast_retry(3)));
  ModelSettings settings;
  settings.timeout_seconds = 0.3;
  auto start = std::chrono::steady_clock::now();
  auto r = model.request(user_says("hi"), settings, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kDeadlineExceeded) << r.error().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1800ms);
}

TEST(ProviderHttp, CancelTokenStopsAWaitingRequest) {
  FakeProviderServer server;
  ScriptedResponse slow = json_response(ok_body());
  slow.delay = 2s;
  server.enqueue(slow);
  OpenAIModel model(options_for(server, fast_retry(3)));
  core::CancelToken cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(200ms);
    cancel.cancel();
  });
  auto start = std::chrono::steady_clock::now();
  auto r = model.request(user_says("hi"), {}, {}, &cancel);
  canceller.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kCancelled) << r.error().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1800ms);
}

}  // namespace
}  // namespace codeact::llm
