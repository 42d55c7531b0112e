// Gemini generateContent / streamGenerateContent?alt=sse against a local server speaking the
// documented protocol.
#include "codeact/llm/gemini_model.hpp"

#include <gtest/gtest.h>

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

ProviderOptions options_for(const FakeProviderServer& server) {
  ProviderOptions o;
  o.model_name = "gemini-2.5-pro";
  o.api_key = "g-test-key";
  o.base_url = server.base_url();
  o.retry.initial_backoff = 10ms;
  return o;
}

ModelRequestParameters code_tools() {
  ModelRequestParameters p;
  p.function_tools.push_back(ToolDefinition{
      "run_code", "Run Python code",
      Json::parse(
          R"({"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"],
                      "additionalProperties": false})"),
      std::nullopt, "function"});
  return p;
}

TEST(GeminiModel, SendsTheDocumentedRequestAndReadsSeveralFunctionCalls) {
  FakeProviderServer server;
  server.enqueue(json_response(Json::parse(R"J({
    "candidates": [{"content": {"role": "model", "parts": [
        {"text": "Running two things."},
        {"functionCall": {"name": "run_code", "args": {"code": "print(1)"}}, "thoughtSignature": "c2ln"},
        {"functionCall": {"name": "run_code", "args": {"code": "print(2)"}}}]},
      "finishReason": "STOP", "index": 0}],
    "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 12, "thoughtsTokenCount": 8,
                      "totalTokenCount": 60, "cachedContentTokenCount": 10},
    "modelVersion": "gemini-2.5-pro-001", "responseId": "resp-1"})J")));
  GeminiModel model(options_for(server));

  ModelRequest first;
  first.parts.push_back(SystemPromptPart{"You write Python.", ""});
  first.parts.push_back(UserPromptPart{"Sum 1..10", ""});
  ModelResponse call;
  call.parts.push_back(TextPart{"Let me run it."});
  call.parts.push_back(ToolCallPart{"run_code", Json{{"code", "print(55)"}}, "call_a", "",
                                    Json{{"thought_signature", "prev-sig"}}});
  ModelRequest returns;
  returns.parts.push_back(ToolReturnPart{"run_code", Json("55\n"), "call_a", ""});
  returns.parts.push_back(RetryPromptPart{"Please answer in one word", "", "", ""});
  ModelSettings settings;
  settings.max_tokens = 256;
  settings.temperature = 0.0;
  settings.stop_sequences = {"END"};
  auto r = model.request({first, call, returns}, settings, code_tools());
  ASSERT_TRUE(r.ok()) << r.error().to_string();

  auto sent = server.last_request();
  EXPECT_EQ(sent.path, "/v1beta/models/gemini-2.5-pro:generateContent");
  EXPECT_EQ(sent.header("x-goog-api-key"), "g-test-key");
  EXPECT_EQ(sent.param("key"), "") << "the key never travels in the URL";
  Json body = sent.json();
  EXPECT_EQ(body["systemInstruction"]["parts"][0]["text"], "You write Python.");
  const Json& contents = body["contents"];
  ASSERT_EQ(contents.size(), 3u) << contents.dump(2);
  EXPECT_EQ(contents[0]["role"], "user");
  EXPECT_EQ(contents[0]["parts"][0]["text"], "Sum 1..10");
  EXPECT_EQ(contents[1]["role"], "model");
  EXPECT_EQ(contents[1]["parts"][0]["text"], "Let me run it.");
  EXPECT_EQ(contents[1]["parts"][1]["functionCall"]["name"], "run_code");
  EXPECT_EQ(contents[1]["parts"][1]["functionCall"]["args"]["code"], "print(55)");
  EXPECT_EQ(contents[1]["parts"][1]["thoughtSignature"], "prev-sig");
  EXPECT_EQ(contents[2]["role"], "user");
  EXPECT_EQ(contents[2]["parts"][0]["functionResponse"]["name"], "run_code");
  EXPECT_EQ(contents[2]["parts"][0]["functionResponse"]["response"]["return_value"], "55\n");
  EXPECT_NE(contents[2]["parts"][1]["text"].get<std::string>().find("one word"), std::string::npos);
  const Json& decl = body["tools"][0]["functionDeclarations"][0];
  EXPECT_EQ(decl["name"], "run_code");
  EXPECT_EQ(decl["description"], "Run Python code");
  EXPECT_EQ(decl["parametersJsonSchema"]["required"][0], "code");
  EXPECT_FALSE(body.contains("toolConfig")) << "AUTO is the default";
  EXPECT_EQ(body["generationConfig"]["maxOutputTokens"], 256);
  EXPECT_EQ(body["generationConfig"]["temperature"], 0.0);
  EXPECT_EQ(body["generationConfig"]["stopSequences"][0], "END");

  ASSERT_EQ(r->parts.size(), 3u);
  EXPECT_EQ(r->text(), "Running two things.");
  auto calls = r->tool_calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].args["code"], "print(1)");
  EXPECT_EQ(calls[1].args["code"], "print(2)");
  EXPECT_FALSE(calls[0].tool_call_id.empty());
  EXPECT_NE(calls[0].tool_call_id, calls[1].tool_call_id)
      << "ids are generated when Gemini gives none";
  EXPECT_EQ(calls[0].provider_details["thought_signature"], "c2ln");
  EXPECT_EQ(r->usage.input_tokens, 40);
  EXPECT_EQ(r->usage.output_tokens, 20) << "thought tokens are output tokens";
  EXPECT_EQ(r->usage.cache_read_tokens, 10);
  EXPECT_EQ(r->finish_reason, "stop");
  EXPECT_EQ(r->model_name, "gemini-2.5-pro-001");
  EXPECT_EQ(r->provider_response_id, "resp-1");
  EXPECT_EQ(r->provider_name, "google-gla");
}

TEST(GeminiModel, StreamsOverSseWithTextAndFunctionCalls) {
  FakeProviderServer server;
  auto chunk = [](const std::string& parts, const std::string& extra = "") {
    return sse_data(Json::parse(R"({"candidates": [{"content": {"role": "model", "parts": )" +
                                parts + "}" + extra +
                                R"(}], "modelVersion": "gemini-2.5-pro", "responseId": "r-7"})"));
  };
  std::string usage =
      R"({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}],
                          "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 4}})";
  std::vector<std::string> chunks = {
      chunk(R"([{"text": "I'll "}])"), chunk(R"([{"text": "compute it."}])"),
      chunk(
          R"J([{"functionCall": {"name": "run_code", "args": {"code": "print(sum(range(11)))"}}}])J"),
      chunk(R"J([{"functionCall": {"name": "run_code", "args": {"code": "print(2)"}}}])J"),
      sse_data(Json::parse(usage))};
  // Gemini separates events with CRLF pairs.
  for (auto& c : chunks) {
    std::string crlf;
    for (char ch : c) crlf += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
    c = crlf;
  }
  server.enqueue(sse_response(chunks));
  GeminiModel model(options_for(server));
  StreamRecorder recorder;
  auto r = model.request_stream(user_says("go"), {}, code_tools(), recorder.handler());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  auto sent = server.last_request();
  EXPECT_EQ(sent.path, "/v1beta/models/gemini-2.5-pro:streamGenerateContent");
  EXPECT_EQ(sent.param("alt"), "sse");
  EXPECT_EQ(r->text(), "I'll compute it.");
  ASSERT_EQ(r->tool_calls().size(), 2u);
  EXPECT_EQ(r->tool_calls()[0].args["code"], "print(sum(range(11)))");
  EXPECT_EQ(r->usage.input_tokens, 9);
  EXPECT_EQ(r->finish_reason, "stop");
  EXPECT_EQ(recorder.deltas(0), "I'll compute it.");
  EXPECT_EQ(recorder.count<PartStartEvent>(), 3);
  EXPECT_EQ(recorder.count<FinalResponseEvent>(), 1);
}

TEST(GeminiModel, StructuredOutputAndRequiredToolUse) {
  FakeProviderServer server;
  server.enqueue(json_response(Json::parse(R"({"candidates": [{"content": {"role": "model",
      "parts": [{"text": "{\"answer\": 55}"}]}, "finishReason": "STOP"}]})")));
  server.enqueue(json_response(Json::parse(R"({"candidates": [{"content": {"role": "model",
      "parts": [{"functionCall": {"name": "run_code", "args": {"code": "1"}}}]}, "finishReason": "STOP"}]})")));
  GeminiModel model(options_for(server));
  ModelRequestParameters native;
  native.output_mode = OutputMode::kNative;
  native.output_object =
      OutputObjectDefinition{"final_result", "", Json{{"type", "object"}}, std::nullopt};
  auto r = model.request(user_says("sum"), {}, native);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  Json generation = server.last_request().json()["generationConfig"];
  EXPECT_EQ(generation["responseMimeType"], "application/json");
  EXPECT_EQ(generation["responseJsonSchema"]["type"], "object");

  ModelRequestParameters must_call = code_tools();
  must_call.allow_text_output = false;
  auto r2 = model.request(user_says("sum"), {}, must_call);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(server.last_request().json()["toolConfig"]["functionCallingConfig"]["mode"], "ANY");
}

TEST(GeminiModel, ErrorBodiesAndRetries) {
  FakeProviderServer server;
  server.enqueue(json_response(Json::parse(R"({"error": {"code": 400,
      "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT"}})"),
                               400));
  GeminiModel model(options_for(server));
  auto r = model.request(user_says("hi"), {}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kInvalidArgument);
  EXPECT_NE(r.error().message().find("API key not valid"), std::string::npos)
      << r.error().message();
  EXPECT_EQ(r.error().message().find("g-test-key"), std::string::npos);

  ScriptedResponse busy =
      json_response(Json::parse(R"({"error": {"code": 429, "message": "Resource has been exhausted",
      "status": "RESOURCE_EXHAUSTED"}})"),
                    429);
  busy.headers = {{"Retry-After", "0"}};
  server.enqueue(busy);
  server.enqueue(
      json_response(Json::parse(R"({"error": {"code": 503, "message": "The model is overloaded.",
      "status": "UNAVAILABLE"}})"),
                    503));
  server.enqueue(json_response(
      Json::parse(R"({"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]},
      "finishReason": "STOP"}]})")));
  auto ok = model.request(user_says("hi"), {}, {});
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  EXPECT_EQ(ok->text(), "ok");
  EXPECT_EQ(server.request_count(), 4u);
}

TEST(GeminiModel, StreamCutBeforeFinishReasonIsAnError) {
  FakeProviderServer server;
  auto cut = sse_response(
      {sse_data(Json::parse(
           R"({"candidates": [{"content": {"role": "model", "parts": [{"text": "Par"}]}}]})")),
       "data: {\"candidates\": [{\"content\": {\"ro"});
  cut.cut = true;
  server.enqueue(cut);
  GeminiModel model(options_for(server));
  StreamRecorder recorder;
  auto r = model.request_stream(user_says("go"), {}, {}, recorder.handler());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kUnavailable) << r.error().to_string();
  EXPECT_EQ(recorder.count<FinalResponseEvent>(), 0);

  server.enqueue(sse_response({sse_data(Json::parse(
      R"({"candidates": [{"content": {"role": "model", "parts": [{"text": "Par"}]}}]})"))}));
  auto r2 = model.request_stream(user_says("go"), {}, {}, recorder.handler());
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.error().message().find("no finishReason"), std::string::npos)
      << r2.error().message();
}

TEST(GeminiModel, SeedConfigBlockAndGeminiBaseUrl) {
  FakeProviderServer server;
  server.enqueue(json_response(
      Json::parse(R"({"candidates": [{"content": {"role": "model", "parts": [{"text": "hello"}]},
      "finishReason": "STOP"}]})")));
  ModelConfig config;
  config.llm_config =
      Json{{"gemini", {{"api_key", "from-yaml"}, {"model_name", "gemini-2.5-flash"}}}};
  config.env = [&](const std::string& name) -> std::optional<std::string> {
    if (name == "GEMINI_BASE_URL") return server.base_url();
    return std::nullopt;
  };
  auto model = make_model("", config);
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  auto r = (*model)->request(user_says("hi"), {}, {});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(server.last_request().path, "/v1beta/models/gemini-2.5-flash:generateContent");
  EXPECT_EQ(server.last_request().header("x-goog-api-key"), "from-yaml");
}

TEST(GeminiModel, StreamedThoughtsFormOnePartAndSignaturesTravelBack) {
  FakeProviderServer server;
  server.enqueue(sse_response(
      {sse_data(Json::parse(
           R"({"candidates": [{"content": {"role": "model", "parts": [{"text": "Think", "thought": true}]}}]})")),
       sse_data(Json::parse(
           R"({"candidates": [{"content": {"role": "model", "parts": [{"text": "ing.", "thought": true}]}}]})")),
       sse_data(Json::parse(R"({"candidates": [{"content": {"role": "model", "parts": [
          {"functionCall": {"name": "run_code", "args": {"code": "1"}}, "thoughtSignature": "U0lH"}]},
          "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3, "thoughtsTokenCount": 7}})"))}));
  server.enqueue(json_response(
      Json::parse(R"({"candidates": [{"content": {"role": "model", "parts": [{"text": "1"}]},
      "finishReason": "STOP"}]})")));
  GeminiModel model(options_for(server));
  StreamRecorder recorder;
  auto r = model.request_stream(user_says("go"), {}, code_tools(), recorder.handler());
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->parts.size(), 2u);
  EXPECT_EQ(std::get<ThinkingPart>(r->parts[0]).content, "Thinking.");
  auto call = r->tool_calls().at(0);
  EXPECT_EQ(call.provider_details["thought_signature"], "U0lH");
  EXPECT_EQ(r->usage.output_tokens, 10);
  EXPECT_EQ(r->usage.details["thoughts_tokens"], 7);

  ModelRequest returns;
  returns.parts.push_back(ToolReturnPart{"run_code", Json{{"stdout", "1"}}, call.tool_call_id, ""});
  auto next = model.request({user_says("go")[0], *r, returns}, {}, code_tools());
  ASSERT_TRUE(next.ok()) << next.error().to_string();
  Json contents = server.last_request().json()["contents"];
  ASSERT_EQ(contents.size(), 3u) << contents.dump(2);
  ASSERT_EQ(contents[1]["parts"].size(), 1u) << "thoughts are not sent back";
  EXPECT_EQ(contents[1]["parts"][0]["thoughtSignature"], "U0lH");
  EXPECT_EQ(contents[2]["parts"][0]["functionResponse"]["response"]["stdout"], "1");
}

}  // namespace
}  // namespace codeact::llm
