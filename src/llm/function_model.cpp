#include "codeact/llm/function_model.hpp"

#include <cassert>

#include "codeact/core/time.hpp"

namespace codeact::llm {

using core::Result;

namespace {

void fill_defaults(ModelResponse& response, const std::string& model_name) {
  if (response.model_name.empty()) response.model_name = model_name;
  if (response.provider_name.empty()) response.provider_name = "function";
  if (response.timestamp.empty()) response.timestamp = core::now_rfc3339();
  if (response.usage.requests == 0) response.usage.requests = 1;
}

}  // namespace

FunctionModel::FunctionModel(Function function, StreamFunction stream_function,
                             std::string model_name)
    : function_(std::move(function)),
      stream_function_(std::move(stream_function)),
      model_name_(std::move(model_name)) {
  assert(function_ || stream_function_);
}

Result<ModelResponse> FunctionModel::request(const std::vector<ModelMessage>& messages,
                                             const ModelSettings& settings,
                                             const ModelRequestParameters& params,
                                             const core::CancelToken* cancel) {
  if (cancel != nullptr && cancel->cancelled())
    return core::cancelled("function model: request cancelled");
  AgentInfo info{&params, &settings};
  if (function_) {
    CODEACT_TRY(auto response, function_(messages, info));
    fill_defaults(response, model_name_);
    return response;
  }
  StreamHandler drop = [](const ModelStreamEvent&) { return true; };
  CODEACT_TRY(auto response, stream_function_(messages, info, drop));
  fill_defaults(response, model_name_);
  return response;
}

Result<ModelResponse> FunctionModel::request_stream(const std::vector<ModelMessage>& messages,
                                                    const ModelSettings& settings,
                                                    const ModelRequestParameters& params,
                                                    const StreamHandler& on_event,
                                                    const core::CancelToken* cancel) {
  if (cancel != nullptr && cancel->cancelled())
    return core::cancelled("function model: request cancelled");
  if (!stream_function_) return Model::request_stream(messages, settings, params, on_event, cancel);
  AgentInfo info{&params, &settings};
  bool stopped = false;
  StreamHandler emit = [&](const ModelStreamEvent& event) {
    if (stopped) return false;
    if (cancel != nullptr && cancel->cancelled()) stopped = true;
    if (!stopped && !on_event(event)) stopped = true;
    return !stopped;
  };
  CODEACT_TRY(auto response, stream_function_(messages, info, emit));
  if (stopped) return core::cancelled("function model: stream stopped by its consumer");
  fill_defaults(response, model_name_);
  on_event(FinalResponseEvent{response});
  return response;
}

}  // namespace codeact::llm
