// How `codeact run` and `codeact chat` show a run as it happens: each model step, each cell with
// its output, retries sent back to the model, the sandbox and the files produced. Fed either
// agent events directly (direct mode) or their JSON form (agent::to_json, as the durable
// workflows' "progress" query returns them, plus {"event_kind": "sandbox"|"files"}).
#pragma once

#include <ostream>
#include <string>

#include "codeact/agent/agent.hpp"
#include "codeact/core/json.hpp"

namespace codeact::cli {

class LiveView {
 public:
  LiveView(std::ostream& out, std::string model) : out_(out), model_(std::move(model)) {}

  void operator()(const agent::AgentEvent& event);
  // An event in JSON form; unknown kinds are ignored.
  void show_json(const core::Json& event);

 private:
  void show(const agent::ModelRequestStartEvent& e);
  void show(const agent::ModelStreamEvent&) {}
  void show(const agent::ModelResponseEvent& e);
  void show(const agent::ToolCallEvent& e);
  void show(const agent::ToolResultEvent& e);
  void show(const agent::FinalResultEvent&) {}

  std::ostream& out_;
  std::string model_;
};

// Every line of `text` prefixed.
std::string indent(const std::string& text, const std::string& prefix = "    ");

}  // namespace codeact::cli
