// Fuzzes the Gemini provider's response parsers (generateContent, streamGenerateContent?alt=sse).
// The input is the body of the provider's answer, read as an event stream by request_stream and
// as one JSON document by request (provider_fuzz_support.hpp).
#include "codeact/llm/gemini_model.hpp"
#include "provider_fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  codeact::fuzz::fuzz_provider<codeact::llm::GeminiModel, codeact::llm::ProviderOptions>(
      codeact::fuzz::as_text(data, size));
  return 0;
}
