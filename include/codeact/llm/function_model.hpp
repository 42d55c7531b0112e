// FunctionModel: a C++ callback plays the model, for tests and examples (pydantic-ai's
// FunctionModel). The callback sees the whole conversation and the request parameters and
// returns the response; an optional stream function produces the events itself.
//
// Thread-safety: as thread-safe as the callbacks given.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codeact/llm/model.hpp"

namespace codeact::llm {

// What a FunctionModel's callbacks are told about the request.
struct AgentInfo {
  const ModelRequestParameters* params = nullptr;
  const ModelSettings* settings = nullptr;
};

class FunctionModel : public Model {
 public:
  using Function = std::function<core::Result<ModelResponse>(
      const std::vector<ModelMessage>& messages, const AgentInfo& info)>;
  // Emits events through `emit` (which returns false when the consumer wants to stop) and returns
  // the final response; FunctionModel sends the FinalResponseEvent itself.
  using StreamFunction = std::function<core::Result<ModelResponse>(
      const std::vector<ModelMessage>& messages, const AgentInfo& info, const StreamHandler& emit)>;

  // REQUIRES: function or stream_function is set. Without a stream function, request_stream
  // replays the function's response as events; without a function, request drives the stream
  // function and drops the events.
  explicit FunctionModel(Function function, StreamFunction stream_function = nullptr,
                         std::string model_name = "function");

  core::Result<ModelResponse> request(const std::vector<ModelMessage>& messages,
                                      const ModelSettings& settings,
                                      const ModelRequestParameters& params,
                                      const core::CancelToken* cancel = nullptr) override;
  core::Result<ModelResponse> request_stream(const std::vector<ModelMessage>& messages,
                                             const ModelSettings& settings,
                                             const ModelRequestParameters& params,
                                             const StreamHandler& on_event,
                                             const core::CancelToken* cancel = nullptr) override;
  std::string model_name() const override { return model_name_; }
  std::string system() const override { return "function"; }

 private:
  Function function_;
  StreamFunction stream_function_;
  std::string model_name_;
};

}  // namespace codeact::llm
