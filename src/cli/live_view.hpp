// How `codeact run` and `codeact chat` show a run as it happens: each model step, each cell with
// its output, retries sent back to the model, the sandbox and the files produced. Fed either
// agent events directly (direct mode) or their JSON form (agent::to_json, as the durable
// workflows' "progress" query returns them, plus {"event_kind": "sandbox"|"files"}).
//
// A cell's live output (ToolOutputEvent) is printed line by line as it comes ("    │ " before a
// stdout line, "    ! " before a stderr line; an unfinished line waits for its end or for the
// result). The result that follows then leaves out its stdout/stderr block when that block is
// exactly what was shown live, so nothing is printed twice; a block that differs (cut to
// max_output_bytes, or cut by the host while streaming) is printed as the model reads it.
#pragma once

#include <map>
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
  void show(const agent::ToolOutputEvent& e);
  void show(const agent::ToolResultEvent& e);
  void show(const agent::FinalResultEvent&) {}

  // What was shown of one stream of a running call, and its unfinished last line.
  struct Shown {
    std::string text;
    std::string partial;
  };

  std::ostream& out_;
  std::string model_;
  std::map<std::string, std::map<std::string, Shown>> live_;  // tool_call_id -> stream -> shown
};

// Every line of `text` prefixed.
std::string indent(const std::string& text, const std::string& prefix = "    ");

}  // namespace codeact::cli
