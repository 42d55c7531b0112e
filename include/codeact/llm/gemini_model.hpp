// Google Gemini over the Generative Language API ("google-gla"):
// POST {base_url}/v1beta/models/{model}:generateContent and
// :streamGenerateContent?alt=sse, key in the x-goog-api-key header.
//
// Function declarations (parametersJsonSchema), functionCall / functionResponse parts, system
// instruction, structured output via responseJsonSchema, thought signatures carried on
// ToolCallPart::provider_details["thought_signature"] and sent back. Thread-safe.
#pragma once

#include "codeact/llm/provider_model.hpp"

namespace codeact::llm {

inline constexpr std::string_view kGeminiBaseUrl = "https://generativelanguage.googleapis.com";

class GeminiModel : public ProviderModel<> {
 public:
  // provider_name defaults to "google-gla", base_url to kGeminiBaseUrl (a base ending in
  // "/v1beta" or "/v1" is used as is, otherwise "/v1beta" is appended).
  explicit GeminiModel(ProviderOptions options);

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
                          const ModelRequestParameters& params) const;
};

}  // namespace codeact::llm
