// Options shared by the HTTP providers (OpenAI-compatible, Gemini, Anthropic): where to connect,
// with which key, how long to wait and how to retry.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "codeact/core/clock.hpp"
#include "codeact/core/http_client.hpp"
#include "codeact/llm/model.hpp"

namespace codeact::llm {

// When and how often a provider request is retried: on 429, 5xx (and 408) responses and on
// connection errors; never on 400/401/403/404. A streamed request is retried only while no event
// has reached the caller. The wait before attempt n+1 is initial_backoff * multiplier^(n-1),
// capped at max_backoff, or the server's Retry-After (seconds or HTTP date; also OpenAI's
// retry-after-ms) when that is longer. Waits and elapsed time are measured on
// ProviderOptions::clock.
struct RetryPolicy {
  int max_attempts = 4;  // including the first; 1 = no retry
  std::chrono::milliseconds initial_backoff{500};
  double backoff_multiplier = 2.0;
  std::chrono::milliseconds max_backoff{20000};
  // No new attempt starts when it would begin later than this after the first one.
  std::chrono::milliseconds max_total{120000};
  // A Retry-After longer than this is not waited for: the error is returned instead.
  std::chrono::milliseconds max_retry_after{60000};
};

struct ProviderOptions {
  std::string model_name;  // as the provider names it: "gpt-4.1"
  std::string api_key;     // may be empty for local servers (Ollama, vLLM, llama.cpp)
  std::string base_url;    // "" = the provider's public endpoint
  // Reported by Model::system(): "openai", "ollama", "openai-compatible", "google-gla", ...
  std::string provider_name;
  core::Headers extra_headers;
  RetryPolicy retry;
  // Per-attempt time limit when ModelSettings::timeout_seconds is not set.
  std::chrono::milliseconds request_timeout{600000};
  std::shared_ptr<core::HttpTransport> transport;  // null = core::default_transport()
  // What the retry loop sleeps on and reads the time from (a Retry-After date is compared with
  // its system_now()). null = core::real_clock().
  std::shared_ptr<core::Clock> clock;
  ModelSettings default_settings;
};

}  // namespace codeact::llm
