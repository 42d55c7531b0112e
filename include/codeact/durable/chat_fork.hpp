// Forking a chat at a turn (`codeact chat --fork`, POST /v1/sessions/{id}/fork): the new chat
// starts with the source's first K-1 turns and the conversation the model read before turn K, and
// its sandbox starts from the checkpoint the turns before K left (each turn records the checkpoint
// its last cell made), so turn K can be asked again (or differently) without running the turns
// before it again (docs/time-travel.md).
//
// What the new sandbox does not get: what a failed turn's cells did (a failed turn is not part of
// the conversation either), and what bash, write_file or clear did after the last cell before
// turn K. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "codeact/core/result.hpp"
#include "codeact/durable/payloads.hpp"

namespace codeact::durable {

// The error of a turn that was cancelled (its message stays in the conversation, with a note).
inline constexpr const char* kCancelledTurnError = "the turn was cancelled";

// The input of a chat forking `source` (the reply of its "conversation" query) at turn `turn`,
// counted from 1: turns 1..turn-1 are kept, turn `turn` is the next message's. 1 <= turn <=
// source.turns.size() + 1 (one past the last forks after it), else InvalidArgument. The new
// chat's id and sandbox id are `new_id`.
core::Result<ChatInput> fork_chat_input(const ConversationReply& source, int turn,
                                        const std::string& new_id);

// The checkpoint that the last execute_python call in `messages` made (its result's metadata
// names the sandbox; `sandbox_id` when it does not); unset when none made one.
std::optional<codeact::SandboxFork> last_checkpoint(std::span<const llm::ModelMessage> messages,
                                                    const std::string& sandbox_id);

}  // namespace codeact::durable
