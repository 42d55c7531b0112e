// The thin HTTP layer of `codeact server` (DESIGN.md §6, STYLE.md "The HTTP layer stays thin"):
// plain request and response values, an event stream for Server-Sent Events, and HttpServer,
// which hides Boost.Beast on Asio behind them.
//
//   HttpServer server({.listen = "127.0.0.1:8000"}, [&](const HttpRequest& r) { return ...; });
//   server.start();            // binds; ok or Unavailable naming the address
//   ...                         // server.port() is the bound port (--listen ...:0 picks one)
//   server.stop();             // streams get their last chunk, connections close
//
// Connections are handled on one I/O thread: an open event stream waiting for events costs a
// socket and a buffer, never a thread. Handlers run on a fixed pool of `handler_threads`, so a
// handler may block (a Temporal call, waiting for an answer) without stalling I/O; a handler
// never throws (one that does is answered 500 and logged). Bodies past `max_body_bytes` (PUT:
// `max_upload_bytes`) are answered 413 without being read to the end.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::server {

using core::Json;

struct HttpRequest {
  std::string method;    // "GET", "POST", ...
  std::string path;      // decoded percent-escapes, without the query: "/v1/sessions/s-1"
  std::string raw_path;  // as sent (percent-escapes kept)
  std::string query;     // after '?', as sent
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string peer;  // the client's address

  // "" when absent. `name` is lower-case.
  std::string header(std::string_view name) const;
  // The decoded value of a query parameter; nullopt when absent.
  std::optional<std::string> query_param(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  HttpResponse& set(std::string name, std::string value);
  static HttpResponse json(int status, const Json& body);
  // {"error": {"code": <code_name>, "message"}} with core::http_status(code) — the one mapping
  // from the project's error codes to HTTP statuses.
  static HttpResponse error(const core::Error& error);
  // The same body with an explicit status (413, 415: states core::Code has no name for).
  static HttpResponse error(int status, core::Code code, const std::string& message);
};

// The open side of a streamed response (SSE). Thread-safe; send() never blocks: chunks are
// queued and written by the I/O thread. A client that reads too slowly (more than
// `max_queued_bytes` waiting) is disconnected rather than buffered without bound.
class EventStream {
 public:
  virtual ~EventStream() = default;
  // Queues `chunk`; false once the stream is closed (the client went away, or close()).
  virtual bool send(std::string chunk) = 0;
  // Ends the response after what is queued.
  virtual void close() = 0;
  virtual bool closed() const = 0;
};

// A streamed response: the status and headers are written, then `on_open` gets the stream (on
// the handler pool; it may keep the stream and return at once).
struct StreamedResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::function<void(std::shared_ptr<EventStream>)> on_open;
};

using HttpReply = std::variant<HttpResponse, StreamedResponse>;
using HttpHandler = std::function<HttpReply(const HttpRequest&)>;

struct HttpServerOptions {
  std::string listen = "127.0.0.1:8000";  // host:port; port 0 = any free port
  size_t max_body_bytes = 1 << 20;
  size_t max_upload_bytes = 64u << 20;  // PUT bodies
  size_t max_queued_bytes = 8u << 20;   // per event stream
  int handler_threads = 16;
  // Headers added to every response (security headers).
  std::vector<std::pair<std::string, std::string>> default_headers;
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, HttpHandler handler);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving. InvalidArgument for a malformed address, Unavailable when it
  // cannot be bound.
  core::Status start();
  // The bound port (after start()).
  int port() const;
  // Sends `last_chunk` to every open stream and closes them, then stops accepting and closes
  // every connection; returns when the I/O thread and the handler pool have ended. Idempotent.
  void stop(const std::string& last_chunk = "");
  // Open event streams now.
  size_t open_streams() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "host:port" -> (host, port). InvalidArgument when malformed.
core::Result<std::pair<std::string, int>> parse_listen_address(const std::string& listen);
// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(const std::string& host);
// Percent-decoding ('+' stays '+'; query_param decodes '+' as a space). InvalidArgument for a bad
// escape.
core::Result<std::string> percent_decode(std::string_view s);

}  // namespace codeact::server
