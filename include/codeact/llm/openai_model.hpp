// OpenAI chat completions (POST {base_url}/chat/completions), also serving every compatible
// server: Ollama, vLLM, llama.cpp's server, LM Studio, OpenRouter, ...
//
// Tools and tool_choice, parallel tool calls, SSE streaming (tool-call arguments split over
// many chunks, usage in the last chunk via stream_options.include_usage), structured output via
// response_format json_schema, reasoning_content / reasoning deltas as ThinkingPart.
// Thread-safe.
#pragma once

#include "codeact/llm/provider_model.hpp"

namespace codeact::llm {

inline constexpr std::string_view kOpenAIBaseUrl = "https://api.openai.com/v1";
inline constexpr std::string_view kOllamaBaseUrl = "http://localhost:11434/v1";

struct OpenAIOptions : ProviderOptions {
  // Send the token limit as "max_completion_tokens" (api.openai.com; required by reasoning
  // models) instead of "max_tokens" (what compatible servers understand). Default: true when
  // provider_name is "openai".
  std::optional<bool> use_max_completion_tokens;
  // Ask for usage in the last stream chunk. Default: true.
  bool stream_include_usage = true;
};

class OpenAIModel : public ProviderModel<OpenAIOptions> {
 public:
  // provider_name defaults to "openai", base_url to kOpenAIBaseUrl.
  explicit OpenAIModel(OpenAIOptions options);

  core::Result<ModelResponse> request(const std::vector<ModelMessage>& messages,
                                      const ModelSettings& settings,
                                      const ModelRequestParameters& params,
                                      const core::CancelToken* cancel = nullptr) override;
  core::Result<ModelResponse> request_stream(const std::vector<ModelMessage>& messages,
                                             const ModelSettings& settings,
                                             const ModelRequestParameters& params,
                                             const StreamHandler& on_event,
                                             const core::CancelToken* cancel = nullptr) override;

  // The JSON body request() would send (for tests and debugging).
  Json build_request_body(const std::vector<ModelMessage>& messages, const ModelSettings& settings,
                          const ModelRequestParameters& params, bool stream) const;
};

}  // namespace codeact::llm
