// The HTTP transports: Streamable HTTP (POST per message, JSON or SSE answers, Mcp-Session-Id,
// an optional GET stream for server notifications) and the older HTTP+SSE transport (a GET event
// stream that announces the POST endpoint and carries every answer).
#include <fmt/format.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "codeact/core/http_client.hpp"
#include "codeact/core/log.hpp"
#include "codeact/core/sse.hpp"
#include "codeact/core/strings.hpp"
#include "transports_internal.hpp"

namespace codeact::mcp {
namespace {

core::Error status_error(const McpServerConfig& c, int status, std::string_view body) {
  std::string msg = fmt::format("MCP server '{}' ({}) answered HTTP {}: {}", c.name, c.url, status,
                                core::abbreviate(body, 300));
  if (status == 401) msg += " (check the server's `headers` in app_conf.yml)";
  return core::Error(core::code_from_http_status(status), std::move(msg));
}

// Scheme + authority of an absolute URL: "http://h:1/a/b" -> "http://h:1".
std::string origin_of(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  auto slash = url.find('/', scheme + 3);
  return slash == std::string::npos ? url : url.substr(0, slash);
}

std::string resolve_url(const std::string& base, const std::string& ref) {
  if (ref.rfind("http://", 0) == 0 || ref.rfind("https://", 0) == 0) return ref;
  if (!ref.empty() && ref[0] == '/') return origin_of(base) + ref;
  auto slash = base.rfind('/');
  return base.substr(0, slash + 1) + ref;
}

// Delivers each JSON value carried by SSE "message" events (or events without a type).
bool deliver_event(const McpServerConfig& c, const TransportHandlers& h, const core::SseEvent& ev) {
  if (ev.event != "message" || ev.data.empty()) return false;
  auto j = core::parse_json(ev.data, "MCP message");
  if (!j.ok() || !(j->is_object() || j->is_array())) {
    h.on_malformed(core::data_loss(
        fmt::format("MCP server '{}' sent an event that is not a JSON-RPC message: '{}'", c.name,
                    core::abbreviate(ev.data, 300))));
    return false;
  }
  h.on_message(std::move(j).value());
  return true;
}

bool is_response_to(const Json& msg, const Json& id) {
  if (msg.is_array()) {
    for (const auto& m : msg) {
      if (is_response_to(m, id)) return true;
    }
    return false;
  }
  return msg.is_object() && !msg.contains("method") && msg.contains("id") && msg["id"] == id;
}

class StreamableHttpTransport final : public McpTransport {
 public:
  StreamableHttpTransport(McpServerConfig config, std::shared_ptr<core::HttpTransport> http)
      : config_(std::move(config)), http_(std::move(http)) {}
  ~StreamableHttpTransport() override { close(); }

  core::Status start(TransportHandlers handlers, std::chrono::milliseconds) override {
    handlers_ = std::move(handlers);
    return core::ok_status();
  }

  void set_protocol_version(const std::string& version) override {
    {
      std::lock_guard lock(mu_);
      protocol_version_ = version;
    }
    // Server-initiated messages (tools/list_changed) come on a GET stream, when offered.
    std::lock_guard lock(mu_);
    if (!listener_.joinable() && !closed_) listener_ = std::thread([this] { listen(); });
  }

  core::Status send(const Json& message, std::chrono::milliseconds timeout,
                    const core::CancelToken* cancel) override {
    core::HttpRequest req;
    req.method = "POST";
    req.url = config_.url;
    req.headers = request_headers();
    req.headers.emplace_back("Content-Type", "application/json");
    req.headers.emplace_back("Accept", "application/json, text/event-stream");
    req.body = core::dump_json(message);
    req.timeout = timeout;
    req.cancel = cancel ? cancel : &closing_;
    Json wanted = message.is_object() && message.contains("method") && message.contains("id")
                      ? message["id"]
                      : Json();
    // The answer is either one JSON document or an event stream; tell them apart by the first
    // byte, so SSE events can be handled as they arrive.
    enum class Kind { kUnknown, kJson, kSse } kind = Kind::kUnknown;
    std::string body;
    core::SseParser sse;
    bool answered = false;
    const bool initializing = message.is_object() && message.value("method", "") == "initialize";
    req.on_body = [&](std::string_view chunk) {
      if (kind == Kind::kUnknown) {
        size_t i = chunk.find_first_not_of(" \t\r\n");
        if (i == std::string_view::npos) {
          body.append(chunk);
          return true;
        }
        kind = (chunk[i] == '{' || chunk[i] == '[') ? Kind::kJson : Kind::kSse;
        if (kind == Kind::kSse && !body.empty()) {
          std::string head = std::move(body);
          body.clear();
          sse.feed(head, [&](core::SseEvent&&) {});
        }
      }
      if (kind == Kind::kJson) {
        body.append(chunk);
        return true;
      }
      if (body.size() < 4096) body.append(chunk.substr(0, 4096 - body.size()));
      sse.feed(chunk, [&](core::SseEvent&& ev) {
        if (ev.event != "message" || ev.data.empty()) return;
        auto j = core::parse_json(ev.data, "MCP message");
        if (j.ok() && !wanted.is_null() && is_response_to(*j, wanted)) answered = true;
        deliver_event(config_, handlers_, ev);
      });
      // The stream may stay open after our answer; we have what we came for. (Not for
      // initialize: the session id arrives in the headers, which an aborted transfer loses.)
      return !(answered && !initializing);
    };
    auto r = http_->send(req);
    if (!r.ok()) {
      if (answered && r.error().code() == core::Code::kCancelled) return core::ok_status();
      if (r.error().code() == core::Code::kDeadlineExceeded) {
        return core::deadline_exceeded(
            fmt::format("MCP server '{}' ({}) did not answer within {} ms", config_.name,
                        config_.url, timeout.count()));
      }
      return r.error().with_context(fmt::format("MCP server '{}' ({})", config_.name, config_.url));
    }
    std::string sid = r->header("mcp-session-id");
    if (!sid.empty()) {
      std::lock_guard lock(mu_);
      session_id_ = sid;
    }
    if (r->status == 404 && has_session()) {
      std::lock_guard lock(mu_);
      session_id_.clear();
      return core::unavailable(
          fmt::format("MCP server '{}' ({}) forgot our session (HTTP 404); it will be "
                      "initialized again",
                      config_.name, config_.url));
    }
    if (r->status < 200 || r->status >= 300) return status_error(config_, r->status, body);
    if (kind == Kind::kJson && !body.empty()) {
      auto j = core::parse_json(body, "MCP answer");
      if (!j.ok() || !(j->is_object() || j->is_array())) {
        handlers_.on_malformed(core::data_loss(
            fmt::format("MCP server '{}' answered with something that is not JSON-RPC: '{}'",
                        config_.name, core::abbreviate(body, 300))));
        return core::ok_status();
      }
      handlers_.on_message(std::move(j).value());
    }
    return core::ok_status();
  }

  void close() override {
    std::string sid;
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      closed_ = true;
      sid = session_id_;
    }
    closing_.cancel();
    if (listener_.joinable()) listener_.join();
    if (!sid.empty()) {
      // Ends the session on the server (best effort).
      core::HttpRequest req;
      req.method = "DELETE";
      req.url = config_.url;
      req.headers = request_headers();
      req.timeout = std::chrono::milliseconds(2000);
      (void)http_->send(req);
    }
  }

 private:
  bool has_session() {
    std::lock_guard lock(mu_);
    return !session_id_.empty();
  }

  core::Headers request_headers() {
    core::Headers h = config_.headers;
    std::lock_guard lock(mu_);
    if (!session_id_.empty()) h.emplace_back("Mcp-Session-Id", session_id_);
    if (!protocol_version_.empty()) h.emplace_back("MCP-Protocol-Version", protocol_version_);
    return h;
  }

  void listen() {
    core::HttpRequest req;
    req.method = "GET";
    req.url = config_.url;
    req.headers = request_headers();
    req.headers.emplace_back("Accept", "text/event-stream");
    req.cancel = &closing_;
    core::SseParser sse;
    req.on_body = [&](std::string_view chunk) {
      sse.feed(chunk, [&](core::SseEvent&& ev) { deliver_event(config_, handlers_, ev); });
      return true;
    };
    auto r = http_->send(req);
    if (r.ok() && r->status != 200) {
      core::log().debug("mcp[{}]: no server event stream (HTTP {})", config_.name, r->status);
    }
  }

  McpServerConfig config_;
  std::shared_ptr<core::HttpTransport> http_;
  TransportHandlers handlers_;
  core::CancelToken closing_;
  std::mutex mu_;
  std::string session_id_;        // GUARDED_BY(mu_)
  std::string protocol_version_;  // GUARDED_BY(mu_)
  bool closed_ = false;           // GUARDED_BY(mu_)
  std::thread listener_;          // GUARDED_BY(mu_)
};

class SseTransport final : public McpTransport {
 public:
  explicit SseTransport(McpServerConfig config)
      : config_(std::move(config)), http_(core::default_transport()) {}
  ~SseTransport() override { close(); }

  core::Status start(TransportHandlers handlers, std::chrono::milliseconds timeout) override {
    handlers_ = std::move(handlers);
    stream_ = std::thread([this] { listen(); });
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [this] { return !endpoint_.empty() || stream_ended_; })) {
      return core::deadline_exceeded(
          fmt::format("MCP server '{}' ({}) did not announce its message endpoint within {} ms",
                      config_.name, config_.url, timeout.count()));
    }
    if (endpoint_.empty()) return stream_error_;
    return core::ok_status();
  }

  core::Status send(const Json& message, std::chrono::milliseconds timeout,
                    const core::CancelToken* cancel) override {
    std::string endpoint;
    {
      std::lock_guard lock(mu_);
      if (stream_ended_) return stream_error_;
      endpoint = endpoint_;
    }
    core::HttpRequest req;
    req.method = "POST";
    req.url = endpoint;
    req.headers = config_.headers;
    req.headers.emplace_back("Content-Type", "application/json");
    req.body = core::dump_json(message);
    req.timeout = timeout.count() > 0 ? std::min(timeout, std::chrono::milliseconds(30000))
                                      : std::chrono::milliseconds(30000);
    req.cancel = cancel ? cancel : &closing_;
    auto r = http_->send(req);
    if (!r.ok())
      return r.error().with_context(fmt::format("MCP server '{}' ({})", config_.name, endpoint));
    if (r->status < 200 || r->status >= 300) return status_error(config_, r->status, r->body);
    return core::ok_status();
  }

  void close() override {
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      closed_ = true;
    }
    closing_.cancel();
    if (stream_.joinable()) stream_.join();
  }

 private:
  void listen() {
    core::HttpRequest req;
    req.method = "GET";
    req.url = config_.url;
    req.headers = config_.headers;
    req.headers.emplace_back("Accept", "text/event-stream");
    req.cancel = &closing_;
    core::SseParser sse;
    std::string head;
    req.on_body = [&](std::string_view chunk) {
      if (head.size() < 2048) head.append(chunk.substr(0, 2048 - head.size()));
      sse.feed(chunk, [&](core::SseEvent&& ev) {
        if (ev.event == "endpoint") {
          std::lock_guard lock(mu_);
          endpoint_ = resolve_url(config_.url, ev.data);
          cv_.notify_all();
          return;
        }
        deliver_event(config_, handlers_, ev);
      });
      return true;
    };
    auto r = http_->send(req);
    core::Error why = core::unavailable(
        fmt::format("MCP server '{}' ({}) closed its event stream", config_.name, config_.url));
    if (!r.ok()) {
      why = r.error().with_context(fmt::format("MCP server '{}' ({})", config_.name, config_.url));
    } else if (r->status != 200) {
      why = status_error(config_, r->status, head);
    }
    bool expected;
    {
      std::lock_guard lock(mu_);
      stream_ended_ = true;
      stream_error_ = why;
      expected = closed_;
      cv_.notify_all();
    }
    if (!expected) handlers_.on_closed(why);
  }

  McpServerConfig config_;
  std::shared_ptr<core::HttpTransport> http_;
  TransportHandlers handlers_;
  core::CancelToken closing_;
  std::thread stream_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::string endpoint_;                                           // GUARDED_BY(mu_)
  bool stream_ended_ = false;                                      // GUARDED_BY(mu_)
  core::Error stream_error_ = core::unavailable("not connected");  // GUARDED_BY(mu_)
  bool closed_ = false;                                            // GUARDED_BY(mu_)
};

}  // namespace

std::unique_ptr<McpTransport> make_streamable_http_transport(const McpServerConfig& config) {
  return make_streamable_http_transport(config, core::default_transport());
}

std::unique_ptr<McpTransport> make_streamable_http_transport(
    const McpServerConfig& config, std::shared_ptr<core::HttpTransport> http) {
  return std::make_unique<StreamableHttpTransport>(config, std::move(http));
}

std::unique_ptr<McpTransport> make_sse_transport(const McpServerConfig& config) {
  return std::make_unique<SseTransport>(config);
}

}  // namespace codeact::mcp
