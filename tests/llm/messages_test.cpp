#include "codeact/llm/messages.hpp"

#include <gtest/gtest.h>

#include "codeact/llm/model.hpp"

namespace codeact::llm {
namespace {

std::vector<ModelMessage> full_conversation() {
  ModelRequest first;
  first.parts.push_back(SystemPromptPart{"You are a coder.", "2026-11-29T18:00:00.000Z"});
  first.parts.push_back(UserPromptPart{"Sum 1..10 in Python", "2026-11-29T18:00:00.001Z"});
  first.instructions = "Answer briefly.";

  ModelResponse response;
  response.parts.push_back(ThinkingPart{"I should run code", "sig==", "anthropic"});
  response.parts.push_back(TextPart{"Let me run it."});
  ToolCallPart call;
  call.tool_name = "run_code";
  call.args = Json{{"code", "print(sum(range(11)))"}, {"timeout", 30}};
  call.tool_call_id = "call_1";
  call.provider_details = Json{{"thought_signature", "abc"}};
  response.parts.push_back(call);
  response.parts.push_back(ToolCallPart::from_args_text("broken", "{\"code\": \"pri", "call_2"));
  response.usage = Usage{1, 120, 30, 10, 5, Json{{"reasoning_tokens", 7}}};
  response.model_name = "claude-sonnet-4-5";
  response.timestamp = "2026-11-29T18:00:01.000Z";
  response.provider_name = "anthropic";
  response.provider_response_id = "msg_01";
  response.finish_reason = std::string(finish_reason::kToolCall);
  response.provider_details = Json{{"finish_reason", "tool_use"}};

  ModelRequest second;
  second.parts.push_back(
      ToolReturnPart{"run_code", Json{{"stdout", "55\n"}}, "call_1", "2026-11-29T18:00:02.000Z"});
  second.parts.push_back(
      RetryPromptPart{"invalid JSON", "broken", "call_2", "2026-11-29T18:00:02.001Z"});
  second.parts.push_back(RetryPromptPart{"plain text is not allowed", "", "", ""});
  ModelResponse last;
  last.parts.push_back(TextPart{"55"});
  last.finish_reason = std::string(finish_reason::kStop);
  return {first, response, second, last};
}

TEST(Messages, JsonRoundTripIsLossless) {
  auto messages = full_conversation();
  Json j = to_json(messages);
  auto back = messages_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, messages);
  // And through text, as history is stored.
  auto reparsed = messages_from_json(Json::parse(j.dump()));
  ASSERT_TRUE(reparsed.ok());
  EXPECT_EQ(*reparsed, messages);
}

TEST(Messages, JsonShapeIsTaggedLikePydanticAi) {
  Json j = to_json(full_conversation());
  EXPECT_EQ(j[0]["kind"], "request");
  EXPECT_EQ(j[0]["parts"][0]["part_kind"], "system-prompt");
  EXPECT_EQ(j[0]["parts"][1]["part_kind"], "user-prompt");
  EXPECT_EQ(j[0]["instructions"], "Answer briefly.");
  EXPECT_EQ(j[1]["kind"], "response");
  EXPECT_EQ(j[1]["parts"][0]["part_kind"], "thinking");
  EXPECT_EQ(j[1]["parts"][1]["part_kind"], "text");
  EXPECT_EQ(j[1]["parts"][2]["part_kind"], "tool-call");
  EXPECT_EQ(j[1]["parts"][2]["args"]["code"], "print(sum(range(11)))");
  EXPECT_EQ(j[1]["parts"][2]["tool_call_id"], "call_1");
  EXPECT_EQ(j[1]["parts"][3]["args_raw"], "{\"code\": \"pri");
  EXPECT_EQ(j[1]["usage"]["input_tokens"], 120);
  EXPECT_EQ(j[1]["finish_reason"], "tool_call");
  EXPECT_EQ(j[1]["provider_response_id"], "msg_01");
  EXPECT_EQ(j[2]["parts"][0]["part_kind"], "tool-return");
  EXPECT_EQ(j[2]["parts"][0]["content"]["stdout"], "55\n");
  EXPECT_EQ(j[2]["parts"][1]["part_kind"], "retry-prompt");
  EXPECT_TRUE(j[2]["parts"][2]["tool_name"].is_null());
}

TEST(Messages, ToolCallArgsThatDoNotParseKeepTheRawText) {
  auto bad = ToolCallPart::from_args_text("f", "{\"a\": 1", "id");
  EXPECT_FALSE(bad.args_valid());
  EXPECT_EQ(bad.args, Json::object());
  EXPECT_EQ(bad.args_raw, "{\"a\": 1");
  auto object = bad.args_object();
  ASSERT_FALSE(object.ok());
  EXPECT_EQ(object.error().code(), core::Code::kInvalidArgument);

  auto not_object = ToolCallPart::from_args_text("f", "[1,2]", "id");
  EXPECT_FALSE(not_object.args_valid());

  auto empty = ToolCallPart::from_args_text("f", "", "id");
  EXPECT_TRUE(empty.args_valid());
  EXPECT_EQ(empty.args, Json::object());

  auto good = ToolCallPart::from_args_text("f", "{\"a\": [1, 2]}", "id");
  EXPECT_TRUE(good.args_valid());
  EXPECT_EQ(good.args_object().value()["a"][1], 2);
}

TEST(Messages, AcceptsPydanticAiStringArgsAndErrorLists) {
  Json j = Json::parse(R"([
    {"kind": "response", "parts": [{"part_kind": "tool-call", "tool_name": "f", "args": "{\"x\": 1}",
                                    "tool_call_id": "c1"}]},
    {"kind": "request", "parts": [{"part_kind": "retry-prompt", "content": [{"loc": ["x"], "msg": "bad"}],
                                   "tool_name": "f", "tool_call_id": "c1", "timestamp": "t"}]}
  ])");
  auto messages = messages_from_json(j);
  ASSERT_TRUE(messages.ok()) << messages.error().to_string();
  auto& call = std::get<ToolCallPart>(std::get<ModelResponse>((*messages)[0]).parts[0]);
  EXPECT_EQ(call.args["x"], 1);
  auto& retry = std::get<RetryPromptPart>(std::get<ModelRequest>((*messages)[1]).parts[0]);
  EXPECT_NE(retry.content.find("bad"), std::string::npos);
}

TEST(Messages, BadJsonNamesThePath) {
  Json j =
      Json::parse(R"([{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "hi"},
                                                          {"part_kind": "shout", "content": "x"}]}])");
  auto messages = messages_from_json(j);
  ASSERT_FALSE(messages.ok());
  EXPECT_EQ(messages.error().code(), core::Code::kInvalidArgument);
  EXPECT_NE(messages.error().message().find("messages[0].parts[1]"), std::string::npos)
      << messages.error().message();
  EXPECT_NE(messages.error().message().find("shout"), std::string::npos);

  auto wrong_type = message_from_json(
      Json::parse(R"({"kind": "response", "parts": [{"part_kind": "text", "content": 3}]})"));
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.error().message().find("content"), std::string::npos);
}

TEST(Messages, ResponseHelpersAndUsageSum) {
  auto messages = full_conversation();
  const auto& response = std::get<ModelResponse>(messages[1]);
  EXPECT_EQ(response.text(), "Let me run it.");
  EXPECT_EQ(response.tool_calls().size(), 2u);
  Usage total;
  total += response.usage;
  total += response.usage;
  EXPECT_EQ(total.requests, 2);
  EXPECT_EQ(total.input_tokens, 240);
  EXPECT_EQ(total.total_tokens(), 300);
  EXPECT_EQ(total.details["reasoning_tokens"], 14);
  RetryPromptPart retry{"x is required", "f", "c", ""};
  EXPECT_EQ(retry.model_response(), "x is required\n\nFix the errors and try again.");
  EXPECT_EQ((ToolReturnPart{"f", Json("plain"), "c", ""}).content_text(), "plain");
  EXPECT_EQ((ToolReturnPart{"f", Json{{"a", 1}}, "c", ""}).content_text(), "{\"a\":1}");
}

TEST(ModelMessages, AToolReturnsMetadataRoundTripsAndIsLeftOutWhenThereIsNone) {
  ToolReturnPart with{"execute_python", Json("stdout: 1"), "c1", "",
                      Json{{"files", {"/output/a"}}}};
  Json j = to_json(ModelRequestPart(with));
  EXPECT_EQ(j["metadata"]["files"][0], "/output/a");
  auto back = request_part_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(std::get<ToolReturnPart>(*back), with);
  EXPECT_EQ(with.content_text(), "stdout: 1");  // what a provider is sent: no metadata
  Json none = to_json(ModelRequestPart(ToolReturnPart{"f", Json("x"), "c", ""}));
  EXPECT_FALSE(none.contains("metadata"));
}

TEST(ModelTypes, RequestParametersAndSettingsRoundTrip) {
  ModelRequestParameters params;
  params.function_tools.push_back(
      ToolDefinition{"run_code", "Run Python",
                     Json{{"type", "object"}, {"properties", {{"code", {{"type", "string"}}}}}},
                     true, "function"});
  params.output_tools.push_back(ToolDefinition{"final_result", "The answer",
                                               Json{{"type", "object"}}, std::nullopt, "output"});
  params.output_mode = OutputMode::kTool;
  params.output_object = OutputObjectDefinition{"answer", "desc", Json{{"type", "object"}}, false};
  params.allow_text_output = false;
  auto p = request_parameters_from_json(Json::parse(to_json(params).dump()));
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_EQ(*p, params);
  EXPECT_EQ(p->all_tools().size(), 2u);

  ModelSettings settings;
  settings.max_tokens = 1000;
  settings.temperature = 0.2;
  settings.timeout_seconds = 30;
  settings.parallel_tool_calls = false;
  settings.stop_sequences = {"END"};
  settings.extra_headers = {{"X-Trace", "1"}};
  settings.extra_body = Json{{"top_k", 5}};
  auto s = settings_from_json(Json::parse(to_json(settings).dump()));
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(*s, settings);

  ModelSettings overrides;
  overrides.temperature = 0.9;
  overrides.extra_body = Json{{"top_k", 7}, {"min_p", 0.1}};
  auto merged = settings.merged(overrides);
  EXPECT_EQ(merged.max_tokens, 1000);
  EXPECT_EQ(merged.temperature, 0.9);
  EXPECT_EQ(merged.extra_body["top_k"], 7);
  EXPECT_EQ(merged.extra_body["min_p"], 0.1);
}

TEST(ModelTypes, StreamEventsRoundTrip) {
  ModelResponse response;
  response.parts.push_back(TextPart{"hi"});
  std::vector<ModelStreamEvent> events = {
      PartStartEvent{0, TextPart{}},
      PartDeltaEvent{0, TextPartDelta{"hi"}},
      PartStartEvent{1, ToolCallPart{"f", Json::object(), "c1", "", nullptr}},
      PartDeltaEvent{1, ToolCallPartDelta{"", "{\"a\":", "c1"}},
      PartDeltaEvent{2, ThinkingPartDelta{"hmm", "sig"}},
      PartEndEvent{0, TextPart{"hi"}},
      FinalResponseEvent{response},
  };
  for (const auto& event : events) {
    Json j = to_json(event);
    auto back = stream_event_from_json(Json::parse(j.dump()));
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_EQ(*back, event) << j.dump();
  }
  EXPECT_EQ(to_json(events[1])["event_kind"], "part_delta");
  EXPECT_EQ(to_json(events[1])["delta"]["part_delta_kind"], "text");
  EXPECT_EQ(to_json(events[3])["delta"]["part_delta_kind"], "tool_call");
}

TEST(ModelTypes, ReplayAsStreamEmitsStartDeltaEndFinal) {
  ModelResponse response;
  response.parts.push_back(TextPart{"hello"});
  response.parts.push_back(ToolCallPart{"f", Json{{"a", 1}}, "c1", "", nullptr});
  std::vector<ModelStreamEvent> events;
  ASSERT_TRUE(replay_as_stream(response, [&](const ModelStreamEvent& e) {
    events.push_back(e);
    return true;
  }));
  ASSERT_EQ(events.size(), 7u);
  EXPECT_EQ(std::get<PartDeltaEvent>(events[4]).delta,
            ModelResponsePartDelta(ToolCallPartDelta{"", "{\"a\":1}", ""}));
  EXPECT_EQ(std::get<FinalResponseEvent>(events[6]).response, response);
  int seen = 0;
  EXPECT_FALSE(replay_as_stream(response, [&](const ModelStreamEvent&) { return ++seen < 2; }));
  EXPECT_EQ(seen, 2);
}

}  // namespace
}  // namespace codeact::llm
