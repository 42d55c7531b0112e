// Model names as users write them, and the factory that turns one into a provider Model.
//
//   openai:gpt-4.1                       OpenAI chat completions (OPENAI_API_KEY, OPENAI_BASE_URL)
//   google-gla:gemini-2.5-pro            Gemini generateContent (GEMINI_API_KEY or GOOGLE_API_KEY,
//                                        GEMINI_BASE_URL); also "gemini:<model>"
//   anthropic:claude-sonnet-4-5          Anthropic Messages (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL)
//   ollama:qwen2.5-coder                 OpenAI-compatible at http://localhost:11434/v1
//                                        (OLLAMA_BASE_URL)
//   openai-compatible:<model>@<base-url> any OpenAI-compatible endpoint (vLLM, llama.cpp, ...)
//   test / function                      TestModel (for examples); FunctionModel is built in code
//
// Keys and base URLs come from, in order: ModelConfig fields, the app_conf.yml `llm.<provider>`
// block ({api_key, base_url, model_name}; "gemini" for google-gla), then the environment.
// The `llm` block may also tune retries and timeouts for every provider:
//   llm:
//     retry: {max_attempts: 4, initial_backoff_seconds: 0.5, max_backoff_seconds: 20,
//             max_total_seconds: 120}
//     request_timeout_seconds: 600
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "codeact/core/config.hpp"
#include "codeact/core/http_client.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/llm/model.hpp"
#include "codeact/llm/provider_options.hpp"

namespace codeact::llm {

// Everything a provider needs besides the model name.
struct ModelConfig {
  std::string api_key;   // "" = from the llm config block or the environment
  std::string base_url;  // "" = from the llm config block, the environment, or the default
  core::Headers extra_headers;
  RetryPolicy retry;
  // Per-attempt timeout when ModelSettings::timeout_seconds is not set.
  std::chrono::milliseconds request_timeout{600000};
  std::shared_ptr<core::HttpTransport> transport;  // null = core::default_transport()
  core::EnvLookup env;                             // null = core::getenv_string
  // The app_conf.yml `llm` block, e.g. {"gemini": {"api_key": "...", "model_name": "..."}}.
  Json llm_config = Json::object();
  ModelSettings default_settings;
};

struct ModelName {
  std::string
      provider;       // "openai", "google-gla", "anthropic", "ollama", "openai-compatible", "test"
  std::string model;  // "gpt-4.1"
  std::string base_url;  // only for "openai-compatible:<model>@<base-url>"
  bool operator==(const ModelName&) const = default;
};

// Parses "provider:model". InvalidArgument for an unknown provider or an empty model, listing
// the accepted forms. "gemini:" and "google:" are accepted for "google-gla:".
core::Result<ModelName> parse_model_name(std::string_view name);

// Builds the model. An empty `name` uses llm.gemini.model_name from config.llm_config (the
// seed's default) as a google-gla model. A missing key is FailedPrecondition naming the
// environment variable and config key to set, e.g.
//   "model \"openai:gpt-4.1\": no API key; set OPENAI_API_KEY or llm.openai.api_key".
core::Result<std::unique_ptr<Model>> make_model(std::string_view name,
                                                const ModelConfig& config = {});

// Same, with the app_conf.yml `llm` block given directly.
core::Result<std::unique_ptr<Model>> make_model(std::string_view name, const Json& llm_config);

}  // namespace codeact::llm
