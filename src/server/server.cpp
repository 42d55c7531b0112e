#include "codeact/server/server.hpp"

#include <fmt/format.h>

namespace codeact::server {

struct CodeActServer::Impl {
  ServerConfig config;
  EventHub hub;
  Api api;
  HttpServer http;
  bool stopped = false;

  static ApiDeps with_hub(ApiDeps deps, EventHub* hub) {
    deps.hub = hub;
    return deps;
  }
  static HttpServerOptions http_options(const ServerConfig& c) {
    HttpServerOptions o;
    o.listen = c.listen;
    o.max_body_bytes = c.max_body_bytes;
    o.max_upload_bytes = c.max_upload_bytes;
    o.default_headers = {{"X-Content-Type-Options", "nosniff"},
                         {"Referrer-Policy", "no-referrer"},
                         {"X-Frame-Options", "DENY"},
                         {"Server", "codeact"}};
    return o;
  }
  Impl(ServerConfig c, ApiDeps deps)
      : config(c),
        hub(*deps.client, deps.live_output),
        api(c, with_hub(std::move(deps), &hub)),
        http(http_options(c), [this](const HttpRequest& r) { return api.handle(r); }) {}
};

CodeActServer::CodeActServer(ServerConfig config, ApiDeps deps)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(deps))) {}

CodeActServer::~CodeActServer() { stop(); }

core::Status CodeActServer::start() {
  CODEACT_TRY(auto hp, parse_listen_address(impl_->config.listen));
  if (impl_->config.api_keys.empty() && !is_loopback_host(hp.first)) {
    return core::failed_precondition(
        "--listen " + impl_->config.listen +
        " is reachable from other machines, and no API key is configured: set server.api_keys in "
        "app_conf.yml or CODEACT_API_KEYS, or listen on 127.0.0.1");
  }
  return impl_->http.start();
}

int CodeActServer::port() const { return impl_->http.port(); }

std::string CodeActServer::url() const {
  auto hp = parse_listen_address(impl_->config.listen);
  std::string host = hp.ok() ? hp->first : "127.0.0.1";
  if (host == "0.0.0.0" || host == "::") host = "127.0.0.1";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return fmt::format("http://{}:{}/", host, port());
}

EventHub& CodeActServer::hub() { return impl_->hub; }

void CodeActServer::stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->api.shutdown();
  impl_->hub.stop();
  impl_->http.stop("event: shutdown\ndata: {}\n\n");
}

}  // namespace codeact::server
