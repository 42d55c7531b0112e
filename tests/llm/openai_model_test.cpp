// OpenAI chat completions against a local server speaking the documented protocol.
#include "codeact/llm/openai_model.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "codeact/llm/model_factory.hpp"
#include "fake_provider_server.hpp"
#include "stream_recorder.hpp"

namespace codeact::llm {
namespace {

using namespace std::chrono_literals;
using testing::FakeProviderServer;
using testing::json_response;
using testing::ScriptedResponse;
using testing::sse_data;
using testing::sse_response;
using testing::StreamRecorder;
using testing::user_says;

OpenAIOptions options_for(const FakeProviderServer& server) {
  OpenAIOptions o;
  o.model_name = "gpt-4.1";
  o.api_key = "sk-test";
  o.base_url = server.base_url("/v1");
  o.retry.initial_backoff = 10ms;
  return o;
}

ModelRequestParameters code_tools() {
  ModelRequestParameters p;
  p.function_tools.push_back(ToolDefinition{
      "run_code", "Run Python code in the sandbox",
      Json::parse(
          R"({"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]})"),
      true, "function"});
  p.function_tools.push_back(ToolDefinition{"list_files", "List files", Json{{"type", "object"}},
                                            std::nullopt, "function"});
  return p;
}

std::vector<ModelMessage> conversation_with_tool_history() {
  ModelRequest first;
  first.parts.push_back(SystemPromptPart{"You write Python.", ""});
  first.parts.push_back(UserPromptPart{"Sum 1..10", ""});
  ModelResponse call;
  call.parts.push_back(
      ToolCallPart{"run_code", Json{{"code", "print(55)"}}, "call_a", "", nullptr});
  call.parts.push_back(ToolCallPart::from_args_text("list_files", "{oops", "call_b"));
  ModelRequest returns;
  returns.parts.push_back(ToolReturnPart{"run_code", Json("55\n"), "call_a", ""});
  returns.parts.push_back(
      RetryPromptPart{"arguments are not valid JSON", "list_files", "call_b", ""});
  returns.instructions = "Be brief.";
  return {first, call, returns};
}

TEST(OpenAIModel, SendsTheDocumentedRequestAndReadsToolCallsWithNullContent) {
  FakeProviderServer server;
  server.enqueue(json_response(Json::parse(R"({
    "id": "chatcmpl-123", "object": "chat.completion", "created": 1, "model": "gpt-4.1-2025-04-14",
    "choices": [{"index": 0, "finish_reason": "tool_calls",
      "message": {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "run_code", "arguments": "{\"code\": \"print(1)\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "list_files", "arguments": "{}"}}]}}],
    "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120,
              "prompt_tokens_details": {"cached_tokens": 64}, "completion_tokens_details": {"reasoning_tokens": 5}}})")));
  OpenAIModel model(options_for(server));
  ModelSettings settings;
  settings.max_tokens = 500;
  settings.temperature = 0.1;
  settings.parallel_tool_calls = true;
  settings.extra_headers = {{"X-Request-Tag", "t1"}};
  auto r = model.request(conversation_with_tool_history(), settings, code_tools());
  ASSERT_TRUE(r.ok()) << r.error().to_string();

  auto sent = server.last_request();
  EXPECT_EQ(sent.method, "POST");
  EXPECT_EQ(sent.path, "/v1/chat/completions");
  EXPECT_EQ(sent.header("Authorization"), "Bearer sk-test");
  EXPECT_EQ(sent.header("Content-Type"), "application/json");
  EXPECT_EQ(sent.header("X-Request-Tag"), "t1");
  Json body = sent.json();
  EXPECT_EQ(body["model"], "gpt-4.1");
  EXPECT_EQ(body["max_completion_tokens"], 500);
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_EQ(body["temperature"], 0.1);
  EXPECT_EQ(body["parallel_tool_calls"], true);
  EXPECT_EQ(body["tool_choice"], "auto");
  EXPECT_FALSE(body.contains("stream"));
  ASSERT_EQ(body["tools"].size(), 2u);
  EXPECT_EQ(body["tools"][0]["type"], "function");
  EXPECT_EQ(body["tools"][0]["function"]["name"], "run_code");
  EXPECT_EQ(body["tools"][0]["function"]["strict"], true);
  EXPECT_EQ(body["tools"][0]["function"]["parameters"]["required"][0], "code");
  const Json& m = body["messages"];
  ASSERT_EQ(m.size(), 6u) << m.dump(2);
  EXPECT_EQ(m[0], (Json{{"role", "system"}, {"content", "Be brief."}}));
  EXPECT_EQ(m[1], (Json{{"role", "system"}, {"content", "You write Python."}}));
  EXPECT_EQ(m[2], (Json{{"role", "user"}, {"content", "Sum 1..10"}}));
  EXPECT_EQ(m[3]["role"], "assistant");
  EXPECT_TRUE(m[3]["content"].is_null());
  EXPECT_EQ(m[3]["tool_calls"][0]["id"], "call_a");
  EXPECT_EQ(Json::parse(m[3]["tool_calls"][0]["function"]["arguments"].get<std::string>())["code"],
            "print(55)");
  EXPECT_EQ(m[3]["tool_calls"][1]["function"]["arguments"], "{oops")
      << "raw arguments are echoed unchanged";
  EXPECT_EQ(m[4], (Json{{"role", "tool"}, {"tool_call_id", "call_a"}, {"content", "55\n"}}));
  EXPECT_EQ(m[5]["role"], "tool");
  EXPECT_EQ(m[5]["tool_call_id"], "call_b");
  EXPECT_NE(m[5]["content"].get<std::string>().find("Fix the errors"), std::string::npos);

  ASSERT_EQ(r->parts.size(), 2u) << "null content gives no text part";
  auto calls = r->tool_calls();
  EXPECT_EQ(calls[0].tool_name, "run_code");
  EXPECT_EQ(calls[0].args["code"], "print(1)");
  EXPECT_EQ(calls[0].tool_call_id, "call_1");
  EXPECT_EQ(calls[1].args, Json::object());
  EXPECT_EQ(r->finish_reason, "tool_call");
  EXPECT_EQ(r->model_name, "gpt-4.1-2025-04-14");
  EXPECT_EQ(r->provider_response_id, "chatcmpl-123");
  EXPECT_EQ(r->provider_name, "openai");
  EXPECT_EQ(r->usage.input_tokens, 100);
  EXPECT_EQ(r->usage.output_tokens, 20);
  EXPECT_EQ(r->usage.cache_read_tokens, 64);
  EXPECT_EQ(r->usage.details["reasoning_tokens"], 5);
}

TEST(OpenAIModel, StreamsToolCallArgumentsSplitMidJson) {
  FakeProviderServer server;
  auto chunk = [](const std::string& delta_json, const std::string& finish = "null") {
    return sse_data(
        Json::parse(R"({"id": "chatcmpl-9", "object": "chat.completion.chunk", "model": "gpt-4.1",
      "choices": [{"index": 0, "delta": )" +
                    delta_json + R"(, "finish_reason": )" + finish + "}]}"));
  };
  std::vector<std::string> chunks = {
      chunk(R"({"role": "assistant", "content": null})"),
      chunk(
          R"({"tool_calls": [{"index": 0, "id": "call_x", "type": "function", "function": {"name": "run_code", "arguments": ""}}]})"),
      chunk(R"({"tool_calls": [{"index": 0, "function": {"arguments": "{\"co"}}]})"),
      chunk(R"({"tool_calls": [{"index": 0, "function": {"arguments": "de\": \"print(\\\"hi"}}]})"),
      chunk(
          R"({"tool_calls": [{"index": 1, "id": "call_y", "type": "function", "function": {"name": "list_files", "arguments": "{}"}}]})"),
      chunk(R"({"tool_calls": [{"index": 0, "function": {"arguments": "\\\")\"}"}}]})"),
      chunk(R"({})", R"("tool_calls")"),
      sse_data(Json::parse(
          R"({"id": "chatcmpl-9", "object": "chat.completion.chunk", "model": "gpt-4.1", "choices": [],
                              "usage": {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62}})")),
      "data: [DONE]\n\n"};
  // Deliver the bytes in awkward pieces: SSE lines split across network chunks.
  std::string all;
  for (const auto& c : chunks) all += c;
  std::vector<std::string> pieces;
  for (size_t i = 0; i < all.size(); i += 37) pieces.push_back(all.substr(i, 37));
  auto response = sse_response(pieces);
  server.enqueue(response);

  OpenAIModel model(options_for(server));
  StreamRecorder recorder;
  auto r = model.request_stream(user_says("go"), {}, code_tools(), recorder.handler());
  ASSERT_TRUE(r.ok()) << r.error().to_string();

  Json body = server.last_request().json();
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);

  auto calls = r->tool_calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].tool_name, "run_code");
  EXPECT_EQ(calls[0].tool_call_id, "call_x");
  EXPECT_EQ(calls[0].args["code"], "print(\"hi\")");
  EXPECT_EQ(calls[1].tool_name, "list_files");
  EXPECT_EQ(calls[1].args, Json::object());
  EXPECT_EQ(r->usage.input_tokens, 50) << "usage arrives in the last chunk";
  EXPECT_EQ(r->usage.output_tokens, 12);
  EXPECT_EQ(r->finish_reason, "tool_call");
  EXPECT_EQ(r->provider_response_id, "chatcmpl-9");

  ASSERT_NE(recorder.started(0), nullptr);
  EXPECT_EQ(std::get<ToolCallPart>(*recorder.started(0)).tool_name, "run_code");
  EXPECT_EQ(recorder.deltas(0), "{\"code\": \"print(\\\"hi\\\")\"}");
  EXPECT_EQ(recorder.delta_count(0), 3) << "one event per argument fragment";
  EXPECT_EQ(recorder.count<PartEndEvent>(), 2);
  ASSERT_EQ(recorder.count<FinalResponseEvent>(), 1);
  EXPECT_EQ(std::get<FinalResponseEvent>(recorder.events.back()).response, *r);
}

TEST(OpenAIModel, StreamsTextDeltas) {
  FakeProviderServer server;
  std::vector<std::string> chunks;
  for (const char* piece : {"The ", "answer ", "is 55."}) {
    chunks.push_back(sse_data(
        Json{{"id", "c"},
             {"model", "gpt-4.1"},
             {"choices",
              {{{"index", 0}, {"delta", {{"content", piece}}}, {"finish_reason", nullptr}}}}}));
  }
  chunks.push_back(sse_data(
      Json{{"id", "c"},
           {"choices", {{{"index", 0}, {"delta", Json::object()}, {"finish_reason", "stop"}}}}}));
  chunks.push_back("data: [DONE]\n\n");
  auto response = sse_response(chunks);
  response.chunk_delay = 5ms;
  server.enqueue(response);
  OpenAIModel model(options_for(server));
  StreamRecorder recorder;
  auto r = model.request_stream(user_says("sum"), {}, {}, recorder.handler());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->text(), "The answer is 55.");
  EXPECT_EQ(recorder.delta_count(0), 3);
  EXPECT_EQ(r->finish_reason, "stop");
}

TEST(OpenAIModel, StructuredOutputUsesJsonSchemaResponseFormat) {
  FakeProviderServer server;
  server.enqueue(
      json_response(Json::parse(R"({"id": "c", "model": "gpt-4.1", "choices": [{"index": 0,
      "message": {"role": "assistant", "content": "{\"answer\": 55}"}, "finish_reason": "stop"}]})")));
  OpenAIModel model(options_for(server));
  ModelRequestParameters params;
  params.output_mode = OutputMode::kNative;
  params.output_object = OutputObjectDefinition{
      "final_result", "The result",
      Json::parse(R"({"type": "object", "properties": {"answer": {"type": "integer"}}})"), true};
  auto r = model.request(user_says("sum"), {}, params);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  Json format = server.last_request().json()["response_format"];
  EXPECT_EQ(format["type"], "json_schema");
  EXPECT_EQ(format["json_schema"]["name"], "final_result");
  EXPECT_EQ(format["json_schema"]["strict"], true);
  EXPECT_EQ(format["json_schema"]["schema"]["properties"]["answer"]["type"], "integer");
  EXPECT_EQ(Json::parse(r->text())["answer"], 55);
}

TEST(OpenAIModel, ToolOutputWithoutTextMakesToolChoiceRequired) {
  FakeProviderServer server;
  server.enqueue(json_response(Json::parse(R"({"id": "c", "model": "m", "choices": [{"index": 0,
      "message": {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
      "function": {"name": "final_result", "arguments": "{\"answer\": 1}"}}]}, "finish_reason": "tool_calls"}]})")));
  OpenAIModel model(options_for(server));
  ModelRequestParameters params = code_tools();
  params.output_mode = OutputMode::kTool;
  params.allow_text_output = false;
  params.output_tools.push_back(
      ToolDefinition{"final_result", "", Json{{"type", "object"}}, std::nullopt, "output"});
  auto r = model.request(user_says("x"), {}, params);
  ASSERT_TRUE(r.ok());
  Json body = server.last_request().json();
  EXPECT_EQ(body["tool_choice"], "required");
  EXPECT_EQ(body["tools"].size(), 3u);
  EXPECT_EQ(r->tool_calls()[0].args["answer"], 1);
  EXPECT_TRUE(r->text().empty()) << "empty content with tool calls gives no text";
}

TEST(OpenAIModel, StreamCutMidWayIsAClearErrorNotAHang) {
  FakeProviderServer server;
  auto cut = sse_response(
      {sse_data(Json::parse(R"({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [
                               {"index": 0, "id": "c1", "function": {"name": "run_code", "arguments": "{\"code\": \"pri"}}]}}]})")),
       "data: {\"id\": \"c\", \"choi"});
  cut.cut = true;
  server.enqueue(cut);
  OpenAIModel model(options_for(server));
  StreamRecorder recorder;
  auto start = std::chrono::steady_clock::now();
  auto r = model.request_stream(user_says("go"), {}, code_tools(), recorder.handler());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kUnavailable) << r.error().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(server.request_count(), 1u) << "no retry once events reached the caller";
  EXPECT_EQ(recorder.count<FinalResponseEvent>(), 0);
}

TEST(OpenAIModel, StreamEndingWithoutFinishIsAnError) {
  FakeProviderServer server;
  server.enqueue(sse_response({sse_data(Json::parse(
      R"({"id": "c", "choices": [{"index": 0, "delta": {"content": "half an ans"}, "finish_reason": null}]})"))}));
  OpenAIModel model(options_for(server));
  StreamRecorder recorder;
  auto r = model.request_stream(user_says("go"), {}, {}, recorder.handler());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kUnavailable);
  EXPECT_NE(r.error().message().find("ended before the response was complete"), std::string::npos);
}

TEST(OpenAIModel, StreamErrorStatusCarriesTheProviderMessage) {
  FakeProviderServer server;
  server.enqueue(json_response(
      Json::parse(R"({"error": {"message": "This model's maximum context length is 128000 tokens",
      "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})"),
      400));
  OpenAIModel model(options_for(server));
  StreamRecorder recorder;
  auto r = model.request_stream(user_says("go"), {}, {}, recorder.handler());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kInvalidArgument);
  EXPECT_NE(r.error().message().find("maximum context length"), std::string::npos)
      << r.error().message();
  EXPECT_TRUE(recorder.events.empty());
}

TEST(OpenAIModel, StreamRetriesA503BeforeAnyEvent) {
  FakeProviderServer server;
  server.enqueue(json_response(Json{{"error", {{"message", "overloaded"}}}}, 503));
  server.enqueue(sse_response(
      {sse_data(Json::parse(
           R"({"id": "c", "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]})")),
       "data: [DONE]\n\n"}));
  OpenAIModel model(options_for(server));
  StreamRecorder recorder;
  auto r = model.request_stream(user_says("go"), {}, {}, recorder.handler());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->text(), "ok");
  EXPECT_EQ(server.request_count(), 2u);
}

TEST(OpenAIModel, OllamaThroughTheFactorySendsNoKeyAndMaxTokens) {
  FakeProviderServer server;
  server.enqueue(
      json_response(Json::parse(R"({"id": "c", "model": "qwen2.5-coder", "choices": [{"index": 0,
      "message": {"role": "assistant", "content": "hi", "reasoning": "thinking..."}, "finish_reason": "stop"}]})")));
  ModelConfig config;
  config.env = [&](const std::string& name) -> std::optional<std::string> {
    if (name == "OLLAMA_BASE_URL") return server.base_url("/v1");
    return std::nullopt;
  };
  auto model = make_model("ollama:qwen2.5-coder", config);
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  ModelSettings settings;
  settings.max_tokens = 64;
  auto r = (*model)->request(user_says("hi"), settings, {});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  auto sent = server.last_request();
  EXPECT_EQ(sent.path, "/v1/chat/completions");
  EXPECT_FALSE(sent.has_header("Authorization"));
  EXPECT_EQ(sent.json()["max_tokens"], 64);
  EXPECT_EQ(sent.json()["model"], "qwen2.5-coder");
  EXPECT_EQ(r->text(), "hi");
  ASSERT_EQ(r->parts.size(), 2u);
  EXPECT_EQ(std::get<ThinkingPart>(r->parts[0]).content, "thinking...");
  EXPECT_EQ(r->provider_name, "ollama");
}

TEST(OpenAIModel, OpenAIBaseUrlFromTheEnvironment) {
  FakeProviderServer server;
  server.enqueue(json_response(Json::parse(R"({"id": "c", "model": "m", "choices": [{"index": 0,
      "message": {"role": "assistant", "content": "proxied"}, "finish_reason": "stop"}]})")));
  ModelConfig config;
  config.env = [&](const std::string& name) -> std::optional<std::string> {
    if (name == "OPENAI_BASE_URL") return server.base_url("/proxy/v1/");
    if (name == "OPENAI_API_KEY") return "sk-env";
    return std::nullopt;
  };
  auto model = make_model("openai:gpt-4.1-mini", config);
  ASSERT_TRUE(model.ok());
  auto r = (*model)->request(user_says("hi"), {}, {});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(server.last_request().path, "/proxy/v1/chat/completions");
  EXPECT_EQ(server.last_request().header("Authorization"), "Bearer sk-env");
}

TEST(OpenAIModel, ConsumerStoppingOrCancellingEndsTheStream) {
  FakeProviderServer server;
  std::vector<std::string> chunks;
  for (int i = 0; i < 40; ++i) {
    chunks.push_back(sse_data(
        Json{{"id", "c"}, {"choices", {{{"index", 0}, {"delta", {{"content", "word "}}}}}}}));
  }
  chunks.push_back("data: [DONE]\n\n");
  auto slow = sse_response(chunks);
  slow.chunk_delay = 50ms;
  server.enqueue(slow);
  server.enqueue(slow);
  OpenAIModel model(options_for(server));

  int seen = 0;
  auto start = std::chrono::steady_clock::now();
  auto stopped = model.request_stream(user_says("go"), {}, {},
                                      [&](const ModelStreamEvent&) { return ++seen < 3; });
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().code(), core::Code::kCancelled) << stopped.error().to_string();
  EXPECT_EQ(seen, 3) << "no event after the handler said stop";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);

  core::CancelToken cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(300ms);
    cancel.cancel();
  });
  StreamRecorder recorder;
  start = std::chrono::steady_clock::now();
  auto cancelled = model.request_stream(user_says("go"), {}, {}, recorder.handler(), &cancel);
  canceller.join();
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.error().code(), core::Code::kCancelled) << cancelled.error().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
  EXPECT_GT(recorder.events.size(), 0u);
  EXPECT_EQ(recorder.count<FinalResponseEvent>(), 0);
}

TEST(OpenAIModel, UnreadableBodyIsDataLoss) {
  FakeProviderServer server;
  ScriptedResponse html;
  html.content_type = "text/html";
  html.chunks = {"<html>captive portal</html>"};
  server.enqueue(html);
  OpenAIModel model(options_for(server));
  auto r = model.request(user_says("hi"), {}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kDataLoss);
  EXPECT_NE(r.error().message().find("captive portal"), std::string::npos);
}

TEST(OpenAIModel, RetryPolicyFromTheLlmConfigBlock) {
  FakeProviderServer server;
  for (int i = 0; i < 3; ++i)
    server.enqueue(json_response(Json{{"error", {{"message", "busy"}}}}, 503));
  ModelConfig config;
  config.env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  config.llm_config =
      Json::parse(R"({"openai": {"api_key": "sk-yaml", "base_url": ")" + server.base_url("/v1") +
                  R"("}, "retry": {"max_attempts": 2, "initial_backoff_seconds": 0.01}})");
  auto model = make_model("openai:gpt-4.1", config);
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  auto r = (*model)->request(user_says("hi"), {}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kUnavailable);
  EXPECT_EQ(server.request_count(), 2u) << "llm.retry.max_attempts is honoured";
  EXPECT_EQ(server.last_request().header("Authorization"), "Bearer sk-yaml");

  config.llm_config["retry"] = Json{{"max_attempts", 0}};
  auto bad = make_model("openai:gpt-4.1", config);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("llm.retry.max_attempts"), std::string::npos);
}

TEST(OpenAIModel, ServerThatIgnoresStreamingStillYieldsEvents) {
  FakeProviderServer server;
  server.enqueue(json_response(Json::parse(R"({"id": "c", "object": "chat.completion", "model": "m",
      "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "run_code", "arguments": "{\"code\": \"1\"}"}}]},
        "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 4, "completion_tokens": 2}})")));
  OpenAIModel model(options_for(server));
  StreamRecorder recorder;
  auto r = model.request_stream(user_says("go"), {}, code_tools(), recorder.handler());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->tool_calls().at(0).args["code"], "1");
  EXPECT_EQ(r->usage.input_tokens, 4);
  EXPECT_EQ(recorder.deltas(0), "{\"code\":\"1\"}");
  EXPECT_EQ(recorder.count<FinalResponseEvent>(), 1);
}

// The shapes llama.cpp's llama-server (11434, `codeact model local`) sends, recorded from the real
// server: an empty-string content beside tool calls, 32-character call ids, arguments with
// newlines and indentation, `timings` and `system_fingerprint`, usage in its own last chunk with
// no choices.
constexpr const char* kLlamaCppToolCall = R"({"choices":[{"finish_reason":"tool_calls","index":0,
  "message":{"role":"assistant","content":"","tool_calls":[{"type":"function","function":{
  "name":"run_code","arguments":"{\n    \"code\": \"sum([i for i in range(2, 1000) if all(i % j for j in range(2, i))])\"\n  }"},
  "id":"JvMyo7Y4t4SliQxXHkWWBMOnakr1Rm0S"}]}}],"created":1796485204,
  "model":"qwen2.5-coder-1.5b-instruct","system_fingerprint":"b0-unknown","object":"chat.completion",
  "usage":{"completion_tokens":59,"prompt_tokens":196,"total_tokens":255,"prompt_tokens_details":{"cached_tokens":0}},
  "id":"chatcmpl-Okf9fJ24PPi5NgkYhqIbD3d6YsFYQHYc",
  "timings":{"cache_n":0,"prompt_n":196,"prompt_ms":2076.507,"prompt_per_token_ms":10.594423469387756,
  "prompt_per_second":94.38927968940148,"predicted_n":59,"predicted_ms":1896.501,
  "predicted_per_token_ms":32.69829310344828,"predicted_per_second":30.58263612832263}})";

TEST(OpenAIModel, LlamaCppToolCallWithEmptyContentAndTimings) {
  FakeProviderServer server;
  server.enqueue(json_response(Json::parse(kLlamaCppToolCall)));
  auto o = options_for(server);
  o.model_name = "qwen2.5-coder-1.5b-instruct";
  OpenAIModel model(o);
  auto r = model.request(user_says("Sum the primes below 1000"), {}, code_tools());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->parts.size(), 1u) << "the empty content is no text part";
  auto calls = r->tool_calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].tool_call_id, "JvMyo7Y4t4SliQxXHkWWBMOnakr1Rm0S");
  EXPECT_EQ(calls[0].args["code"],
            "sum([i for i in range(2, 1000) if all(i % j for j in range(2, i))])");
  EXPECT_EQ(r->finish_reason, "tool_call");
  EXPECT_EQ(r->usage.input_tokens, 196);
  EXPECT_EQ(r->usage.output_tokens, 59);
  EXPECT_EQ(r->provider_response_id, "chatcmpl-Okf9fJ24PPi5NgkYhqIbD3d6YsFYQHYc");
}

TEST(OpenAIModel, LlamaCppStreamedToolCallAndUsageChunkWithTimings) {
  FakeProviderServer server;
  const std::string head =
      R"({"created":1796485208,"id":"chatcmpl-bPApvOeWrfmTZbjEeU5knJNvrsB7shnj","model":"qwen2.5-coder-1.5b-instruct","system_fingerprint":"b0-unknown","object":"chat.completion.chunk",)";
  auto chunk = [&](const std::string& rest) { return "data: " + head + rest + "\n\n"; };
  auto args = [&](const std::string& fragment) {
    return chunk(
        R"("choices":[{"finish_reason":null,"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":)" +
        Json(fragment).dump() + "}}]}}]}");
  };
  std::vector<std::string> chunks = {
      chunk(
          R"("choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}]})"),
      chunk(
          R"("choices":[{"finish_reason":null,"index":0,"delta":{"tool_calls":[{"index":0,"id":"GGxHq9gvSkZz6G0ttkiWMb5v6jkE5llz","type":"function","function":{"name":"run_code","arguments":"{"}}]}}]})")};
  for (const char* f :
       {"\n    \"", "code", "\":", " \"", "print", "(sum(range(10)))", "\"", "\n  }"}) {
    chunks.push_back(args(f));
  }
  chunks.push_back(chunk(R"("choices":[{"finish_reason":"tool_calls","index":0,"delta":{}}]})"));
  chunks.push_back(chunk(
      R"("choices":[],"usage":{"completion_tokens":62,"prompt_tokens":196,"total_tokens":258,"prompt_tokens_details":{"cached_tokens":195}},"timings":{"cache_n":195,"prompt_n":1,"prompt_ms":32.235,"prompt_per_token_ms":32.235,"prompt_per_second":31.02218085931441,"predicted_n":62,"predicted_ms":1955.333,"predicted_per_token_ms":32.0546393442623,"predicted_per_second":31.19673221901333}})"));
  chunks.push_back("data: [DONE]\n\n");
  server.enqueue(sse_response(chunks));
  OpenAIModel model(options_for(server));
  StreamRecorder recorder;
  auto r = model.request_stream(user_says("go"), {}, code_tools(), recorder.handler());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  auto calls = r->tool_calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].tool_call_id, "GGxHq9gvSkZz6G0ttkiWMb5v6jkE5llz");
  EXPECT_EQ(calls[0].args["code"], "print(sum(range(10)))");
  EXPECT_EQ(r->finish_reason, "tool_call");
  EXPECT_EQ(r->usage.input_tokens, 196);
  EXPECT_EQ(r->usage.output_tokens, 62);
  EXPECT_EQ(r->usage.cache_read_tokens, 195);
  EXPECT_EQ(recorder.count<FinalResponseEvent>(), 1);
}

TEST(OpenAIModel, LlamaCppAnswerAfterTheToolResult) {
  FakeProviderServer server;
  server.enqueue(json_response(Json::parse(R"({"choices":[{"finish_reason":"stop","index":0,
    "message":{"role":"assistant","content":"The sum of all prime numbers below 1000 is 76127."}}],
    "created":1796485206,"model":"qwen2.5-coder-1.5b-instruct","system_fingerprint":"b0-unknown",
    "object":"chat.completion","usage":{"completion_tokens":18,"prompt_tokens":289,"total_tokens":307},
    "id":"chatcmpl-x","timings":{"cache_n":255,"prompt_n":34,"predicted_n":18}})")));
  const std::string written = "{\n    \"code\": \"print(76127)\"\n  }";
  ModelRequest ask;
  ask.parts.push_back(UserPromptPart{"Sum the primes below 1000", ""});
  ModelResponse call;
  call.parts.push_back(
      ToolCallPart::from_args_text("run_code", written, "JvMyo7Y4t4SliQxXHkWWBMOnakr1Rm0S"));
  ModelRequest result;
  result.parts.push_back(
      ToolReturnPart{"run_code", Json("76127\n"), "JvMyo7Y4t4SliQxXHkWWBMOnakr1Rm0S", ""});
  OpenAIModel model(options_for(server));
  auto r = model.request({ask, call, result}, {}, code_tools());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->text(), "The sum of all prime numbers below 1000 is 76127.");
  EXPECT_EQ(r->finish_reason, "stop");
  // The call goes back as a JSON string of the same arguments (the server's chat template renders
  // it into the fenced block the model reads).
  Json sent = server.last_request().json();
  const Json& back = sent["messages"][1]["tool_calls"][0]["function"]["arguments"];
  ASSERT_TRUE(back.is_string()) << sent.dump(2);
  EXPECT_EQ(Json::parse(back.get<std::string>()), Json::parse(written));
  EXPECT_EQ(sent["messages"][2]["tool_call_id"], "JvMyo7Y4t4SliQxXHkWWBMOnakr1Rm0S");
}

}  // namespace
}  // namespace codeact::llm
