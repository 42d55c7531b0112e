// McpClient: JSON-RPC over a transport, the MCP lifecycle, timeouts/cancellation and restarts.
#include "codeact/mcp/client.hpp"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "codeact/core/log.hpp"
#include "codeact/core/strings.hpp"

namespace codeact::mcp {

const std::vector<std::string>& supported_protocol_versions() {
  static const std::vector<std::string> v = {"2025-11-25", "2025-06-18", "2025-03-26",
                                             "2024-11-05"};
  return v;
}

McpTool McpTool::from_json(const Json& j) {
  McpTool t;
  t.name = core::json_string(j, "name");
  t.title = core::json_string(j, "title");
  t.description = core::json_string(j, "description");
  if (j.contains("inputSchema") && j["inputSchema"].is_object()) t.input_schema = j["inputSchema"];
  if (j.contains("outputSchema") && j["outputSchema"].is_object())
    t.output_schema = j["outputSchema"];
  if (j.contains("annotations") && j["annotations"].is_object()) t.annotations = j["annotations"];
  return t;
}

Json McpTool::to_json() const {
  Json j{{"name", name}, {"description", description}, {"inputSchema", input_schema}};
  if (!title.empty()) j["title"] = title;
  if (!output_schema.is_null()) j["outputSchema"] = output_schema;
  if (!annotations.is_null()) j["annotations"] = annotations;
  return j;
}

std::string McpCallResult::text() const {
  std::vector<std::string> texts;
  for (const auto& c : content) {
    if (c.is_object() && core::json_string(c, "type") == "text")
      texts.push_back(core::json_string(c, "text"));
  }
  return core::join(texts, "\n");
}

// The client's state, behind the header so that its mutexes and helpers stay private. Transport
// callbacks hold it by pointer: it lives as long as the McpClient, whose destructor closes the
// transport (and so stops its callbacks) first.
struct McpClient::Impl {
  struct Pending {
    bool done = false;
    std::optional<Json> result;
    std::optional<core::Error> error;
  };

  struct Connection {
    std::unique_ptr<McpTransport> transport;
    std::mutex mu;
    std::condition_variable cv;
    std::map<std::string, std::shared_ptr<Pending>> pending;  // GUARDED_BY(mu); key = id.dump()
    bool broken = false;                                      // GUARDED_BY(mu): restart on next use
    std::optional<core::Error> closed;                        // GUARDED_BY(mu)
    McpServerInfo info;
  };

  Impl(McpServerConfig config, TransportFactory make_transport)
      : config_(std::move(config)), make_transport_(std::move(make_transport)) {}

  core::Result<std::shared_ptr<Connection>> ensure_connected();
  core::Result<Json> request_on(const std::shared_ptr<Connection>& conn, const std::string& method,
                                Json params, std::chrono::milliseconds timeout,
                                const core::CancelToken* cancel);
  core::Result<std::vector<McpTool>> list_tools();
  void handle_message(const std::shared_ptr<Connection>& conn, Json message);
  void fail_all(const std::shared_ptr<Connection>& conn, const core::Error& error, bool closed);
  void drop(const std::shared_ptr<Connection>& conn);
  void close();
  std::string who() const;

  const McpServerConfig config_;
  const TransportFactory make_transport_;
  mutable std::mutex mu_;
  std::shared_ptr<Connection> conn_;           // GUARDED_BY(mu_); null = not connected
  std::mutex connect_mu_;                      // serializes connection attempts
  std::optional<std::vector<McpTool>> tools_;  // GUARDED_BY(mu_)
  int64_t tools_cached_generation_ = -1;       // GUARDED_BY(mu_)
  std::atomic<int64_t> tools_generation_{0};
  std::atomic<int64_t> next_id_{1};
  std::function<void()> on_tools_changed_;  // GUARDED_BY(mu_)
};

McpClient::McpClient(McpServerConfig config)
    : McpClient(std::move(config), [](const McpServerConfig& c) { return make_transport(c); }) {}

McpClient::McpClient(McpServerConfig config, TransportFactory make_transport)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(make_transport))) {}

McpClient::~McpClient() { impl_->close(); }

const McpServerConfig& McpClient::config() const { return impl_->config_; }

int64_t McpClient::tools_generation() const { return impl_->tools_generation_.load(); }

std::string McpClient::Impl::who() const {
  return fmt::format("MCP server '{}' ({})", config_.name, config_.describe());
}

void McpClient::set_on_tools_changed(std::function<void()> callback) {
  std::lock_guard lock(impl_->mu_);
  impl_->on_tools_changed_ = std::move(callback);
}

McpServerInfo McpClient::server_info() const {
  std::lock_guard lock(impl_->mu_);
  return impl_->conn_ ? impl_->conn_->info : McpServerInfo{};
}

void McpClient::close() { impl_->close(); }

void McpClient::Impl::close() {
  std::shared_ptr<Connection> c;
  {
    std::lock_guard lock(mu_);
    c = std::move(conn_);
    conn_.reset();
  }
  if (c) {
    c->transport->close();
    fail_all(c, core::unavailable(fmt::format("{}: the connection was closed", who())), true);
  }
}

void McpClient::Impl::fail_all(const std::shared_ptr<Connection>& conn, const core::Error& error,
                               bool closed) {
  std::lock_guard lock(conn->mu);
  conn->broken = true;
  if (closed && !conn->closed) conn->closed = error;
  for (auto& [id, p] : conn->pending) {
    if (!p->done) {
      p->done = true;
      p->error = error;
    }
  }
  conn->cv.notify_all();
}

void McpClient::Impl::drop(const std::shared_ptr<Connection>& conn) {
  {
    std::lock_guard lock(conn->mu);
    conn->broken = true;
  }
}

void McpClient::Impl::handle_message(const std::shared_ptr<Connection>& conn, Json msg) {
  if (msg.is_array()) {
    for (auto& m : msg) handle_message(conn, std::move(m));
    return;
  }
  if (!msg.is_object()) return;
  bool has_method = msg.contains("method") && msg["method"].is_string();
  if (!has_method && msg.contains("id")) {
    std::lock_guard lock(conn->mu);
    auto it = conn->pending.find(msg["id"].dump());
    if (it == conn->pending.end()) return;  // late answer to a cancelled request
    auto& p = it->second;
    p->done = true;
    if (msg.contains("error")) {
      const Json& e = msg["error"];
      int64_t code = core::json_int(e, "code", 0);
      std::string text = core::json_string(e, "message", "unknown error");
      if (e.contains("data") && !e["data"].is_null())
        text += " (" + core::dump_json(e["data"]).substr(0, 500) + ")";
      std::string m = fmt::format("{}: {} (JSON-RPC error {})", who(), text, code);
      p->error = code == -32601                                       ? core::unimplemented(m)
                 : code == -32602 || code == -32600 || code == -32700 ? core::invalid_argument(m)
                 : code == -32002                                     ? core::not_found(m)
                 : code == -32603                                     ? core::internal_error(m)
                                                                      : core::unknown_error(m);
    } else {
      p->result = msg.contains("result") ? std::move(msg["result"]) : Json::object();
    }
    conn->cv.notify_all();
    return;
  }
  if (!has_method) return;
  std::string method = msg["method"].get<std::string>();
  if (msg.contains("id")) {
    // A request from the server.
    Json reply{{"jsonrpc", "2.0"}, {"id", msg["id"]}};
    if (method == "ping") {
      reply["result"] = Json::object();
    } else if (method == "roots/list") {
      reply["result"] = Json{{"roots", Json::array()}};
    } else {
      reply["error"] = Json{{"code", -32601}, {"message", "codeact does not serve " + method}};
    }
    (void)conn->transport->send(reply, std::chrono::milliseconds(5000), nullptr);
    return;
  }
  if (method == "notifications/tools/list_changed") {
    tools_generation_.fetch_add(1);
    std::function<void()> cb;
    {
      std::lock_guard lock(mu_);
      cb = on_tools_changed_;
    }
    core::log().info("mcp[{}]: tool list changed", config_.name);
    if (cb) cb();
  } else if (method == "notifications/message") {
    const Json& p = msg.value("params", Json::object());
    Json data = p.value("data", Json());
    core::log().info("mcp[{}] log ({}): {}", config_.name, core::json_string(p, "level", "info"),
                     data.is_string() ? data.get<std::string>() : core::dump_json(data));
  }
}

core::Result<std::shared_ptr<McpClient::Impl::Connection>> McpClient::Impl::ensure_connected() {
  std::lock_guard connect_lock(connect_mu_);
  std::shared_ptr<Connection> old;
  {
    std::lock_guard lock(mu_);
    if (conn_) {
      std::lock_guard clock(conn_->mu);
      if (!conn_->broken && !conn_->closed) return conn_;
    }
    old = std::move(conn_);
    conn_.reset();
    tools_.reset();
  }
  if (old) {
    core::log().info("mcp[{}]: restarting the connection", config_.name);
    old->transport->close();
    fail_all(old, core::unavailable(fmt::format("{}: the connection was restarted", who())), true);
  }
  auto conn = std::make_shared<Connection>();
  conn->transport = make_transport_(config_);
  std::weak_ptr<Connection> weak = conn;
  TransportHandlers h;
  h.on_message = [this, weak](Json m) {
    if (auto c = weak.lock()) handle_message(c, std::move(m));
  };
  h.on_closed = [this, weak](const core::Error& e) {
    if (auto c = weak.lock()) fail_all(c, e, true);
  };
  h.on_malformed = [this, weak](const core::Error& e) {
    if (auto c = weak.lock()) fail_all(c, e, false);
  };
  auto fail = [&](core::Error e) -> core::Error {
    conn->transport->close();
    std::string tail = conn->transport->stderr_tail();
    std::string msg = e.message();
    if (!tail.empty() && msg.find(tail) == std::string::npos)
      msg += "; its last stderr lines:\n" + tail;
    return core::Error(e.code(), msg);
  };
  auto started = conn->transport->start(h, config_.init_timeout);
  if (!started.ok()) return fail(started.error());
  Json params{{"protocolVersion", supported_protocol_versions().front()},
              {"capabilities", Json{{"roots", Json{{"listChanged", false}}}}},
              {"clientInfo", Json{{"name", "codeact"}, {"version", "0.1.0"}}}};
  auto init = request_on(conn, "initialize", params, config_.init_timeout, nullptr);
  if (!init.ok()) {
    return fail(core::Error(init.error().code(),
                            fmt::format("initializing failed: {}", init.error().message())));
  }
  std::string version = core::json_string(*init, "protocolVersion");
  const auto& ok = supported_protocol_versions();
  if (std::find(ok.begin(), ok.end(), version) == ok.end()) {
    return fail(core::failed_precondition(
        fmt::format("{} speaks MCP protocol version '{}'; codeact speaks {}", who(), version,
                    core::join(ok, ", "))));
  }
  conn->info.protocol_version = version;
  conn->info.capabilities = init->value("capabilities", Json::object());
  conn->info.instructions = core::json_string(*init, "instructions");
  if (init->contains("serverInfo")) {
    conn->info.name = core::json_string((*init)["serverInfo"], "name");
    conn->info.version = core::json_string((*init)["serverInfo"], "version");
  }
  conn->transport->set_protocol_version(version);
  auto sent =
      conn->transport->send(Json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
                            config_.init_timeout, nullptr);
  if (!sent.ok()) return fail(sent.error());
  core::log().debug("mcp[{}]: initialized ({} {}, protocol {})", config_.name, conn->info.name,
                    conn->info.version, version);
  std::lock_guard lock(mu_);
  conn_ = conn;
  return conn;
}

core::Result<Json> McpClient::Impl::request_on(const std::shared_ptr<Connection>& conn,
                                               const std::string& method, Json params,
                                               std::chrono::milliseconds timeout,
                                               const core::CancelToken* cancel) {
  if (timeout.count() <= 0) timeout = config_.timeout;
  Json id = next_id_.fetch_add(1);
  auto pending = std::make_shared<Pending>();
  {
    std::lock_guard lock(conn->mu);
    if (conn->closed) return *conn->closed;
    conn->pending[id.dump()] = pending;
  }
  auto forget = [&] {
    std::lock_guard lock(conn->mu);
    conn->pending.erase(id.dump());
  };
  Json msg{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) msg["params"] = std::move(params);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto sent = conn->transport->send(msg, timeout, cancel);
  if (!sent.ok()) {
    forget();
    core::Code code = sent.error().code();
    if (code == core::Code::kDeadlineExceeded || code == core::Code::kCancelled) {
      // Streamable HTTP waits for the answer inside send(): tell the server to stop.
      std::string reason = code == core::Code::kCancelled ? "cancelled by the caller" : "timed out";
      (void)conn->transport->send(Json{{"jsonrpc", "2.0"},
                                       {"method", "notifications/cancelled"},
                                       {"params", Json{{"requestId", id}, {"reason", reason}}}},
                                  std::chrono::milliseconds(2000), nullptr);
    }
    if (code == core::Code::kUnavailable || code == core::Code::kDeadlineExceeded) drop(conn);
    return sent.error();
  }
  std::unique_lock lock(conn->mu);
  while (!pending->done) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline || (cancel && cancel->cancelled())) break;
    conn->cv.wait_until(lock, std::min(deadline, now + std::chrono::milliseconds(50)));
  }
  if (pending->done) {
    conn->pending.erase(id.dump());
    if (pending->error) return *pending->error;
    return std::move(*pending->result);
  }
  conn->pending.erase(id.dump());
  bool cancelled = cancel && cancel->cancelled();
  // A hung server is restarted on next use: it may never answer anything again.
  if (!cancelled) conn->broken = true;
  lock.unlock();
  std::string reason = cancelled ? "cancelled by the caller"
                                 : fmt::format("no answer within {} ms", timeout.count());
  (void)conn->transport->send(Json{{"jsonrpc", "2.0"},
                                   {"method", "notifications/cancelled"},
                                   {"params", Json{{"requestId", id}, {"reason", reason}}}},
                              std::chrono::milliseconds(2000), nullptr);
  if (cancelled) return core::cancelled(fmt::format("{}: {} was cancelled", who(), method));
  return core::deadline_exceeded(
      fmt::format("{} did not answer {} within {:.1f}s; the request was cancelled and the "
                  "server will be restarted on next use",
                  who(), method, static_cast<double>(timeout.count()) / 1000));
}

core::Status McpClient::connect() {
  CODEACT_TRY(auto conn, impl_->ensure_connected());
  (void)conn;
  return core::ok_status();
}

core::Result<Json> McpClient::request(const std::string& method, Json params,
                                      std::chrono::milliseconds timeout,
                                      const core::CancelToken* cancel) {
  CODEACT_TRY(auto conn, impl_->ensure_connected());
  return impl_->request_on(conn, method, std::move(params), timeout, cancel);
}

core::Result<std::vector<McpTool>> McpClient::list_tools() { return impl_->list_tools(); }

core::Result<std::vector<McpTool>> McpClient::Impl::list_tools() {
  CODEACT_TRY(auto conn, ensure_connected());
  int64_t generation = tools_generation_.load();
  {
    std::lock_guard lock(mu_);
    if (tools_ && tools_cached_generation_ == generation && conn_ == conn) return *tools_;
  }
  std::vector<McpTool> tools;
  std::set<std::string> cursors;
  Json params = Json::object();
  for (int page = 0; page < 1000; ++page) {
    CODEACT_TRY(Json r,
                request_on(conn, "tools/list", params, std::chrono::milliseconds(0), nullptr));
    if (r.contains("tools") && r["tools"].is_array()) {
      for (const auto& t : r["tools"]) tools.push_back(McpTool::from_json(t));
    }
    std::string cursor = core::json_string(r, "nextCursor");
    if (cursor.empty()) break;
    if (!cursors.insert(cursor).second) {
      return core::data_loss(
          fmt::format("{}: tools/list returned cursor '{}' twice", who(), cursor));
    }
    params = Json{{"cursor", cursor}};
  }
  std::lock_guard lock(mu_);
  tools_ = tools;
  tools_cached_generation_ = generation;
  return tools;
}

core::Result<McpCallResult> McpClient::call_tool(const std::string& name, const Json& arguments,
                                                 std::chrono::milliseconds timeout,
                                                 const core::CancelToken* cancel) {
  Json params{{"name", name}, {"arguments", arguments.is_null() ? Json::object() : arguments}};
  auto r = request("tools/call", params, timeout, cancel);
  if (!r.ok()) return r.error().with_context(fmt::format("tools/call {}", name));
  McpCallResult out;
  out.is_error = core::json_bool(*r, "isError");
  if (r->contains("content") && (*r)["content"].is_array())
    out.content = std::move((*r)["content"]);
  if (r->contains("structuredContent")) out.structured = std::move((*r)["structuredContent"]);
  return out;
}

}  // namespace codeact::mcp
