#include "live_view.hpp"

#include <fmt/format.h>

#include <sstream>
#include <string_view>

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
  } else if (kind == "tool_output") {
    (*this)(agent::ToolOutputEvent{step, core::json_string(j, "tool_call_id"),
                                   core::json_string(j, "stream"), core::json_string(j, "text")});
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
    const std::string host = core::json_string(j, "host");
    out_ << fmt::format("── sandbox {}{}{}\n", core::json_string(j, "sandbox_id"),
                        host.empty() ? "" : " on host " + host,
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

namespace {
const char* live_prefix(const std::string& stream) {
  return stream == "stderr" ? "    ! " : "    │ ";
}
}  // namespace

void LiveView::show(const agent::ToolOutputEvent& e) {
  Shown& shown = live_[e.tool_call_id][e.stream];
  shown.text += e.text;
  shown.partial += e.text;
  size_t start = 0;
  for (size_t nl; (nl = shown.partial.find('\n', start)) != std::string::npos; start = nl + 1)
    out_ << live_prefix(e.stream) << std::string_view(shown.partial).substr(start, nl - start)
         << "\n";
  shown.partial.erase(0, start);
}

void LiveView::show(const agent::ToolResultEvent& e) {
  const std::string& id =
      std::visit([](const auto& p) -> const std::string& { return p.tool_call_id; }, e.result);
  std::map<std::string, Shown> shown;
  if (auto it = live_.find(id); it != live_.end()) {
    shown = std::move(it->second);
    live_.erase(it);
  }
  for (const auto& [stream, s] : shown) {
    if (!s.partial.empty()) out_ << live_prefix(stream) << s.partial << "\n";
  }
  if (const auto* ret = std::get_if<llm::ToolReturnPart>(&e.result)) {
    std::string text = ret->content_text();
    // The block SandboxTools::format_cell makes of a stream, when it is what was shown live.
    for (const auto& [stream, s] : shown) {
      if (s.text.empty()) continue;
      std::string block = stream + ":\n" + s.text + (s.text.back() == '\n' ? "" : "\n");
      if (auto at = text.find(block); at != std::string::npos) text.erase(at, block.size());
    }
    out_ << indent(text, "    ");
  } else {
    const auto& retry = std::get<llm::RetryPromptPart>(e.result);
    out_ << indent(retry.content, "    ↻ sent back to the model: ");
  }
}

}  // namespace codeact::cli
