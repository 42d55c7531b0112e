#include "live_view.hpp"

#include <fmt/format.h>

#include <sstream>

namespace codeact::cli {

std::string indent(const std::string& text, const std::string& prefix) {
  std::string out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out += prefix + line + "\n";
  return out;
}

void LiveView::operator()(const agent::AgentEvent& event) {
  std::visit([this](const auto& e) { show(e); }, event);
  out_.flush();
}

void LiveView::show_json(const core::Json& j) {
  const std::string kind = core::json_string(j, "event_kind");
  const int step = static_cast<int>(core::json_int(j, "run_step"));
  if (kind == "model_request_start") {
    (*this)(agent::ModelRequestStartEvent{step});
  } else if (kind == "model_response") {
    auto r = llm::response_from_json(j.value("response", core::Json::object()));
    if (r.ok()) (*this)(agent::ModelResponseEvent{step, std::move(*r)});
  } else if (kind == "tool_call") {
    auto p = llm::response_part_from_json(j.value("part", core::Json::object()));
    if (p.ok()) {
      if (const auto* call = std::get_if<llm::ToolCallPart>(&*p))
        (*this)(agent::ToolCallEvent{step, *call});
    }
  } else if (kind == "tool_result") {
    auto p = llm::request_part_from_json(j.value("part", core::Json::object()));
    if (p.ok()) {
      if (const auto* ret = std::get_if<llm::ToolReturnPart>(&*p)) {
        (*this)(agent::ToolResultEvent{step, *ret});
      } else if (const auto* retry = std::get_if<llm::RetryPromptPart>(&*p)) {
        (*this)(agent::ToolResultEvent{step, *retry});
      }
    }
  } else if (kind == "sandbox") {
    out_ << fmt::format("── sandbox {}{}\n", core::json_string(j, "sandbox_id"),
                        core::json_bool(j, "resumed") ? " (resumed with its state)" : "");
    out_.flush();
  } else if (kind == "cancelled") {
    out_ << "── " << core::json_string(j, "message") << "\n";
    out_.flush();
  } else if (kind == "message_rejected") {
    out_ << fmt::format("── a message was rejected: {} (sent: {})\n", core::json_string(j, "error"),
                        core::json_string(j, "sent"));
    out_.flush();
  }
}

void LiveView::show(const agent::ModelRequestStartEvent& e) {
  out_ << fmt::format("── step {} · {}\n", e.run_step, model_);
}

void LiveView::show(const agent::ModelResponseEvent& e) {
  std::string text = e.response.text();
  // Text next to tool calls is the model thinking aloud; a final text is shown as the answer.
  if (!text.empty() && !e.response.tool_calls().empty()) out_ << indent(text, "  │ ");
  if (e.response.usage.total_tokens() > 0) {
    out_ << fmt::format("  ({} tokens in, {} out)\n", e.response.usage.input_tokens,
                        e.response.usage.output_tokens);
  }
}

void LiveView::show(const agent::ToolCallEvent& e) {
  const auto& p = e.part;
  if (p.tool_name == "execute_python" && p.args.is_object() && p.args.contains("code") &&
      p.args["code"].is_string()) {
    out_ << "  ▶ execute_python\n" << indent(p.args["code"].get<std::string>(), "    >>> ");
  } else if (p.tool_name == "execute_bash" && p.args.is_object() && p.args.contains("script") &&
             p.args["script"].is_string()) {
    out_ << "  ▶ execute_bash\n" << indent(p.args["script"].get<std::string>(), "    $ ");
  } else {
    out_ << fmt::format("  ▶ {} {}\n", p.tool_name,
                        p.args_valid() ? core::dump_json(p.args) : p.args_raw);
  }
}

void LiveView::show(const agent::ToolResultEvent& e) {
  if (const auto* ret = std::get_if<llm::ToolReturnPart>(&e.result)) {
    out_ << indent(ret->content_text(), "    ");
  } else {
    const auto& retry = std::get<llm::RetryPromptPart>(e.result);
    out_ << indent(retry.content, "    ↻ sent back to the model: ");
  }
}

}  // namespace codeact::cli
