// Building blocks for scripting a model through FakeProviderServer in the OpenAI chat-completions
// protocol, and reading back what the model was sent. Shared by the cross-layer tests.
#pragma once

#include <string>
#include <vector>

#include "codeact/core/json.hpp"
#include "fake_provider_server.hpp"

namespace codeact::testing {

using core::Json;
using llm::testing::FakeProviderServer;

inline Json chat_completion(Json message, const std::string& finish_reason) {
  message["role"] = "assistant";
  return Json{
      {"id", "chatcmpl-test"},
      {"object", "chat.completion"},
      {"created", 0},
      {"model", "scripted"},
      {"choices",
       Json::array({Json{{"index", 0}, {"message", message}, {"finish_reason", finish_reason}}})},
      {"usage", Json{{"prompt_tokens", 100}, {"completion_tokens", 20}, {"total_tokens", 120}}}};
}

inline Json tool_call(const std::string& id, const std::string& name,
                      const std::string& arguments) {
  return Json{{"id", id},
              {"type", "function"},
              {"function", Json{{"name", name}, {"arguments", arguments}}}};
}

inline Json calls(std::vector<Json> tool_calls) {
  return chat_completion(Json{{"content", nullptr}, {"tool_calls", tool_calls}}, "tool_calls");
}

inline Json python_call(const std::string& id, const std::string& code) {
  return calls({tool_call(id, "execute_python", Json{{"code", code}}.dump())});
}

inline Json text_answer(const std::string& text) {
  return chat_completion(Json{{"content", text}}, "stop");
}

// The messages of the i-th request the server received.
inline Json request_messages(const FakeProviderServer& server, size_t i) {
  return server.requests().at(i).json()["messages"];
}

inline std::string tool_message(const Json& messages, const std::string& tool_call_id) {
  for (const auto& m : messages) {
    if (m.value("role", "") == "tool" && m.value("tool_call_id", "") == tool_call_id)
      return m.value("content", "");
  }
  return "";
}

inline std::string system_text(const Json& messages) {
  std::string out;
  for (const auto& m : messages) {
    if (m.value("role", "") == "system" || m.value("role", "") == "developer")
      out += m.value("content", "") + "\n";
  }
  return out;
}

}  // namespace codeact::testing
