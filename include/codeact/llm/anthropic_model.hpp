// Anthropic Messages API: POST {base_url}/v1/messages with x-api-key and
// anthropic-version: 2023-06-01.
//
// tools / tool_use / tool_result blocks, tool_choice auto/any (+ disable_parallel_tool_use),
// streaming (message_start, content_block_start/delta/stop with text_delta, input_json_delta,
// thinking_delta, signature_delta, message_delta, message_stop, error). max_tokens is required
// by the API: ModelSettings::max_tokens or kAnthropicDefaultMaxTokens. Structured output in
// kNative mode is obtained as in kPrompted (schema in the system prompt). Thread-safe.
#pragma once

#include "codeact/llm/provider_model.hpp"

namespace codeact::llm {

inline constexpr std::string_view kAnthropicBaseUrl = "https://api.anthropic.com";
inline constexpr std::string_view kAnthropicVersion = "2023-06-01";
inline constexpr int64_t kAnthropicDefaultMaxTokens = 4096;

class AnthropicModel : public ProviderModel<> {
 public:
  // provider_name defaults to "anthropic", base_url to kAnthropicBaseUrl (a base ending in "/v1"
  // is used as is, otherwise "/v1" is appended).
  explicit AnthropicModel(ProviderOptions options);

  core::Result<ModelResponse> request(const std::vector<ModelMessage>& messages,
                                      const ModelSettings& settings,
                                      const ModelRequestParameters& params,
                                      const core::CancelToken* cancel = nullptr) override;
  core::Result<ModelResponse> request_stream(const std::vector<ModelMessage>& messages,
                                             const ModelSettings& settings,
                                             const ModelRequestParameters& params,
                                             const StreamHandler& on_event,
                                             const core::CancelToken* cancel = nullptr) override;

  Json build_request_body(const std::vector<ModelMessage>& messages, const ModelSettings& settings,
                          const ModelRequestParameters& params, bool stream) const;
};

}  // namespace codeact::llm
