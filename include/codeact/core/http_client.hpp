// HTTP client on libcurl, behind the HttpTransport seam.
//
// One request per send(); the transport is thread-safe (each call uses its own curl easy handle,
// connections are pooled per thread). Requests can target a unix socket (the Docker engine),
// stream the response body to a callback (SSE, docker build progress), stream the request body
// from a callback (image import), time out, and be cancelled through a CancelToken.
// Transport failures come back as Unavailable ("could not connect to ..."), DeadlineExceeded or
// Cancelled errors; an HTTP error status is NOT an error at this layer: callers read status.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codeact/core/cancel.hpp"
#include "codeact/core/result.hpp"

namespace codeact::core {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method = "GET";
  std::string url;  // absolute; for a unix socket use "http://localhost/path"
  Headers headers;
  std::string body;
  // Total time allowed for the request; 0 = no limit. Default: none.
  std::chrono::milliseconds timeout{0};
  std::chrono::milliseconds connect_timeout{10000};
  // When not empty, connect to this unix-domain socket instead of the URL's host.
  std::string unix_socket;
  // When set, response body bytes are passed here as they arrive instead of being collected in
  // HttpResponse::body. Return false to abort the transfer (send() then returns Cancelled).
  std::function<bool(std::string_view chunk)> on_body;
  // When set, the request body is read from here (return 0 at the end) instead of `body`;
  // sent chunked unless body_size is given.
  std::function<size_t(char* buffer, size_t max)> body_source;
  std::optional<uint64_t> body_size;
  const CancelToken* cancel = nullptr;
};

struct HttpResponse {
  int status = 0;
  Headers headers;  // names lower-cased
  std::string body;

  // Value of the first header with this (case-insensitive) name, or "".
  std::string header(std::string_view name) const;
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  virtual Result<HttpResponse> send(const HttpRequest& request) = 0;
};

// The production transport.
class CurlTransport final : public HttpTransport {
 public:
  CurlTransport();
  Result<HttpResponse> send(const HttpRequest& request) override;
};

// A process-wide CurlTransport.
std::shared_ptr<HttpTransport> default_transport();

// Percent-encodes a query-string component.
std::string url_encode(std::string_view s);

}  // namespace codeact::core
