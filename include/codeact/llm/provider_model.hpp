// ProviderModel: what the HTTP provider models (OpenAIModel, GeminiModel, AnthropicModel) share:
// their options, with the provider's name, its public endpoint and core::default_transport()
// filled in where left empty, and the Model accessors that answer from them. The options are
// read-only after construction, so a provider model is as thread-safe as its transport.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "codeact/llm/model.hpp"
#include "codeact/llm/provider_options.hpp"

namespace codeact::llm {

template <typename Options = ProviderOptions>
class ProviderModel : public Model {
  static_assert(std::is_base_of_v<ProviderOptions, Options>);

 public:
  std::string model_name() const override { return options_.model_name; }
  std::string system() const override { return options_.provider_name; }
  ModelSettings default_settings() const override { return options_.default_settings; }
  // The options in force, defaults filled in.
  const Options& options() const { return options_; }

 protected:
  ProviderModel(Options options, std::string_view default_provider_name,
                std::string_view default_base_url)
      : options_(std::move(options)) {
    if (options_.provider_name.empty()) options_.provider_name = std::string(default_provider_name);
    if (options_.base_url.empty()) options_.base_url = std::string(default_base_url);
    if (!options_.transport) options_.transport = core::default_transport();
  }

  Options options_;
};

}  // namespace codeact::llm
