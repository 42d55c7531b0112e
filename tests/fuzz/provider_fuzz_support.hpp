// What the provider stream targets (openai_stream, gemini_stream, anthropic_stream) share: a
// model whose HTTP transport answers with the fuzz input, asked once streamed (the input read as
// an SSE body, in pieces) and once plain (the input read as a JSON body). A stream that succeeds
// must end with a FinalResponseEvent holding exactly the response request_stream returns.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "canned_http_transport.hpp"
#include "codeact/llm/model.hpp"
#include "codeact/llm/provider_options.hpp"

namespace codeact::fuzz {

// A conversation with one tool, so tool-call parts in the answer refer to something.
inline const std::vector<llm::ModelMessage>& fuzz_conversation() {
  static const std::vector<llm::ModelMessage> messages = {
      llm::ModelRequest::user_prompt("Sum the numbers 1 to 10 in Python.")};
  return messages;
}

inline llm::ModelRequestParameters fuzz_parameters() {
  llm::ModelRequestParameters p;
  p.function_tools.push_back(llm::ToolDefinition{
      "run_code", "Run Python code in the sandbox",
      core::Json::parse(
          R"({"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]})"),
      true, "function"});
  return p;
}

// Fills the options every provider takes: a transport answering `body`, no retries.
template <typename Options>
Options fuzz_options(std::string_view body, const char* content_type) {
  Options o;
  o.model_name = "fuzz-model";
  o.api_key = "sk-fuzz";
  o.base_url = "http://127.0.0.1:9/v1";
  o.retry.max_attempts = 1;
  std::string answer(body);
  std::string type(content_type);
  o.transport = std::make_shared<CannedHttpTransport>(
      [answer, type](const core::HttpRequest&) -> core::Result<core::HttpResponse> {
        return ok_response(answer, type);
      });
  return o;
}

template <typename ModelType, typename Options>
void fuzz_provider(std::string_view body) {
  ModelType streamed(fuzz_options<Options>(body, "text/event-stream"));
  std::optional<llm::ModelResponse> final_response;
  auto r = streamed.request_stream(fuzz_conversation(), {}, fuzz_parameters(),
                                   [&](const llm::ModelStreamEvent& e) {
                                     if (auto* f = std::get_if<llm::FinalResponseEvent>(&e))
                                       final_response = f->response;
                                     return true;
                                   });
  if (r.ok() && (!final_response || !(*final_response == *r))) {
    std::fprintf(stderr, "request_stream succeeded but its FinalResponseEvent %s\n",
                 final_response ? "differs from the response it returned" : "never came");
    std::abort();
  }
  ModelType plain(fuzz_options<Options>(body, "application/json"));
  (void)plain.request(fuzz_conversation(), {}, fuzz_parameters());
}

}  // namespace codeact::fuzz
