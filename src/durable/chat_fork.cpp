// fork_chat_input (durable/chat_fork.hpp).
#include "codeact/durable/chat_fork.hpp"

#include <fmt/format.h>

#include <variant>

namespace codeact::durable {

namespace {

// The user's prompt when the message starts a turn (a request carrying it), else null.
const std::string* prompt_of(const llm::ModelMessage& m) {
  const auto* request = std::get_if<llm::ModelRequest>(&m);
  if (!request) return nullptr;
  for (const auto& part : request->parts) {
    if (const auto* p = std::get_if<llm::UserPromptPart>(&part)) return &p->content;
  }
  return nullptr;
}

// The index of the first message at or after `from` that starts a turn asking `task` (any turn
// when `task` is null); messages.size() when there is none.
size_t find_turn_start(const std::vector<llm::ModelMessage>& messages, size_t from,
                       const std::string* task) {
  for (size_t i = from; i < messages.size(); ++i) {
    const std::string* prompt = prompt_of(messages[i]);
    if (prompt && (!task || *prompt == *task)) return i;
  }
  return messages.size();
}

}  // namespace

std::optional<codeact::SandboxFork> last_checkpoint(std::span<const llm::ModelMessage> messages,
                                                    const std::string& sandbox_id) {
  std::optional<codeact::SandboxFork> last;
  for (const auto& m : messages) {
    const auto* request = std::get_if<llm::ModelRequest>(&m);
    if (!request) continue;
    for (const auto& part : request->parts) {
      const auto* ret = std::get_if<llm::ToolReturnPart>(&part);
      if (!ret || ret->tool_name != "execute_python" || !ret->metadata.is_object()) continue;
      int64_t n = core::json_int(ret->metadata, "checkpoint");
      if (n > 0)
        last = codeact::SandboxFork{core::json_string(ret->metadata, "sandbox", sandbox_id), n};
    }
  }
  return last;
}

core::Result<ChatInput> fork_chat_input(const ConversationReply& source, int turn,
                                        const std::string& new_id) {
  const int turns = static_cast<int>(source.turns.size());
  if (turn < 1 || turn > turns + 1) {
    return core::invalid_argument(
        fmt::format("turn {} does not exist: the chat has {} turn(s); fork at 1 to {} ({} forks "
                    "after the last one)",
                    turn, turns, turns + 1, turns + 1));
  }
  // Where turn K starts in the conversation: the turns before it are found in order by their
  // prompts (a failed turn may be missing: a chat leaves it out, a session started again over
  // the API keeps it as text).
  const auto& messages = source.messages;
  size_t pos = 0;
  for (int i = 0; i < turn - 1; ++i) {
    size_t at = find_turn_start(messages, pos, &source.turns[i].task);
    if (at < messages.size()) pos = at + 1;
  }
  size_t cut = messages.size();
  if (turn <= turns) {
    cut = find_turn_start(messages, pos, &source.turns[turn - 1].task);
    if (cut == messages.size()) cut = find_turn_start(messages, pos, nullptr);
  }
  ChatInput out;
  out.base = source.base;
  out.base.task.clear();
  out.base.sandbox_id = new_id;
  out.base.message_history.assign(messages.begin(), messages.begin() + cut);
  out.turns.assign(source.turns.begin(), source.turns.begin() + (turn - 1));
  // The sandbox as the turns before K left it: the checkpoint the last of them recorded, else
  // (turns recorded before turns carried it) the last cell in the conversation; when no cell
  // ran, a source that was a fork itself started from its own fork_from, which is kept.
  std::optional<codeact::SandboxFork> from;
  for (const auto& t : out.turns) {
    if (t.checkpoint) from = t.checkpoint;
  }
  if (!from) from = last_checkpoint(out.base.message_history, source.base.sandbox_id);
  if (from) out.base.fork_from = from;
  return out;
}

}  // namespace codeact::durable
