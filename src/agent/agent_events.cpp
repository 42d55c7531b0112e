// JSON forms of the agent's run events and run results (for the UI stream, the HTTP API and
// workflow results).
#include "codeact/agent/agent.hpp"

namespace codeact::agent {

namespace {
template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;
}  // namespace

std::string event_kind(const AgentEvent& event) {
  return std::visit(
      Overloaded{
          [](const ModelRequestStartEvent&) -> std::string { return "model_request_start"; },
          [](const ModelStreamEvent& e) -> std::string {
            if (const auto* d = std::get_if<llm::PartDeltaEvent>(&e.event)) {
              if (std::holds_alternative<llm::TextPartDelta>(d->delta)) return "text_delta";
            }
            return "model_stream";
          },
          [](const ModelResponseEvent&) -> std::string { return "model_response"; },
          [](const ToolCallEvent&) -> std::string { return "tool_call"; },
          [](const ToolOutputEvent&) -> std::string { return "tool_output"; },
          [](const ToolResultEvent&) -> std::string { return "tool_result"; },
          [](const FinalResultEvent&) -> std::string { return "final_result"; },
      },
      event);
}

Json to_json(const AgentEvent& event) {
  return std::visit(
      Overloaded{
          [](const ModelRequestStartEvent& e) {
            return Json{{"event_kind", "model_request_start"}, {"run_step", e.run_step}};
          },
          [](const ModelStreamEvent& e) {
            return Json{{"event_kind", "model_stream"},
                        {"run_step", e.run_step},
                        {"event", llm::to_json(e.event)}};
          },
          [](const ModelResponseEvent& e) {
            return Json{{"event_kind", "model_response"},
                        {"run_step", e.run_step},
                        {"response", llm::to_json(e.response)}};
          },
          [](const ToolCallEvent& e) {
            return Json{{"event_kind", "tool_call"},
                        {"run_step", e.run_step},
                        {"part", llm::to_json(llm::ModelResponsePart(e.part))}};
          },
          [](const ToolOutputEvent& e) {
            return Json{{"event_kind", "tool_output"},
                        {"run_step", e.run_step},
                        {"tool_call_id", e.tool_call_id},
                        {"stream", e.stream},
                        {"text", e.text}};
          },
          [](const ToolResultEvent& e) {
            Json part = std::visit(
                [](const auto& p) { return llm::to_json(llm::ModelRequestPart(p)); }, e.result);
            return Json{{"event_kind", "tool_result"}, {"run_step", e.run_step}, {"part", part}};
          },
          [](const FinalResultEvent& e) {
            return Json{{"event_kind", "final_result"},
                        {"run_step", e.run_step},
                        {"output", e.output},
                        {"tool_name", e.tool_name}};
          },
      },
      event);
}

Json to_json(const AgentRunResult& r) {
  return Json{{"output", r.output},
              {"messages", llm::to_json(r.messages)},
              {"new_messages_start", r.new_messages_start},
              {"usage", llm::to_json(r.usage)},
              {"tool_calls", r.tool_calls},
              {"run_id", r.run_id}};
}

core::Result<AgentRunResult> run_result_from_json(const Json& j) {
  if (!j.is_object()) return core::invalid_argument("agent run result: expected a JSON object");
  AgentRunResult r;
  r.output = j.value("output", Json());
  CODEACT_TRY(r.messages, llm::messages_from_json(j.value("messages", Json::array())));
  r.new_messages_start = static_cast<size_t>(core::json_int(j, "new_messages_start"));
  if (r.new_messages_start > r.messages.size()) {
    return core::invalid_argument(
        "agent run result: new_messages_start is past the end of messages");
  }
  CODEACT_TRY(r.usage, llm::usage_from_json(j.value("usage", Json::object())));
  r.tool_calls = core::json_int(j, "tool_calls");
  r.run_id = core::json_string(j, "run_id");
  return r;
}

}  // namespace codeact::agent
