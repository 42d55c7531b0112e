// The handlers of `codeact server` (docs/server.md): the seed's endpoints, /v1 runs and
// sessions on the durable workflows, their files, variables and events, login, the page.
//
// Every handler parses the request into C++ values at once, checks who asks (auth.hpp) and
// whether the resource is theirs (the workflow's memo `codeact_principal`), and answers JSON;
// an error is HttpResponse::error (core::http_status). Handlers never throw. Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "codeact/codeact/agent_builder.hpp"
#include "codeact/core/cancel.hpp"
#include "codeact/durable/payloads.hpp"
#include "codeact/sandbox/sandbox_backend.hpp"
#include "codeact/server/auth.hpp"
#include "codeact/server/events.hpp"
#include "codeact/server/http.hpp"
#include "codeact/temporal/client.hpp"

namespace codeact::server {

// app_conf.yml `server:` (every key optional), strict like durable: an unknown key or a wrong
// type is InvalidArgument naming it.
struct ServerConfig {
  std::string listen = "127.0.0.1:8000";
  std::vector<ApiKey> api_keys;  // with CODEACT_API_KEYS
  size_t max_body_bytes = 1 << 20;
  size_t max_upload_bytes = 64u << 20;
  int rate_per_minute = 600;
  int max_active_runs = 8;  // running runs and sessions per principal
  double chat_timeout_seconds = 600;
  // Where the page's sign-ins are kept across restarts (Authenticator); "" = memory only.
  // server.sessions_file, else the CLI's <data dir>/server/<sessions_file_name(keys)>.
  std::string sessions_file;
  // Where the removals of deleted sandboxes still due are kept across restarts (SandboxSweeper);
  // "" = memory only. The CLI's <data dir>/server/sweeps-<12 hex of sha256(task queue)>.json.
  std::string sweeps_file;
  static core::Result<ServerConfig> from_config(const core::Json& app_config,
                                                const std::string& env_api_keys);
};

struct ApiDeps {
  temporal::Client* client = nullptr;  // REQUIRED
  std::string task_queue;              // REQUIRED
  codeact::AgentBuilder builder;       // the default model, config
  durable::ActivityPolicies policies;
  std::shared_ptr<sandbox::SandboxBackend> sandboxes;  // REQUIRED: files, variables, delete
  EventHub* hub = nullptr;                             // REQUIRED (CodeActServer sets it)
  // The LiveOutput of the worker hosted in this process (null: none, or --no-worker).
  std::shared_ptr<durable::LiveOutput> live_output;
};

class SandboxSweeper;

class Api {
 public:
  Api(ServerConfig config, ApiDeps deps);
  ~Api();
  HttpReply handle(const HttpRequest& request);
  // Wakes every handler waiting for an answer (POST /chat): they answer 503.
  void shutdown();
  const ServerConfig& config() const { return config_; }

 private:
  struct Caller {
    std::string principal;
    std::string auth;  // "none" | "key" | "cookie"
    bool may_write = false;
  };
  HttpReply route(const HttpRequest& r, const Caller& caller);
  core::Result<Caller> authenticate(const HttpRequest& r) const;
  int active_count(const std::string& principal);
  bool is_deleted(const std::string& id);

  ServerConfig config_;
  ApiDeps deps_;
  Authenticator auth_;
  RateLimiter rate_;
  core::CancelToken stopping_;
  std::mutex mu_;
  std::map<std::string, std::set<std::string>> recent_;  // principal -> ids started here
  std::set<std::string> deleted_;  // ids deleted here (Temporal forgets them a little later)
  std::unique_ptr<SandboxSweeper> sweeper_;  // removes deleted sandboxes again, later
};

}  // namespace codeact::server
