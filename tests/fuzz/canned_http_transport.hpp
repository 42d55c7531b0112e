// CannedHttpTransport: an HttpTransport whose answers come from a function (the fuzz input), so
// a provider or MCP client reads fuzzed bytes through its real HTTP code path. A streamed answer
// (HttpRequest::on_body) arrives in pieces whose sizes come from the answer itself
// (fuzz_input.hpp's ChunkSizes); a consumer that stops the transfer gets Cancelled, as from curl.
// Thread-safe when `answer` is.
#pragma once

#include <functional>
#include <utility>

#include "codeact/core/http_client.hpp"
#include "fuzz_input.hpp"

namespace codeact::fuzz {

class CannedHttpTransport final : public core::HttpTransport {
 public:
  using Answer = std::function<core::Result<core::HttpResponse>(const core::HttpRequest&)>;
  explicit CannedHttpTransport(Answer answer) : answer_(std::move(answer)) {}

  core::Result<core::HttpResponse> send(const core::HttpRequest& request) override {
    auto response = answer_(request);
    if (!response.ok() || !request.on_body) return response;
    std::string body = std::move(response->body);
    response->body.clear();
    ChunkSizes sizes(body);
    for (std::string_view piece : sizes.split(body)) {
      if (!request.on_body(piece)) return core::cancelled("the consumer stopped the transfer");
    }
    return response;
  }

 private:
  Answer answer_;
};

// A 200 answer carrying `body` with `content_type`.
inline core::HttpResponse ok_response(std::string body, std::string content_type) {
  core::HttpResponse r;
  r.status = 200;
  r.headers.emplace_back("content-type", std::move(content_type));
  r.body = std::move(body);
  return r;
}

}  // namespace codeact::fuzz
