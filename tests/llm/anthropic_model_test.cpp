// Anthropic Messages API against a local server speaking the documented protocol.
#include "codeact/llm/anthropic_model.hpp"

#include <gtest/gtest.h>

#include "fake_provider_server.hpp"
#include "stream_recorder.hpp"

namespace codeact::llm {
namespace {

using namespace std::chrono_literals;
using testing::FakeProviderServer;
using testing::json_response;
using testing::sse_event;
using testing::sse_response;
using testing::StreamRecorder;
using testing::user_says;

ProviderOptions options_for(const FakeProviderServer& server) {
  ProviderOptions o;
  o.model_name = "claude-sonnet-4-5";
  o.api_key = "sk-ant-test";
  o.base_url = server.base_url();
  o.retry.initial_backoff = 10ms;
  return o;
}

ModelRequestParameters code_tools() {
  ModelRequestParameters p;
  p.function_tools.push_back(ToolDefinition{
      "run_code", "Run Python code",
      Json::parse(
          R"({"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]})"),
      std::nullopt, "function"});
  return p;
}

TEST(AnthropicModel, SendsTheDocumentedRequestAndReadsToolUseBlocks) {
  FakeProviderServer server;
  server.enqueue(json_response(Json::parse(R"J({
    "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
    "content": [
      {"type": "text", "text": "I'll run both."},
      {"type": "tool_use", "id": "toolu_1", "name": "run_code", "input": {"code": "print(1)"}},
      {"type": "tool_use", "id": "toolu_2", "name": "run_code", "input": {"code": "print(2)"}}],
    "stop_reason": "tool_use", "stop_sequence": null,
    "usage": {"input_tokens": 100, "output_tokens": 30, "cache_creation_input_tokens": 20, "cache_read_input_tokens": 50}})J")));
  AnthropicModel model(options_for(server));

  ModelRequest first;
  first.parts.push_back(SystemPromptPart{"You write Python.", ""});
  first.parts.push_back(UserPromptPart{"Sum 1..10", ""});
  ModelResponse call;
  call.parts.push_back(ThinkingPart{"let me think", "sig-1", "anthropic"});
  call.parts.push_back(TextPart{"Running."});
  call.parts.push_back(
      ToolCallPart{"run_code", Json{{"code", "print(55)"}}, "toolu_a", "", nullptr});
  call.parts.push_back(ToolCallPart{"run_code", Json{{"code", "x"}}, "toolu_b", "", nullptr});
  ModelRequest returns;
  returns.parts.push_back(ToolReturnPart{"run_code", Json("55\n"), "toolu_a", ""});
  returns.parts.push_back(RetryPromptPart{"NameError: x", "run_code", "toolu_b", ""});
  ModelSettings settings;
  settings.parallel_tool_calls = false;
  settings.temperature = 0.5;
  auto r = model.request({first, call, returns}, settings, code_tools());
  ASSERT_TRUE(r.ok()) << r.error().to_string();

  auto sent = server.last_request();
  EXPECT_EQ(sent.path, "/v1/messages");
  EXPECT_EQ(sent.header("x-api-key"), "sk-ant-test");
  EXPECT_EQ(sent.header("anthropic-version"), "2023-06-01");
  EXPECT_FALSE(sent.has_header("Authorization"));
  Json body = sent.json();
  EXPECT_EQ(body["model"], "claude-sonnet-4-5");
  EXPECT_EQ(body["max_tokens"], 4096) << "max_tokens is required by the API";
  EXPECT_EQ(body["system"], "You write Python.");
  EXPECT_EQ(body["temperature"], 0.5);
  EXPECT_EQ(body["tools"][0]["name"], "run_code");
  EXPECT_EQ(body["tools"][0]["input_schema"]["required"][0], "code");
  EXPECT_EQ(body["tool_choice"]["type"], "auto");
  EXPECT_EQ(body["tool_choice"]["disable_parallel_tool_use"], true);
  const Json& m = body["messages"];
  ASSERT_EQ(m.size(), 3u) << m.dump(2);
  EXPECT_EQ(m[0]["role"], "user");
  EXPECT_EQ(m[0]["content"][0], (Json{{"type", "text"}, {"text", "Sum 1..10"}}));
  EXPECT_EQ(m[1]["role"], "assistant");
  EXPECT_EQ(m[1]["content"][0],
            (Json{{"type", "thinking"}, {"thinking", "let me think"}, {"signature", "sig-1"}}));
  EXPECT_EQ(m[1]["content"][1]["type"], "text");
  EXPECT_EQ(m[1]["content"][2], (Json{{"type", "tool_use"},
                                      {"id", "toolu_a"},
                                      {"name", "run_code"},
                                      {"input", {{"code", "print(55)"}}}}));
  EXPECT_EQ(m[2]["role"], "user");
  ASSERT_EQ(m[2]["content"].size(), 2u) << "both results in one user turn";
  EXPECT_EQ(m[2]["content"][0],
            (Json{{"type", "tool_result"}, {"tool_use_id", "toolu_a"}, {"content", "55\n"}}));
  EXPECT_EQ(m[2]["content"][1]["tool_use_id"], "toolu_b");
  EXPECT_EQ(m[2]["content"][1]["is_error"], true);

  EXPECT_EQ(r->text(), "I'll run both.");
  auto calls = r->tool_calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].tool_call_id, "toolu_1");
  EXPECT_EQ(calls[1].args["code"], "print(2)");
  EXPECT_EQ(r->finish_reason, "tool_call");
  EXPECT_EQ(r->usage.input_tokens, 170) << "whole prompt: input + cache write + cache read";
  EXPECT_EQ(r->usage.cache_read_tokens, 50);
  EXPECT_EQ(r->usage.cache_write_tokens, 20);
  EXPECT_EQ(r->usage.output_tokens, 30);
  EXPECT_EQ(r->provider_response_id, "msg_01");
  EXPECT_EQ(r->model_name, "claude-sonnet-4-5-20250929");
}

std::vector<std::string> full_stream() {
  return {
      sse_event(
          "message_start",
          Json::parse(R"({"type": "message_start", "message": {"id": "msg_s", "type": "message",
          "role": "assistant", "content": [], "model": "claude-sonnet-4-5", "stop_reason": null,
          "usage": {"input_tokens": 25, "output_tokens": 1}}})")),
      sse_event("content_block_start", Json::parse(R"({"type": "content_block_start", "index": 0,
          "content_block": {"type": "thinking", "thinking": ""}})")),
      sse_event("content_block_delta", Json::parse(R"({"type": "content_block_delta", "index": 0,
          "delta": {"type": "thinking_delta", "thinking": "Need code."}})")),
      sse_event("content_block_delta", Json::parse(R"({"type": "content_block_delta", "index": 0,
          "delta": {"type": "signature_delta", "signature": "EqQB"}})")),
      sse_event("content_block_stop", Json::parse(R"({"type": "content_block_stop", "index": 0})")),
      sse_event("content_block_start", Json::parse(R"({"type": "content_block_start", "index": 1,
          "content_block": {"type": "text", "text": ""}})")),
      "event: ping\ndata: {\"type\": \"ping\"}\n\n",
      sse_event("content_block_delta", Json::parse(R"({"type": "content_block_delta", "index": 1,
          "delta": {"type": "text_delta", "text": "Running "}})")),
      sse_event("content_block_delta", Json::parse(R"({"type": "content_block_delta", "index": 1,
          "delta": {"type": "text_delta", "text": "code."}})")),
      sse_event("content_block_stop", Json::parse(R"({"type": "content_block_stop", "index": 1})")),
      sse_event("content_block_start", Json::parse(R"({"type": "content_block_start", "index": 2,
          "content_block": {"type": "tool_use", "id": "toolu_s1", "name": "run_code", "input": {}}})")),
      sse_event("content_block_delta", Json::parse(R"({"type": "content_block_delta", "index": 2,
          "delta": {"type": "input_json_delta", "partial_json": ""}})")),
      sse_event("content_block_delta", Json::parse(R"({"type": "content_block_delta", "index": 2,
          "delta": {"type": "input_json_delta", "partial_json": "{\"code\": \"print(su"}})")),
      sse_event("content_block_delta", Json::parse(R"({"type": "content_block_delta", "index": 2,
          "delta": {"type": "input_json_delta", "partial_json": "m(range(11)))\"}"}})")),
      sse_event("content_block_stop", Json::parse(R"({"type": "content_block_stop", "index": 2})")),
      sse_event("content_block_start", Json::parse(R"({"type": "content_block_start", "index": 3,
          "content_block": {"type": "tool_use", "id": "toolu_s2", "name": "run_code", "input": {}}})")),
      sse_event("content_block_delta", Json::parse(R"({"type": "content_block_delta", "index": 3,
          "delta": {"type": "input_json_delta", "partial_json": "{\"code\": \"1\"}"}})")),
      sse_event("content_block_stop", Json::parse(R"({"type": "content_block_stop", "index": 3})")),
      sse_event("message_delta",
                Json::parse(R"({"type": "message_delta", "delta": {"stop_reason": "tool_use",
          "stop_sequence": null}, "usage": {"output_tokens": 89}})")),
      sse_event("message_stop", Json::parse(R"({"type": "message_stop"})")),
  };
}

TEST(AnthropicModel, StreamsEveryDocumentedEventType) {
  FakeProviderServer server;
  server.enqueue(sse_response(full_stream()));
  AnthropicModel model(options_for(server));
  StreamRecorder recorder;
  ModelSettings settings;
  settings.max_tokens = 1024;
  auto r = model.request_stream(user_says("go"), settings, code_tools(), recorder.handler());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  Json body = server.last_request().json();
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["max_tokens"], 1024);

  ASSERT_EQ(r->parts.size(), 4u);
  auto& thinking = std::get<ThinkingPart>(r->parts[0]);
  EXPECT_EQ(thinking.content, "Need code.");
  EXPECT_EQ(thinking.signature, "EqQB");
  EXPECT_EQ(std::get<TextPart>(r->parts[1]).content, "Running code.");
  auto calls = r->tool_calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].tool_call_id, "toolu_s1");
  EXPECT_EQ(calls[0].args["code"], "print(sum(range(11)))");
  EXPECT_EQ(calls[1].args["code"], "1");
  EXPECT_EQ(r->usage.input_tokens, 25);
  EXPECT_EQ(r->usage.output_tokens, 89) << "message_delta carries the final output count";
  EXPECT_EQ(r->finish_reason, "tool_call");
  EXPECT_EQ(r->provider_response_id, "msg_s");

  EXPECT_EQ(recorder.deltas(1), "Running code.");
  EXPECT_EQ(recorder.deltas(2), "{\"code\": \"print(sum(range(11)))\"}");
  EXPECT_EQ(recorder.delta_count(2), 2) << "empty partial_json emits nothing";
  EXPECT_EQ(std::get<ToolCallPart>(*recorder.started(2)).tool_name, "run_code");
  EXPECT_EQ(recorder.count<PartEndEvent>(), 4);
  EXPECT_EQ(recorder.count<FinalResponseEvent>(), 1);
}

TEST(AnthropicModel, ErrorEventMidStreamCarriesItsMessage) {
  FakeProviderServer server;
  auto events = full_stream();
  events.resize(3);
  events.push_back(
      sse_event("error", Json::parse(R"({"type": "error", "error": {"type": "overloaded_error",
                                                     "message": "Overloaded"}})")));
  server.enqueue(sse_response(events));
  AnthropicModel model(options_for(server));
  StreamRecorder recorder;
  auto r = model.request_stream(user_says("go"), {}, {}, recorder.handler());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kUnavailable);
  EXPECT_NE(r.error().message().find("overloaded_error: Overloaded"), std::string::npos)
      << r.error().message();
}

// Found by fuzzing (anthropic_stream): a "message" that is not an object made Json::value throw
// out of the parser.
TEST(AnthropicModel, MembersThatAreNotObjectsAreAnErrorNotACrash) {
  FakeProviderServer server;
  std::vector<std::string> events{
      sse_event("message_start", Json{{"type", "message_start"}, {"message", "ping"}}),
      sse_event("message_delta", Json::array({1, 2})), sse_event("error", Json::array({"error"}))};
  server.enqueue(sse_response(events));
  AnthropicModel model(options_for(server));
  StreamRecorder recorder;
  auto r = model.request_stream(user_says("go"), {}, {}, recorder.handler());
  ASSERT_FALSE(r.ok());  // read past the message_start, then refused the next event
  EXPECT_NE(r.error().message().find("unreadable stream event: [1,2]"), std::string::npos)
      << r.error().message();
}

TEST(AnthropicModel, StreamCutBeforeMessageStopIsAnError) {
  FakeProviderServer server;
  auto events = full_stream();
  events.resize(13);  // inside the first tool_use block
  auto cut = sse_response(events);
  cut.cut = true;
  server.enqueue(cut);
  auto clean_end = sse_response(events);
  server.enqueue(clean_end);
  AnthropicModel model(options_for(server));
  StreamRecorder recorder;
  auto r = model.request_stream(user_says("go"), {}, code_tools(), recorder.handler());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kUnavailable) << r.error().to_string();
  EXPECT_EQ(server.request_count(), 1u);
  auto r2 = model.request_stream(user_says("go"), {}, code_tools(), recorder.handler());
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.error().message().find("before message_stop"), std::string::npos)
      << r2.error().message();
}

TEST(AnthropicModel, AuthErrorsAreNotRetriedAndOverloadIs) {
  FakeProviderServer server;
  server.enqueue(
      json_response(Json::parse(R"({"type": "error", "error": {"type": "authentication_error",
      "message": "invalid x-api-key"}})"),
                    401));
  AnthropicModel model(options_for(server));
  auto r = model.request(user_says("hi"), {}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kUnauthenticated);
  EXPECT_NE(r.error().message().find("invalid x-api-key"), std::string::npos);
  EXPECT_EQ(r.error().message().find("sk-ant-test"), std::string::npos);
  EXPECT_EQ(server.request_count(), 1u);

  server.enqueue(
      json_response(Json::parse(R"({"type": "error", "error": {"type": "overloaded_error",
      "message": "Overloaded"}})"),
                    529));
  server.enqueue(
      json_response(Json::parse(R"({"id": "msg_2", "type": "message", "role": "assistant",
      "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "fine"}], "stop_reason": "end_turn",
      "usage": {"input_tokens": 3, "output_tokens": 1}})")));
  auto ok = model.request(user_says("hi"), {}, {});
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  EXPECT_EQ(ok->text(), "fine");
  EXPECT_EQ(ok->finish_reason, "stop");
  EXPECT_EQ(server.request_count(), 3u);
}

TEST(AnthropicModel, StructuredOutputIsPromptedAndRequiredToolUseIsAny) {
  FakeProviderServer server;
  server.enqueue(
      json_response(Json::parse(R"({"id": "m", "type": "message", "role": "assistant", "model": "c",
      "content": [{"type": "text", "text": "{\"answer\": 55}"}], "stop_reason": "end_turn",
      "usage": {"input_tokens": 3, "output_tokens": 1}})")));
  AnthropicModel model(options_for(server));
  ModelRequestParameters params = code_tools();
  params.output_mode = OutputMode::kNative;
  params.allow_text_output = false;
  params.output_object = OutputObjectDefinition{
      "final_result", "",
      Json::parse(R"({"type": "object", "properties": {"answer": {"type": "integer"}}})"),
      std::nullopt};
  auto r = model.request(user_says("sum"), {}, params);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  Json body = server.last_request().json();
  EXPECT_NE(body["system"].get<std::string>().find("\"answer\""), std::string::npos)
      << body["system"];
  EXPECT_EQ(body["tool_choice"]["type"], "any");
}

TEST(AnthropicModel, RateLimitedStreamIsRetriedAfterRetryAfter) {
  FakeProviderServer server;
  auto limited =
      json_response(Json::parse(R"({"type": "error", "error": {"type": "rate_limit_error",
      "message": "Number of request tokens has exceeded your per-minute rate limit"}})"),
                    429);
  limited.headers = {{"retry-after", "1"}};
  server.enqueue(limited);
  server.enqueue(sse_response(full_stream()));
  auto options = options_for(server);
  options.retry.max_attempts = 2;
  AnthropicModel model(options);
  StreamRecorder recorder;
  auto start = std::chrono::steady_clock::now();
  auto r = model.request_stream(user_says("go"), {}, code_tools(), recorder.handler());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 950ms);
  EXPECT_EQ(server.request_count(), 2u);
  EXPECT_EQ(r->tool_calls().size(), 2u);

  server.enqueue(limited);
  server.enqueue(limited);
  auto exhausted = model.request(user_says("go"), {}, {});
  ASSERT_FALSE(exhausted.ok());
  EXPECT_EQ(exhausted.error().code(), core::Code::kResourceExhausted);
  EXPECT_NE(exhausted.error().message().find("per-minute rate limit"), std::string::npos)
      << exhausted.error().message();
}

}  // namespace
}  // namespace codeact::llm
