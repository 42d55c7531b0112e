// Forking a chat at a turn (durable/chat_fork.hpp): which turns and messages the new chat keeps,
// which checkpoint its sandbox starts from, and the inputs that cannot be forked; the payloads
// that carry a fork (TaskInput and the sandbox start's fork_from, the conversation query's reply)
// round trip.
#include "codeact/durable/chat_fork.hpp"

#include <gtest/gtest.h>

namespace codeact::durable {
namespace {

llm::ModelMessage cell_call(const std::string& id) {
  llm::ModelResponse r;
  r.parts.push_back(llm::ToolCallPart{"execute_python", Json{{"code", "x = 1"}}, id});
  return r;
}

llm::ModelMessage cell_return(const std::string& id, int64_t checkpoint) {
  llm::ModelRequest q;
  llm::ToolReturnPart ret;
  ret.tool_name = "execute_python";
  ret.tool_call_id = id;
  ret.content = "ok";
  ret.metadata = Json{{"ok", true}, {"checkpoint", checkpoint}};
  q.parts.push_back(ret);
  return q;
}

llm::ModelMessage answer(const std::string& text) {
  llm::ModelResponse r;
  r.parts.push_back(llm::TextPart{text});
  return r;
}

ChatTurn turn(const std::string& task, std::optional<std::string> output,
              std::optional<std::string> error = std::nullopt) {
  ChatTurn t;
  t.task = task;
  t.output = std::move(output);
  t.error = std::move(error);
  return t;
}

// Three answered turns: the first ran cells 1 and 2, the second none, the third cell 3.
ConversationReply three_turns() {
  ConversationReply c;
  c.base.sandbox_id = "src";
  c.base.model = "test:model";
  c.base.python_packages = {"rich"};
  c.turns = {turn("load", "loaded"), turn("explain", "it is"), turn("plot", "plotted")};
  c.messages = {llm::ModelRequest::user_prompt("load"),
                cell_call("a"),
                cell_return("a", 1),
                cell_call("b"),
                cell_return("b", 2),
                answer("loaded"),
                llm::ModelRequest::user_prompt("explain"),
                answer("it is"),
                llm::ModelRequest::user_prompt("plot"),
                cell_call("c"),
                cell_return("c", 3),
                answer("plotted")};
  return c;
}

TEST(ChatFork, KeepsTheTurnsBeforeKAndStartsFromTheLastCellBeforeIt) {
  auto in = fork_chat_input(three_turns(), 3, "new");
  ASSERT_TRUE(in.ok()) << in.error().message();
  EXPECT_EQ(in->base.sandbox_id, "new");
  ASSERT_EQ(in->turns.size(), 2u);
  EXPECT_EQ(in->turns[1].task, "explain");
  EXPECT_EQ(in->base.message_history.size(), 8u);  // up to turn 3's prompt
  ASSERT_TRUE(in->base.fork_from);
  EXPECT_EQ(in->base.fork_from->sandbox, "src");
  EXPECT_EQ(in->base.fork_from->checkpoint, 2);  // turn 2 ran no cell: turn 1's last one
  EXPECT_EQ(in->base.model, "test:model");
  EXPECT_EQ(in->base.python_packages, std::vector<std::string>{"rich"});
  EXPECT_TRUE(in->pending.empty());
}

TEST(ChatFork, AtTheFirstTurnTheSandboxStartsEmptyAndAfterTheLastItHasEverything) {
  auto first = fork_chat_input(three_turns(), 1, "new");
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->turns.empty());
  EXPECT_TRUE(first->base.message_history.empty());
  EXPECT_FALSE(first->base.fork_from);
  auto after = fork_chat_input(three_turns(), 4, "new");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->turns.size(), 3u);
  EXPECT_EQ(after->base.message_history.size(), 12u);
  ASSERT_TRUE(after->base.fork_from);
  EXPECT_EQ(after->base.fork_from->checkpoint, 3);
}

TEST(ChatFork, AFailedTurnIsCountedAsATurnButHasNoMessages) {
  ConversationReply c = three_turns();
  // Turn 2 failed: the conversation never held it, so turn 3's prompt is the second one.
  c.turns[1] = turn("explain", std::nullopt, "the model was unreachable");
  c.messages.erase(c.messages.begin() + 6, c.messages.begin() + 8);
  auto in = fork_chat_input(c, 3, "new");
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->turns.size(), 2u);
  EXPECT_EQ(in->base.message_history.size(), 6u);
  EXPECT_EQ(in->base.fork_from->checkpoint, 2);
}

TEST(ChatFork, ASourceThatWasAForkKeepsItsOwnStartWhenNoCellRanBeforeTheTurn) {
  ConversationReply c = three_turns();
  c.base.fork_from = codeact::SandboxFork{"grandparent", 7};
  auto in = fork_chat_input(c, 1, "new");
  ASSERT_TRUE(in.ok());
  ASSERT_TRUE(in->base.fork_from);
  EXPECT_EQ(in->base.fork_from->sandbox, "grandparent");
  EXPECT_EQ(in->base.fork_from->checkpoint, 7);
}

TEST(ChatFork, RefusesATurnOutOfRangeSayingWhichExist) {
  for (int k : {0, 5, -1}) {
    auto in = fork_chat_input(three_turns(), k, "new");
    ASSERT_FALSE(in.ok()) << k;
    EXPECT_EQ(in.error().code(), core::Code::kInvalidArgument);
    EXPECT_NE(in.error().message().find("fork at 1 to 4"), std::string::npos)
        << in.error().message();
  }
}

TEST(ChatFork, TheLastCheckpointIgnoresOtherToolsAndCellsThatMadeNone) {
  std::vector<llm::ModelMessage> m = {cell_return("a", 4), cell_return("b", 0)};
  llm::ModelRequest bash;
  llm::ToolReturnPart ret;
  ret.tool_name = "execute_bash";
  ret.metadata = Json{{"checkpoint", 99}};
  bash.parts.push_back(ret);
  m.push_back(bash);
  auto last = last_checkpoint(m, "here");
  ASSERT_TRUE(last);
  EXPECT_EQ(last->sandbox, "here");  // the metadata named none
  EXPECT_EQ(last->checkpoint, 4);
  EXPECT_FALSE(last_checkpoint({}, "here"));
}

// Found on review: the conversation a fork inherits carries its source's checkpoint numbers;
// forking the fork before its own first cell must start from the source's sandbox.
TEST(ChatFork, ACellResultNamingItsSandboxIsForkedFromThatSandbox) {
  ConversationReply c = three_turns();
  c.base.sandbox_id = "fork-of-src";
  for (auto& m : c.messages) {
    auto* q = std::get_if<llm::ModelRequest>(&m);
    if (!q) continue;
    for (auto& part : q->parts) {
      if (auto* ret = std::get_if<llm::ToolReturnPart>(&part)) ret->metadata["sandbox"] = "src";
    }
  }
  auto in = fork_chat_input(c, 3, "new");
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->base.fork_from->sandbox, "src");
  EXPECT_EQ(in->base.fork_from->checkpoint, 2);
}

// Found on review: a session the server started again keeps every turn, failed ones too, as a
// prompt and a text answer, without the cells' results; its turns carry their checkpoints.
TEST(ChatFork, ASessionStartedAgainIsCutAtTheRightTurnAndForkedFromItsTurnsCheckpoint) {
  ConversationReply c;
  c.base.sandbox_id = "s";
  c.turns = {turn("load", "loaded"), turn("explain", std::nullopt, "model down"),
             turn("plot", "plotted")};
  c.turns[0].checkpoint = codeact::SandboxFork{"s", 2};
  c.turns[2].checkpoint = codeact::SandboxFork{"s", 3};
  c.messages = {llm::ModelRequest::user_prompt("load"),    answer("loaded"),
                llm::ModelRequest::user_prompt("explain"), answer("model down"),
                llm::ModelRequest::user_prompt("plot"),    answer("plotted")};
  auto in = fork_chat_input(c, 3, "new");
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->base.message_history.size(), 4u);  // up to "plot"
  ASSERT_TRUE(in->base.fork_from);
  EXPECT_EQ(in->base.fork_from->checkpoint, 2);
  auto after = fork_chat_input(c, 4, "new");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->base.fork_from->checkpoint, 3);
}

TEST(ChatForkPayloads, TheForkTravelsInTaskInputAndTheConversationRoundTrips) {
  ConversationReply c = three_turns();
  auto in = fork_chat_input(c, 3, "new");
  ASSERT_TRUE(in.ok());
  Json j = in->to_json();
  EXPECT_EQ(j["fork_from"], (Json{{"sandbox", "src"}, {"checkpoint", 2}}));
  auto back = ChatInput::from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_TRUE(back->base.fork_from);
  EXPECT_EQ(back->base.fork_from->checkpoint, 2);
  EXPECT_EQ(back->base.message_history.size(), 8u);
  // Without a fork the key is not written (workers before it refuse unknown keys).
  EXPECT_FALSE(TaskInput{}.to_json().contains("fork_from"));
  c.turns[0].checkpoint = codeact::SandboxFork{"src", 2};
  auto conv = ConversationReply::from_json(c.to_json());
  ASSERT_TRUE(conv.ok()) << conv.error().message();
  EXPECT_EQ(conv->messages.size(), c.messages.size());
  EXPECT_EQ(conv->turns.size(), 3u);
  EXPECT_EQ(conv->base.sandbox_id, "src");
  ASSERT_TRUE(conv->turns[0].checkpoint);
  EXPECT_EQ(conv->turns[0].checkpoint->checkpoint, 2);
  EXPECT_FALSE(conv->turns[1].checkpoint);
  Json bad = in->base.to_json();
  bad["fork_from"] = Json{{"sandbox", "src"}};
  auto refused = TaskInput::from_json(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("checkpoint"), std::string::npos);
}

}  // namespace
}  // namespace codeact::durable
