#include "codeact/llm/function_model.hpp"

#include <gtest/gtest.h>

#include "codeact/llm/test_model.hpp"

namespace codeact::llm {
namespace {

std::vector<ModelMessage> ask(const std::string& prompt) {
  return {ModelRequest::user_prompt(prompt)};
}

ToolDefinition run_code_tool() {
  return ToolDefinition{"run_code", "Run Python code",
                        Json::parse(R"({"type": "object", "properties": {"code": {"type": "string"},
                                        "timeout": {"type": "integer", "default": 30},
                                        "mode": {"enum": ["exec", "eval"]}}, "required": ["code"]})"),
                        std::nullopt, "function"};
}

TEST(FunctionModel, CallbackSeesMessagesAndToolsAndPlaysTheModel) {
  FunctionModel model([](const std::vector<ModelMessage>& messages,
                         const AgentInfo& info) -> core::Result<ModelResponse> {
    ModelResponse r;
    const auto& request = std::get<ModelRequest>(messages.back());
    r.parts.push_back(TextPart{"you said: " + std::get<UserPromptPart>(request.parts[0]).content +
                               ", tools: " + std::to_string(info.params->function_tools.size())});
    return r;
  });
  ModelRequestParameters params;
  params.function_tools.push_back(run_code_tool());
  auto response = model.request(ask("hi"), {}, params);
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->text(), "you said: hi, tools: 1");
  EXPECT_EQ(response->model_name, "function");
  EXPECT_EQ(response->usage.requests, 1);

  std::vector<ModelStreamEvent> events;
  auto streamed = model.request_stream(ask("yo"), {}, params, [&](const ModelStreamEvent& e) {
    events.push_back(e);
    return true;
  });
  ASSERT_TRUE(streamed.ok());
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(std::holds_alternative<FinalResponseEvent>(events.back()));
}

TEST(FunctionModel, StreamFunctionEmitsItsOwnEvents) {
  FunctionModel model(nullptr,
                      [](const std::vector<ModelMessage>&, const AgentInfo&,
                         const StreamHandler& emit) -> core::Result<ModelResponse> {
                        emit(PartStartEvent{0, TextPart{}});
                        emit(PartDeltaEvent{0, TextPartDelta{"4"}});
                        emit(PartDeltaEvent{0, TextPartDelta{"2"}});
                        ModelResponse r;
                        r.parts.push_back(TextPart{"42"});
                        return r;
                      });
  std::string text;
  int finals = 0;
  auto response = model.request_stream(ask("?"), {}, {}, [&](const ModelStreamEvent& e) {
    if (auto* d = std::get_if<PartDeltaEvent>(&e))
      text += std::get<TextPartDelta>(d->delta).content_delta;
    if (std::holds_alternative<FinalResponseEvent>(e)) ++finals;
    return true;
  });
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(text, "42");
  EXPECT_EQ(finals, 1);
  auto plain = model.request(ask("?"), {}, {});
  ASSERT_TRUE(plain.ok()) << "request() drives the stream function";
  EXPECT_EQ(plain->text(), "42");
}

TEST(FunctionModel, ErrorsAndCancellationPropagate) {
  FunctionModel failing(
      [](const std::vector<ModelMessage>&, const AgentInfo&) -> core::Result<ModelResponse> {
        return core::unavailable("scripted outage");
      });
  auto r = failing.request(ask("x"), {}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kUnavailable);
  core::CancelToken cancel;
  cancel.cancel();
  auto c = failing.request(ask("x"), {}, {}, &cancel);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), core::Code::kCancelled);
}

TEST(TestModel, CallsEveryToolOnceThenSummarizesTheReturns) {
  TestModel model;
  ModelRequestParameters params;
  params.function_tools.push_back(run_code_tool());
  params.function_tools.push_back(
      ToolDefinition{"list_files", "", Json{{"type", "object"}}, std::nullopt, "function"});
  std::vector<ModelMessage> messages = ask("go");
  auto first = model.request(messages, {}, params);
  ASSERT_TRUE(first.ok());
  auto calls = first->tool_calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].tool_name, "run_code");
  EXPECT_EQ(calls[0].args["code"], "a");
  EXPECT_EQ(calls[0].args["timeout"], 30) << "defaults are used";
  EXPECT_EQ(calls[0].args["mode"], "exec");
  EXPECT_EQ(first->finish_reason, "tool_call");

  messages.push_back(*first);
  ModelRequest returns;
  returns.parts.push_back(ToolReturnPart{"run_code", Json("55"), calls[0].tool_call_id, ""});
  returns.parts.push_back(
      ToolReturnPart{"list_files", Json::array({"a.txt"}), calls[1].tool_call_id, ""});
  messages.push_back(returns);
  auto second = model.request(messages, {}, params);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->tool_calls().empty());
  EXPECT_EQ(Json::parse(second->text()),
            Json::parse(R"({"run_code": "55", "list_files": ["a.txt"]})"));
}

TEST(TestModel, StructuredOutputThroughOutputToolOrJsonText) {
  TestModelOptions options;
  options.custom_output_args = Json{{"answer", 42}};
  TestModel model(options);
  ModelRequestParameters tool_mode;
  tool_mode.output_mode = OutputMode::kTool;
  tool_mode.allow_text_output = false;
  tool_mode.output_tools.push_back(
      ToolDefinition{"final_result", "", Json{{"type", "object"}}, std::nullopt, "output"});
  auto r = model.request(ask("q"), {}, tool_mode);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->tool_calls().size(), 1u);
  EXPECT_EQ(r->tool_calls()[0].tool_name, "final_result");
  EXPECT_EQ(r->tool_calls()[0].args["answer"], 42);

  TestModel generated;
  ModelRequestParameters native;
  native.output_mode = OutputMode::kNative;
  native.output_object = OutputObjectDefinition{
      "answer", "",
      Json::parse(R"({"type": "object", "properties": {"city": {"$ref": "#/$defs/City"}},
                                   "$defs": {"City": {"type": "object", "properties": {"name": {"type": "string"},
                                                                                       "pop": {"type": "integer"}}}}})"),
      std::nullopt};
  auto n = generated.request(ask("q"), {}, native);
  ASSERT_TRUE(n.ok());
  Json value = Json::parse(n->text());
  EXPECT_TRUE(value["city"]["name"].is_string());
  EXPECT_TRUE(value["city"]["pop"].is_number_integer());
}

TEST(TestModel, RetriedToolIsCalledAgain) {
  TestModel model;
  ModelRequestParameters params;
  params.function_tools.push_back(run_code_tool());
  std::vector<ModelMessage> messages = ask("go");
  auto first = model.request(messages, {}, params);
  ASSERT_TRUE(first.ok());
  messages.push_back(*first);
  ModelRequest retry;
  retry.parts.push_back(
      RetryPromptPart{"code: bad", "run_code", first->tool_calls()[0].tool_call_id, ""});
  messages.push_back(retry);
  auto second = model.request(messages, {}, params);
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->tool_calls().size(), 1u);
  EXPECT_EQ(second->tool_calls()[0].tool_name, "run_code");
}

}  // namespace
}  // namespace codeact::llm
