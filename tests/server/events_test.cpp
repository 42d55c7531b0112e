#include "codeact/server/events.hpp"

#include <gtest/gtest.h>

#include "codeact/llm/messages.hpp"

using namespace codeact;
using namespace ::codeact::server;
using core::Json;

namespace {

Json tool_call(const std::string& name, Json args, const std::string& id) {
  llm::ToolCallPart p;
  p.tool_name = name;
  p.args = std::move(args);
  p.tool_call_id = id;
  return Json{{"event_kind", "tool_call"},
              {"run_step", 1},
              {"part", llm::to_json(llm::ModelResponsePart(p))}};
}

// A tool's result as the agent loop records it: the model's text as content, the tool's typed
// result as metadata (SandboxTools returns both).
Json tool_return(const std::string& name, Json typed, const std::string& id,
                 const std::string& ts) {
  llm::ToolReturnPart p;
  p.tool_name = name;
  p.content = "the text the model reads";
  p.metadata = std::move(typed);
  p.tool_call_id = id;
  p.timestamp = ts;
  return Json{{"event_kind", "tool_result"},
              {"run_step", 1},
              {"part", llm::to_json(llm::ModelRequestPart(p))}};
}

}  // namespace

TEST(Events, ACellBecomesCellAndCellResultWithItsImagesAndDuration) {
  TranslateState st;
  llm::ModelResponse resp;
  resp.parts.push_back(llm::TextPart{"Let me plot it."});
  resp.timestamp = "2026-01-01T00:00:00.000Z";
  resp.usage.input_tokens = 10;
  resp.usage.output_tokens = 5;
  auto r = translate_progress_event(
      Json{{"event_kind", "model_response"}, {"run_step", 1}, {"response", llm::to_json(resp)}},
      st);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].type, "text");
  EXPECT_EQ(r[0].data["text"], "Let me plot it.");
  EXPECT_EQ(r[1].type, "usage");
  EXPECT_EQ(r[1].data["output_tokens"], 5);

  auto c = translate_progress_event(tool_call("execute_python", {{"code", "print(1)"}}, "c1"), st);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].type, "cell");
  EXPECT_EQ(c[0].data["code"], "print(1)");
  EXPECT_EQ(c[0].data["language"], "python");

  auto res = translate_progress_event(
      tool_return(
          "execute_python",
          {{"ok", false}, {"files", {"/output/plot.png", "/output/a.csv"}}, {"duration_ms", 1500}},
          "c1", "2026-01-01T00:00:00.000Z"),
      st);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].type, "cell_result");
  EXPECT_EQ(res[0].data["ok"], false);
  EXPECT_EQ(res[0].data["images"], Json::array({"/output/plot.png"}));
  EXPECT_EQ(res[0].data["files"].size(), 2u);
  EXPECT_EQ(res[0].data["duration_ms"], 1500) << "the time the sandbox measured, not timestamps";
  EXPECT_EQ(res[0].data["text"], "the text the model reads");
  EXPECT_FALSE(res[0].data.contains("checkpoint"));

  translate_progress_event(tool_call("execute_python", {{"code", "x = 1"}}, "c2"), st);
  auto committed = translate_progress_event(
      tool_return("execute_python", {{"ok", true}, {"checkpoint", 7}, {"sandbox", "s"}}, "c2",
                  "2026-01-01T00:00:02.000Z"),
      st);
  ASSERT_EQ(committed.size(), 1u);
  EXPECT_EQ(committed[0].data["checkpoint"], 7);  // the checkpoint the cell's commit made
  EXPECT_FALSE(committed[0].data.contains("duration_ms"))
      << "a result recorded before results carried their duration has none";
}

TEST(Events, ACancelledTurnIsTurnCancelledNotAnError) {
  TranslateState st;
  auto t = translate_progress_event(
      Json{{"event_kind", "turn_cancelled"}, {"turn", 3}, {"message", "the turn was cancelled"}},
      st);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].type, "turn_cancelled");
  EXPECT_EQ(t[0].data["turn"], 3);
  EXPECT_EQ(t[0].data["message"], "the turn was cancelled");
}

TEST(Events, OtherToolsUserMessagesFailuresAndUnknownKinds) {
  TranslateState st;
  auto t = translate_progress_event(tool_call("read_file", {{"path", "a"}}, "c2"), st);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].type, "tool_call");
  EXPECT_EQ(t[0].data["tool_name"], "read_file");
  auto u = translate_progress_event(
      Json{{"event_kind", "user_message"}, {"task", "hi"}, {"turn", 2}}, st);
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].type, "user_message");
  EXPECT_EQ(u[0].data["text"], "hi");
  auto f = translate_progress_event(Json{{"event_kind", "run_failed"}, {"error", "boom"}}, st);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].type, "error");
  EXPECT_TRUE(translate_progress_event(Json{{"event_kind", "something_new"}}, st).empty());
  EXPECT_TRUE(translate_progress_event(Json{{"event_kind", "tool_call"}, {"part", 5}}, st).empty());
}

TEST(Events, IdsRoundTripAndOrderByIndexThenSub) {
  SseEvent e{"ab12cd34.7.1", "cell", {{"code", "x\ny"}}};
  EXPECT_EQ(e.wire(), "id: ab12cd34.7.1\nevent: cell\ndata: {\"code\":\"x\\ny\"}\n\n");
  auto p = parse_event_id("ab12cd34.7.1");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->run, "ab12cd34");
  EXPECT_EQ(p->index, 7);
  EXPECT_EQ(p->sub, 1);
  EXPECT_TRUE((EventPosition{"r", 6, 1001}) < (EventPosition{"r", 7, 0}));
  EXPECT_TRUE((EventPosition{"r", 7, 0}) < (EventPosition{"r", 7, 1}));
  EXPECT_TRUE(parse_event_id("-1.1000").has_value() == false);
  EXPECT_TRUE(parse_event_id("r.-1.1000").has_value());
  EXPECT_FALSE(parse_event_id("r.x.1").has_value());
  EXPECT_FALSE(parse_event_id("").has_value());
  EXPECT_FALSE(parse_event_id("r.1.2.3").has_value());
}

TEST(Events, OnlyTheEventsAtATurnsEndMayEndIt) {
  // Turn 2 of a session, as its stream shows it: the hub's `status` events around the
  // workflow's own, translated.
  TranslateState st;
  std::vector<SseEvent> stream{SseEvent{"", "status", {{"status", "running"}}}};
  for (const Json& progress : {Json{{"event_kind", "user_message"}, {"task", "again"}, {"turn", 2}},
                               Json{{"event_kind", "model_request_start"}, {"run_step", 1}},
                               tool_call("run_python", {{"code", "1 + 1"}}, "c1"),
                               Json{{"event_kind", "final_result"}, {"output", "2"}},
                               Json{{"event_kind", "files"}, {"files", {"/output/a.csv"}}}})
    for (auto& e : translate_progress_event(progress, st)) stream.push_back(std::move(e));
  stream.push_back(SseEvent{"", "status", {{"status", "idle"}}});

  std::vector<std::string> ending;
  for (const auto& e : stream)
    if (may_end_turn(e, 2)) ending.push_back(e.type);
  EXPECT_EQ(ending, (std::vector<std::string>{"final", "files", "status"}));

  EXPECT_TRUE(may_end_turn(SseEvent{"", "user_message", {{"text", "next"}, {"turn", 3}}}, 2))
      << "a later message began: turn 2 was recorded before it";
  EXPECT_FALSE(may_end_turn(SseEvent{"", "user_message", {{"turn", "3"}}}, 2)) << "not a number";
  EXPECT_TRUE(may_end_turn(SseEvent{"", "error", {{"message", "boom"}}}, 2));
  EXPECT_TRUE(may_end_turn(SseEvent{"", "turn_cancelled", {{"turn", 2}}}, 2));
  EXPECT_NO_THROW(may_end_turn(SseEvent{"", "status", Json::array()}, 2)) << "odd data";
  EXPECT_FALSE(may_end_turn(SseEvent{"", "cell_output", {{"text", "event: final"}}}, 2));
}
