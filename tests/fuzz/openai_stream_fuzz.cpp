// Fuzzes the OpenAI provider's response parsers (chat completions, also every compatible server:
// Ollama, vLLM, llama.cpp). The input is the body of the provider's answer, read as an event
// stream by request_stream and as one JSON document by request (provider_fuzz_support.hpp).
#include "codeact/llm/openai_model.hpp"
#include "provider_fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  codeact::fuzz::fuzz_provider<codeact::llm::OpenAIModel, codeact::llm::OpenAIOptions>(
      codeact::fuzz::as_text(data, size));
  return 0;
}
