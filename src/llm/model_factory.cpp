#include "codeact/llm/model_factory.hpp"

#include <cctype>
#include <chrono>
#include <optional>

#include "codeact/core/strings.hpp"
#include "codeact/llm/anthropic_model.hpp"
#include "codeact/llm/gemini_model.hpp"
#include "codeact/llm/openai_model.hpp"
#include "codeact/llm/test_model.hpp"

namespace codeact::llm {

using core::Result;

namespace {

constexpr std::string_view kAcceptedForms =
    "accepted: openai:<model>, google-gla:<model> (or gemini:<model>), anthropic:<model>, "
    "ollama:<model>, "
    "openai-compatible:<model>@<base-url>, test";

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Where a provider's settings live: the app_conf.yml llm block key and the environment variables.
struct ProviderKeys {
  std::vector<std::string> config_blocks;
  std::vector<std::string> key_env;
  std::string base_url_env;
  bool key_required;
};

ProviderKeys keys_for(const std::string& provider) {
  if (provider == "openai") return {{"openai"}, {"OPENAI_API_KEY"}, "OPENAI_BASE_URL", true};
  if (provider == "google-gla")
    return {{"gemini", "google"}, {"GEMINI_API_KEY", "GOOGLE_API_KEY"}, "GEMINI_BASE_URL", true};
  if (provider == "anthropic")
    return {{"anthropic"}, {"ANTHROPIC_API_KEY"}, "ANTHROPIC_BASE_URL", true};
  if (provider == "ollama") return {{"ollama"}, {}, "OLLAMA_BASE_URL", false};
  return {{"openai_compatible", "openai-compatible"}, {}, "", false};
}

std::string block_string(const Json& llm, const std::vector<std::string>& blocks, const char* key) {
  if (!llm.is_object()) return "";
  for (const auto& b : blocks) {
    auto it = llm.find(b);
    if (it != llm.end() && it->is_object()) {
      std::string v = core::json_string(*it, key);
      if (!v.empty()) return v;
    }
  }
  return "";
}

std::optional<std::chrono::milliseconds> seconds_field(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number() || it->get<double>() < 0) return std::nullopt;
  return std::chrono::milliseconds(static_cast<int64_t>(it->get<double>() * 1000));
}

// llm.retry and llm.request_timeout_seconds from app_conf.yml.
core::Status apply_llm_tuning(const Json& llm, ProviderOptions& options) {
  if (!llm.is_object()) return core::ok_status();
  if (auto t = seconds_field(llm, "request_timeout_seconds")) options.request_timeout = *t;
  auto retry = llm.find("retry");
  if (retry == llm.end() || retry->is_null()) return core::ok_status();
  if (!retry->is_object()) {
    return core::invalid_argument(
        "llm.retry must be a mapping such as {max_attempts: 4, max_total_seconds: 120}");
  }
  if (auto it = retry->find("max_attempts"); it != retry->end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1) {
      return core::invalid_argument("llm.retry.max_attempts must be an integer >= 1");
    }
    options.retry.max_attempts = static_cast<int>(it->get<int64_t>());
  }
  if (auto v = seconds_field(*retry, "initial_backoff_seconds")) options.retry.initial_backoff = *v;
  if (auto v = seconds_field(*retry, "max_backoff_seconds")) options.retry.max_backoff = *v;
  if (auto v = seconds_field(*retry, "max_total_seconds")) options.retry.max_total = *v;
  if (auto v = seconds_field(*retry, "max_retry_after_seconds")) options.retry.max_retry_after = *v;
  return core::ok_status();
}

}  // namespace

Result<ModelName> parse_model_name(std::string_view name) {
  const std::string trimmed = core::trim(name);
  std::string_view n = trimmed;
  if (n == "test") return ModelName{"test", "test", ""};
  size_t colon = n.find(':');
  if (colon == std::string_view::npos) {
    // A bare model name: infer the provider from well-known prefixes.
    if (starts_with(n, "gpt-") || starts_with(n, "o1") || starts_with(n, "o3") ||
        starts_with(n, "o4")) {
      return ModelName{"openai", std::string(n), ""};
    }
    if (starts_with(n, "gemini")) return ModelName{"google-gla", std::string(n), ""};
    if (starts_with(n, "claude")) return ModelName{"anthropic", std::string(n), ""};
    return core::invalid_argument("model name \"" + std::string(name) +
                                  "\" has no provider prefix; " + std::string(kAcceptedForms));
  }
  std::string provider(n.substr(0, colon));
  std::string model(n.substr(colon + 1));
  if (provider == "gemini" || provider == "google") provider = "google-gla";
  ModelName result{provider, model, ""};
  if (provider == "openai-compatible") {
    size_t at = std::string::npos;
    for (size_t i = model.find('@'); i != std::string::npos; i = model.find('@', i + 1)) {
      std::string_view rest = std::string_view(model).substr(i + 1);
      if (starts_with(rest, "http://") || starts_with(rest, "https://")) {
        at = i;
        break;
      }
    }
    if (at == std::string::npos) {
      return core::invalid_argument("model name \"" + std::string(name) +
                                    "\": expected openai-compatible:<model>@<base-url>, e.g. "
                                    "openai-compatible:qwen2.5-coder@http://localhost:8000/v1");
    }
    result.model = model.substr(0, at);
    result.base_url = model.substr(at + 1);
  } else if (provider != "openai" && provider != "google-gla" && provider != "anthropic" &&
             provider != "ollama") {
    return core::invalid_argument("model name \"" + std::string(name) + "\": unknown provider \"" +
                                  provider + "\"; " + std::string(kAcceptedForms));
  }
  if (result.model.empty()) {
    return core::invalid_argument("model name \"" + std::string(name) + "\": the model after \"" +
                                  provider + ":\" is empty");
  }
  return result;
}

Result<std::unique_ptr<Model>> make_model(std::string_view name_in, const ModelConfig& config) {
  std::string name(name_in);
  if (name.empty()) {
    std::string seed_model = block_string(config.llm_config, {"gemini"}, "model_name");
    if (seed_model.empty()) {
      return core::invalid_argument(
          "no model given: pass a model name such as google-gla:gemini-2.5-pro or set "
          "llm.gemini.model_name in "
          "app_conf.yml");
    }
    name = seed_model.find(':') == std::string::npos ? "google-gla:" + seed_model : seed_model;
  }
  CODEACT_TRY(auto parsed, parse_model_name(name));
  if (parsed.provider == "test") {
    TestModelOptions options;
    return std::unique_ptr<Model>(std::make_unique<TestModel>(options));
  }

  const core::EnvLookup env = config.env ? config.env : core::EnvLookup(core::getenv_string);
  auto env_value = [&](const std::string& var) -> std::string {
    if (var.empty()) return "";
    auto v = env(var);
    return v ? *v : "";
  };
  ProviderKeys keys = keys_for(parsed.provider);

  ProviderOptions options;
  options.model_name = parsed.model;
  options.provider_name = parsed.provider;
  options.extra_headers = config.extra_headers;
  options.retry = config.retry;
  options.request_timeout = config.request_timeout;
  CODEACT_TRY_STATUS(apply_llm_tuning(config.llm_config, options));
  options.transport = config.transport;
  options.default_settings = config.default_settings;

  options.api_key = config.api_key;
  if (options.api_key.empty())
    options.api_key = block_string(config.llm_config, keys.config_blocks, "api_key");
  for (const auto& var : keys.key_env) {
    if (!options.api_key.empty()) break;
    options.api_key = env_value(var);
  }
  if (options.api_key.empty() && keys.key_required) {
    std::string vars;
    for (const auto& var : keys.key_env)
      vars += (vars.empty() ? "" : " (or ") + var + (vars.empty() ? "" : ")");
    return core::failed_precondition("model \"" + name + "\": no API key; set " + vars +
                                     " or llm." + keys.config_blocks.front() +
                                     ".api_key in app_conf.yml");
  }

  options.base_url = config.base_url;
  if (options.base_url.empty()) options.base_url = parsed.base_url;
  if (options.base_url.empty())
    options.base_url = block_string(config.llm_config, keys.config_blocks, "base_url");
  if (options.base_url.empty()) options.base_url = env_value(keys.base_url_env);

  if (parsed.provider == "google-gla") {
    return std::unique_ptr<Model>(std::make_unique<GeminiModel>(std::move(options)));
  }
  if (parsed.provider == "anthropic") {
    return std::unique_ptr<Model>(std::make_unique<AnthropicModel>(std::move(options)));
  }
  OpenAIOptions openai;
  static_cast<ProviderOptions&>(openai) = std::move(options);
  if (parsed.provider == "ollama" && openai.base_url.empty())
    openai.base_url = std::string(kOllamaBaseUrl);
  return std::unique_ptr<Model>(std::make_unique<OpenAIModel>(std::move(openai)));
}

Result<std::unique_ptr<Model>> make_model(std::string_view name, const Json& llm_config) {
  ModelConfig config;
  config.llm_config = llm_config;
  return make_model(name, config);
}

}  // namespace codeact::llm
