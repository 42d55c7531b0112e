// Google Gemini over the Generative Language API ("google-gla"):
// POST {base_url}/v1beta/models/{model}:generateContent and
// :streamGenerateContent?alt=sse, key in the x-goog-api-key header.
//
// Function declarations (parametersJsonSchema), functionCall / functionResponse parts, system
// instruction, structured output via responseJsonSchema, thought signatures carried on
// ToolCallPart::provider_details["thought_signature"] and sent back. Thread-safe.
#pragma once

#include "codeact/llm/model.hpp"
#include "codeact/llm/provider_options.hpp"

namespace codeact::llm {

inline constexpr std::string_view kGeminiBaseUrl = "https://generativelanguage.googleapis.com";

class GeminiModel : public Model {
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
  std::string model_name() const override { return options_.model_name; }
  std::string system() const override { return options_.provider_name; }
  ModelSettings default_settings() const override { return options_.default_settings; }

  Json build_request_body(const std::vector<ModelMessage>& messages, const ModelSettings& settings,
                          const ModelRequestParameters& params) const;

 private:
  ProviderOptions options_;
};

}  // namespace codeact::llm
