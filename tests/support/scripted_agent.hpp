// ScriptedAgent: a CodeAct agent whose llm_model hook gives its own model — a FunctionModel that
// plays a fixed list of turns and records every request it gets (messages without timestamps,
// the tools and output it was offered, the settings). For tests that run the same agent in
// both modes, or check which model a mode really called.
//
//   auto model = std::make_shared<RecordingModel>(std::vector<llm::ModelResponse>{
//       RecordingModel::python_call("call_1", "x = 6 * 7\nx"), RecordingModel::text("42")});
//   auto agent = std::make_shared<ScriptedAgent>("simple_agent", model);
//
// Thread-safe (the worker may call the model from any thread).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "codeact/codeact/codeact_agent.hpp"
#include "codeact/llm/function_model.hpp"

namespace codeact::testing {

using core::Json;

// `j` without its "timestamp" members, at any depth (they differ between a wall clock and a
// workflow's clock).
inline Json without_timestamps(Json j) {
  if (j.is_object()) {
    j.erase("timestamp");
    for (auto& [_, v] : j.items()) v = without_timestamps(v);
  } else if (j.is_array()) {
    for (auto& v : j) v = without_timestamps(v);
  }
  return j;
}

class RecordingModel {
 public:
  struct Request {
    Json messages;  // llm::to_json of the conversation, timestamps removed
    Json params;    // llm::to_json(ModelRequestParameters): function tools, output
    Json settings;
    std::string instructions;  // of the last request
  };

  explicit RecordingModel(std::vector<llm::ModelResponse> turns, std::string name = "scripted")
      : turns_(std::move(turns)) {
    model_ = std::make_shared<llm::FunctionModel>(
        [this](const std::vector<llm::ModelMessage>& messages,
               const llm::AgentInfo& info) -> core::Result<llm::ModelResponse> {
          std::lock_guard lock(mu_);
          Request r;
          r.messages = without_timestamps(llm::to_json(messages));
          r.params = info.params ? llm::to_json(*info.params) : Json();
          r.settings = info.settings ? llm::to_json(*info.settings) : Json();
          if (!messages.empty() && std::holds_alternative<llm::ModelRequest>(messages.back()))
            r.instructions = std::get<llm::ModelRequest>(messages.back()).instructions;
          requests_.push_back(std::move(r));
          if (requests_.size() > turns_.size())
            return core::failed_precondition("the script has only " +
                                             std::to_string(turns_.size()) + " turns");
          return turns_[requests_.size() - 1];
        },
        nullptr, std::move(name));
  }

  const std::shared_ptr<llm::FunctionModel>& model() const { return model_; }
  std::vector<Request> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

  static llm::ModelResponse python_call(const std::string& call_id, const std::string& code) {
    llm::ModelResponse r;
    r.parts.push_back(llm::ToolCallPart{"execute_python", Json{{"code", code}}, call_id, "", {}});
    return r;
  }
  static llm::ModelResponse tool_call(const std::string& call_id, const std::string& name,
                                      Json args) {
    llm::ModelResponse r;
    r.parts.push_back(llm::ToolCallPart{name, std::move(args), call_id, "", {}});
    return r;
  }
  static llm::ModelResponse text(const std::string& answer) {
    llm::ModelResponse r;
    r.parts.push_back(llm::TextPart{answer});
    return r;
  }

 private:
  mutable std::mutex mu_;
  std::vector<llm::ModelResponse> turns_;
  std::vector<Request> requests_;  // GUARDED_BY(mu_)
  std::shared_ptr<llm::FunctionModel> model_;
};

class ScriptedAgent : public codeact::CodeActAgent {
 public:
  ScriptedAgent(std::string name, std::shared_ptr<RecordingModel> model)
      : CodeActAgent(std::move(name)), model_(std::move(model)) {}
  core::Result<std::shared_ptr<llm::Model>> llm_model(const codeact::AgentBuilder&) const override {
    return std::shared_ptr<llm::Model>(model_->model());
  }

 private:
  std::shared_ptr<RecordingModel> model_;
};

}  // namespace codeact::testing
