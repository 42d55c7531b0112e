#include "codeact/server/api.hpp"

#include <fmt/format.h>

#include <thread>

#include "codeact/core/json_reader.hpp"
#include "codeact/core/log.hpp"
#include "codeact/core/strings.hpp"
#include "codeact/core/time.hpp"
#include "codeact/durable/chat_fork.hpp"
#include "codeact/durable/workflows.hpp"
#include "event_waker.hpp"
#include "files.hpp"
#include "openapi.hpp"
#include "page_assets.hpp"
#include "sandbox_sweeper.hpp"

namespace codeact::server {
namespace {

using core::Json;
using core::Result;

constexpr const char* kMemoPrincipal = "codeact_principal";
constexpr const char* kMemoKind = "codeact_kind";
constexpr const char* kMemoTitle = "codeact_title";
constexpr const char* kMemoCreated = "codeact_created";
constexpr const char* kMemoModel = "codeact_model";
constexpr const char* kMemoInput = "codeact_input";
constexpr const char* kCookie = "codeact_session";

HttpResponse ok_json(const Json& j, int status = 200) { return HttpResponse::json(status, j); }
HttpResponse fail(const core::Error& e) { return HttpResponse::error(e); }
// A start refused: its error, with Retry-After when the caller is at the limit of runs.
HttpResponse start_failed(const core::Error& e) {
  auto resp = fail(e);
  if (e.code() == core::Code::kResourceExhausted) resp.set("Retry-After", "30");
  return resp;
}
HttpResponse not_found(const std::string& what) {
  return HttpResponse::error(core::not_found(what + " not found"));
}

bool is_write(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "DELETE" || method == "PATCH";
}

std::string cookie_value(const HttpRequest& r, const std::string& name) {
  for (auto part : core::split(r.header("cookie"), ';')) {
    part = core::trim(part);
    if (part.rfind(name + "=", 0) == 0) return part.substr(name.size() + 1);
  }
  return "";
}

// The JSON object of a request body, or InvalidArgument saying what is wrong.
Result<Json> body_object(const HttpRequest& r, bool allow_empty) {
  if (core::trim(r.body).empty()) {
    if (allow_empty) return Json::object();
    return core::invalid_argument("the request needs a JSON object body");
  }
  const std::string type = r.header("content-type");
  if (!type.empty() && type.find("application/json") == std::string::npos)
    return core::invalid_argument("Content-Type must be application/json, not \"" + type + "\"");
  CODEACT_TRY(Json j, core::parse_json(r.body));
  if (!j.is_object()) return core::invalid_argument("the request body must be a JSON object");
  return j;
}

// Reads optional fields of a create request into `in`; unknown keys are refused.
core::Status read_run_fields(const Json& body, durable::TaskInput& in,
                             const std::set<std::string>& extra) {
  for (const auto& [k, v] : body.items()) {
    static const std::set<std::string> known = {"model", "agent", "network", "packages"};
    if (!known.count(k) && !extra.count(k))
      return core::invalid_argument("unknown field \"" + k + "\"");
  }
  auto str = [&](const char* key, std::string& out) -> core::Status {
    if (!body.contains(key) || body[key].is_null()) return core::ok_status();
    if (!body[key].is_string())
      return core::invalid_argument(std::string(key) + ": must be a string");
    out = body[key].get<std::string>();
    return core::ok_status();
  };
  CODEACT_TRY_STATUS(str("model", in.model));
  CODEACT_TRY_STATUS(str("agent", in.agent));
  if (in.agent.empty()) in.agent = "simple_agent";
  if (body.contains("network") && !body["network"].is_null()) {
    if (!body["network"].is_boolean()) return core::invalid_argument("network: must be a boolean");
    in.network = body["network"].get<bool>();
  }
  if (body.contains("packages") && !body["packages"].is_null()) {
    if (!body["packages"].is_array())
      return core::invalid_argument("packages: must be a list of strings");
    for (const auto& p : body["packages"]) {
      if (!p.is_string() || p.get<std::string>().empty())
        return core::invalid_argument("packages: must be a list of non-empty strings");
      in.python_packages.push_back(p.get<std::string>());
    }
    if (!in.python_packages.empty() && !in.network)
      return core::invalid_argument("packages: need \"network\": true (pip downloads them)");
  }
  return core::ok_status();
}

Result<std::string> text_field(const Json& body, const char* key) {
  if (!body.contains(key) || !body[key].is_string() ||
      core::trim(body[key].get<std::string>()).empty())
    return core::invalid_argument(std::string(key) + ": must be a non-empty string");
  return body[key].get<std::string>();
}

// A fresh id for a message sent to a session: its answer is the turn that carries it back.
std::string new_message_id() { return "msg-" + random_token().substr(0, 16); }

std::string memo_string(const Json& memo, const char* key) {
  return memo.is_object() && memo.contains(key) && memo[key].is_string()
             ? memo[key].get<std::string>()
             : "";
}

}  // namespace

// ---------------------------------------------------------------------------------------------

Result<ServerConfig> ServerConfig::from_config(const Json& app_config,
                                               const std::string& env_api_keys) {
  ServerConfig c;
  Json section =
      app_config.is_object() && app_config.contains("server") ? app_config["server"] : Json();
  Json keys;
  if (!section.is_null()) {
    if (!section.is_object()) return core::invalid_argument("server: must be a mapping");
    for (const auto& [k, v] : section.items()) {
      if (k == "api_keys") {
        keys = v;
      } else if (k == "listen") {
        if (!v.is_string()) return core::invalid_argument("server.listen: must be HOST:PORT");
        c.listen = v.get<std::string>();
      } else if (k == "max_body_bytes" || k == "max_upload_bytes") {
        if (!v.is_number_integer() || v.get<int64_t>() < 1024)
          return core::invalid_argument("server." + k + ": must be an integer >= 1024");
        (k == "max_body_bytes" ? c.max_body_bytes : c.max_upload_bytes) =
            static_cast<size_t>(v.get<int64_t>());
      } else if (k == "rate_per_minute" || k == "max_active_runs") {
        if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 1000000)
          return core::invalid_argument("server." + k + ": must be an integer >= 1");
        (k == "rate_per_minute" ? c.rate_per_minute : c.max_active_runs) =
            static_cast<int>(v.get<int64_t>());
      } else if (k == "sessions_file") {
        if (!v.is_string()) return core::invalid_argument("server.sessions_file: must be a path");
        c.sessions_file = v.get<std::string>();
      } else if (k == "chat_timeout_seconds") {
        if (!v.is_number() || v.get<double>() <= 0 || v.get<double>() > 86400)
          return core::invalid_argument("server.chat_timeout_seconds: must be in (0, 86400]");
        c.chat_timeout_seconds = v.get<double>();
      } else {
        return core::invalid_argument(
            "server." + k +
            ": unknown key (listen, api_keys, max_body_bytes, max_upload_bytes, rate_per_minute, "
            "max_active_runs, chat_timeout_seconds, sessions_file)");
      }
    }
  }
  CODEACT_TRY(c.api_keys, parse_api_keys(keys, env_api_keys));
  return c;
}

Api::Api(ServerConfig config, ApiDeps deps)
    : config_(std::move(config)),
      deps_(std::move(deps)),
      auth_(config_.api_keys, config_.sessions_file),
      rate_(config_.rate_per_minute),
      sweeper_(std::make_unique<SandboxSweeper>(deps_.sandboxes, SandboxSweeper::default_delays(),
                                                config_.sweeps_file)) {}

Api::~Api() = default;

void Api::shutdown() { stopping_.cancel(); }

Result<Api::Caller> Api::authenticate(const HttpRequest& r) const {
  Caller c;
  const std::string authz = r.header("authorization");
  if (!authz.empty()) {
    if (authz.rfind("Bearer ", 0) != 0)
      return core::Error(core::Code::kUnauthenticated, "Authorization must be \"Bearer <key>\"");
    auto p = auth_.principal_of_key(core::trim(authz.substr(7)));
    if (!p) return core::Error(core::Code::kUnauthenticated, "the API key is not valid");
    c.principal = *p;
    c.auth = "key";
    c.may_write = true;
    return c;
  }
  const std::string token = cookie_value(r, kCookie);
  const std::string csrf = r.header("x-csrf-token");
  if (auto s = auth_.session(token)) {
    c.principal = s->principal;
    c.auth = "cookie";
    c.may_write = !csrf.empty() && constant_time_equal(csrf, s->csrf_token);
    return c;
  }
  if (auth_.keys_configured())
    return core::Error(core::Code::kUnauthenticated,
                       "an API key is required: send \"Authorization: Bearer <key>\" or log in");
  c.principal = "local";
  c.auth = "none";
  // A cross-site page can only send "simple" requests without a preflight we never answer:
  // a JSON body, PUT and DELETE are not simple; a matching token is proof too.
  const bool not_simple = r.method == "PUT" || r.method == "DELETE" ||
                          r.header("content-type").find("application/json") != std::string::npos;
  c.may_write =
      not_simple || (!csrf.empty() && constant_time_equal(csrf, auth_.local_csrf_token()));
  return c;
}

bool Api::is_deleted(const std::string& id) {
  std::lock_guard lock(mu_);
  return deleted_.count(id) > 0;
}

int Api::active_count(const std::string& principal) {
  std::set<std::string> ids;
  {
    std::lock_guard lock(mu_);
    ids = recent_[principal];
  }
  auto page = deps_.client->list_workflows("ExecutionStatus = 'Running'", 1000);
  if (page.ok()) {
    for (const auto& e : page->executions)
      if (memo_string(e.memo, kMemoPrincipal) == principal) ids.insert(e.workflow_id);
  }
  int running = 0;
  std::set<std::string> still;
  for (const auto& id : ids) {
    auto d = deps_.client->describe_workflow(id);
    if (d.ok() && d->status == "Running") {
      ++running;
      still.insert(id);
    }
  }
  std::lock_guard lock(mu_);
  auto& mine = recent_[principal];
  for (auto it = mine.begin(); it != mine.end();)
    it = still.count(*it) ? std::next(it) : mine.erase(it);
  return running;
}

HttpReply Api::handle(const HttpRequest& r) {
  // A page of another origin may not drive this server.
  if (const std::string origin = r.header("origin"); !origin.empty()) {
    const std::string host = r.header("host");
    if (origin != "http://" + host && origin != "https://" + host)
      return HttpResponse::error(core::permission_denied("cross-origin requests are refused"));
  }
  const std::string& p = r.path;
  // Open to everyone.
  if (r.method == "GET" || r.method == "HEAD") {
    if (p == "/health") {
      Json h{{"status", "ok"}, {"temporal_connected", false}, {"sandbox_initialized", false}};
      auto d = deps_.client->wait_until_serving(std::chrono::milliseconds(1));
      h["temporal_connected"] = d.ok();
      h["sandbox_initialized"] = deps_.sandboxes != nullptr;
      return ok_json(h);
    }
    if (p == "/" || p == "/index.html") return page_asset("index.html");
    if (p.rfind("/assets/", 0) == 0) return page_asset(p.substr(8));
    if (p == "/openapi.json") return ok_json(openapi_document());
    if (p == "/docs") return docs_page();
  }
  if (r.method == "POST" && p == "/v1/login") {
    auto body = body_object(r, false);
    if (!body.ok()) return fail(body.error());
    auto key = text_field(*body, "api_key");
    if (!key.ok()) return fail(key.error());
    auto principal = auth_.principal_of_key(*key);
    if (!principal)
      return fail(core::Error(core::Code::kUnauthenticated, "the API key is not valid"));
    auto [token, session] = auth_.login(*principal);
    return ok_json({{"principal", session.principal}, {"csrf_token", session.csrf_token}})
        .set("Set-Cookie",
             fmt::format("{}={}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}", kCookie, token,
                         std::chrono::seconds(kCookieSessionLifetime).count()));
  }
  auto caller = authenticate(r);
  if (p == "/v1/me" && r.method == "GET") {
    if (!caller.ok()) {
      return HttpResponse::json(
          401, {{"error", {{"code", "Unauthenticated"}, {"message", caller.error().message()}}},
                {"login_required", true}});
    }
    Json me{{"principal", caller->principal}, {"auth", caller->auth}, {"login_required", false}};
    if (caller->auth == "none") me["csrf_token"] = auth_.local_csrf_token();
    if (caller->auth == "cookie") {
      if (auto s = auth_.session(cookie_value(r, kCookie))) me["csrf_token"] = s->csrf_token;
    }
    return ok_json(me);
  }
  if (!caller.ok()) return fail(caller.error());
  if (is_write(r.method) && !caller->may_write) {
    return fail(core::permission_denied(
        "this write needs the X-CSRF-Token header (GET /v1/me gives it to the page)"));
  }
  if (auto wait = rate_.check(caller->principal)) {
    return HttpResponse::error(429, core::Code::kResourceExhausted,
                               fmt::format("too many requests: {} a minute; try again in {} s",
                                           config_.rate_per_minute, *wait))
        .set("Retry-After", std::to_string(*wait));
  }
  if (r.method == "POST" && p == "/v1/logout") {
    auth_.logout(cookie_value(r, kCookie));
    return HttpResponse{204, {{"Set-Cookie", std::string(kCookie) + "=; Max-Age=0; Path=/"}}, ""};
  }
  return route(r, *caller);
}

// ---------------------------------------------------------------------------------------------
// Resources: runs and sessions, owned through the workflow's memo.

namespace {

struct Kind {
  FeedKind feed;
  const char* name;      // "session" | "run"
  const char* plural;    // "sessions" | "runs"
  const char* workflow;  // the workflow type
  const char* prefix;    // of new ids
};
const Kind kSessionKind{FeedKind::kSession, "session", "sessions", durable::kChatWorkflow, "s-"};
const Kind kRunKind{FeedKind::kRun, "run", "runs", durable::kTaskWorkflow, "r-"};

// How long a message to a session whose run is ending waits for that run to close.
constexpr auto kEndingRunWait = std::chrono::seconds(30);

std::string resource_status(const temporal::WorkflowDescription& d, const std::string& live) {
  if (d.status == "Running") return live.empty() ? "running" : live;
  if (d.status == "Completed") return "completed";
  if (d.status == "Failed") return "failed";
  if (d.status == "Canceled") return "cancelled";
  if (d.status == "Terminated") return "terminated";
  if (d.status == "TimedOut") return "timed_out";
  return d.status;
}

Json resource_json(const Kind& kind, const std::string& id, const Json& memo,
                   const std::string& status) {
  return Json{{"id", id},
              {"kind", kind.name},
              {"status", status},
              {"title", memo_string(memo, kMemoTitle)},
              {"created_at", memo_string(memo, kMemoCreated)},
              {"model", memo_string(memo, kMemoModel)},
              {"sandbox_id", id}};
}

// A resource just started, before its workflow has said anything.
Json created_json(const Kind& kind, const std::string& id, const std::string& title,
                  const std::string& model) {
  Json memo{{kMemoTitle, core::abbreviate(title, 80)},
            {kMemoCreated, core::now_rfc3339()},
            {kMemoModel, model}};
  return resource_json(kind, id, memo, "starting");
}

}  // namespace

HttpReply Api::route(const HttpRequest& r, const Caller& caller) {
  const std::string& p = r.path;
  auto& client = *deps_.client;

  // The workflow `id` of `kind`, if the caller owns it; NotFound otherwise (never "forbidden":
  // another principal's resource does not exist for the caller).
  auto owned = [&](const Kind& kind,
                   const std::string& id) -> Result<temporal::WorkflowDescription> {
    if (is_deleted(id))
      return core::not_found(std::string(kind.name) + " \"" + id + "\" not found");
    auto d = client.describe_workflow(id);
    if (!d.ok() || d->workflow_type != kind.workflow ||
        memo_string(d->memo, kMemoPrincipal) != caller.principal)
      return core::not_found(std::string(kind.name) + " \"" + id + "\" not found");
    return d;
  };

  auto start = [&](const Kind& kind, const Json& input, const std::string& title,
                   const std::string& model, const durable::ChatMessage& first_message,
                   const std::string& id) -> Result<std::string> {
    if (active_count(caller.principal) >= config_.max_active_runs) {
      return core::Error(core::Code::kResourceExhausted,
                         fmt::format("{} runs and sessions are running already (the limit); end "
                                     "one or wait",
                                     config_.max_active_runs));
    }
    temporal::StartWorkflowOptions so;
    so.id = id;
    so.task_queue = deps_.task_queue;
    so.id_reuse_policy = temporal::IdReusePolicy::kAllowDuplicate;
    // The memo keeps the run's TaskInput (a session's: its chat's base), so a session that ended
    // can be started again with it.
    Json base_input = input;
    if (kind.feed == FeedKind::kSession) {
      auto chat = durable::ChatInput::from_json(input);
      if (!chat.ok()) return std::move(chat).error();
      base_input = chat->base.to_json();
      // A started session rebuilds the conversation from its turns (send_message): the history
      // a fork seeds it with would only bloat the memo.
      base_input.erase("message_history");
    }
    so.memo = Json{{kMemoPrincipal, caller.principal},
                   {kMemoKind, kind.name},
                   {kMemoTitle, core::abbreviate(title, 80)},
                   {kMemoCreated, core::now_rfc3339()},
                   {kMemoModel, model},
                   {kMemoInput, base_input}};
    Result<temporal::WorkflowRun> run =
        first_message.task.empty()
            ? client.start_workflow(kind.workflow, temporal::Args{input}, so)
            : client.signal_with_start(kind.workflow, temporal::Args{input}, so,
                                       durable::kSendUserTask,
                                       temporal::Args{first_message.to_json()});
    if (!run.ok()) return std::move(run).error();
    std::lock_guard lock(mu_);
    recent_[caller.principal].insert(id);
    return id;
  };

  auto new_task_input = [&](const Json& body,
                            const std::set<std::string>& extra) -> Result<durable::TaskInput> {
    durable::TaskInput in;
    CODEACT_TRY_STATUS(read_run_fields(body, in, extra));
    in.activities = deps_.policies;
    agent::UsageLimits limits;
    limits.request_limit = 50;
    in.usage_limits = limits;
    return in;
  };

  auto model_label = [&](const durable::TaskInput& in) {
    if (!in.model.empty()) return in.model;
    auto m = codeact::resolve_model_name(deps_.builder);
    return m.ok() ? *m : std::string();
  };

  // The running session's agent_output. A busy workflow may refuse a query for a moment (its
  // query buffer is full: ResourceExhausted): asked again after 25 ms, doubling, six times in
  // all. Other errors (no worker answers: a query's own deadline) are not asked again.
  // `timeout`: how long the query may wait (zero = the client's default).
  auto agent_output =
      [&](const std::string& id,
          std::chrono::milliseconds timeout = {}) -> Result<durable::AgentOutputReply> {
    Result<durable::AgentOutputReply> reply = core::unavailable("");
    auto pause = std::chrono::milliseconds(25);
    for (int attempt = 0; attempt < 6; ++attempt) {
      if (attempt > 0) {
        std::this_thread::sleep_for(pause);
        pause *= 2;
      }
      auto q = client.query_workflow(id, "", durable::kAgentOutputQuery, {}, timeout);
      reply = q.ok() ? durable::AgentOutputReply::from_json(*q)
                     : Result<durable::AgentOutputReply>(std::move(q).error());
      if (reply.ok() || reply.error().code() != core::Code::kResourceExhausted) break;
    }
    return reply;
  };

  // A session's answered turns: live from the workflow, else what its result holds.
  auto session_turns = [&](const std::string& id, const temporal::WorkflowDescription& d,
                           std::string& live_status) -> std::vector<durable::ChatTurn> {
    if (d.status == "Running") {
      auto reply = agent_output(id);
      if (!reply.ok()) return {};
      live_status = reply->status;
      return reply->turns;
    }
    if (d.status == "Completed") {
      auto res = client.get_result(id, d.run_id, std::chrono::seconds(2), false);
      if (res.ok()) {
        auto out = durable::ChatOutput::from_json(res.value());
        if (out.ok()) return out->turns;
      }
    }
    return {};  // a cancelled or terminated chat's result holds no turns
  };

  // Sends a message to a session, starting its workflow again when it has ended (cancelled,
  // stopped, idle): the new run resumes the sandbox with its state and carries the turns.
  auto send_message = [&](const std::string& id, temporal::WorkflowDescription d,
                          const durable::ChatMessage& message) -> core::Status {
    if (d.status == "Running") {
      std::string live;
      session_turns(id, d, live);
      if (live != "finishing" && live != "stopped" && live != "cancelled")
        return client.signal_workflow(id, "", durable::kSendUserTask,
                                      temporal::Args{message.to_json()});
      // The run is ending (stopped, or cancelled) and would drop the message: once it has
      // closed, the session starts again with it.
      const auto until = std::chrono::steady_clock::now() + kEndingRunWait;
      Result<temporal::WorkflowDescription> closed = core::unavailable("");
      while (true) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            until - std::chrono::steady_clock::now());
        // Returns when the run closes, when `left` is over, or when the call fails.
        (void)client.get_result(id, d.run_id, std::max(left, std::chrono::milliseconds(1)), false);
        closed = client.describe_workflow(id);
        if (!closed.ok()) return std::move(closed).error();
        if (closed->status != "Running" || closed->run_id != d.run_id ||
            std::chrono::steady_clock::now() >= until)
          break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      if (closed->status == "Running" && closed->run_id != d.run_id)  // started again meanwhile
        return client.signal_workflow(id, "", durable::kSendUserTask,
                                      temporal::Args{message.to_json()});
      if (closed->status == "Running")
        return core::unavailable("the session is stopping; send the message again shortly");
      d = std::move(*closed);
    }
    std::string ignored;
    durable::ChatInput chat;
    auto base = durable::TaskInput::from_json(d.memo.value(kMemoInput, Json::object()));
    if (base.ok()) chat.base = std::move(*base);
    chat.base.activities = deps_.policies;
    chat.turns = session_turns(id, d, ignored);
    // The model sees the earlier turns as a conversation.
    for (const auto& t : chat.turns) {
      chat.base.message_history.push_back(llm::ModelRequest::user_prompt(t.task));
      llm::ModelResponse answer;
      answer.parts.push_back(llm::TextPart{t.output.value_or(t.error.value_or(""))});
      chat.base.message_history.push_back(std::move(answer));
    }
    auto started = start(kSessionKind, chat.to_json(), memo_string(d.memo, kMemoTitle),
                         memo_string(d.memo, kMemoModel), message, id);
    if (!started.ok()) return std::move(started).error();
    return core::ok_status();
  };

  // Waits until a session answers the message `message_id` (POST /chat), just sent: asks the
  // workflow, then again each time the session's EventHub feed (its one upstream, shared with
  // the pages watching it) brings an event that may end a turn (may_end_turn), and at least
  // every second. Other messages may be answered first: each answer is found by its id.
  auto wait_turn = [&](const std::string& id,
                       const std::string& message_id) -> Result<durable::ChatTurn> {
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::milliseconds(static_cast<int64_t>(config_.chat_timeout_seconds * 1000));
    auto waker =
        std::make_shared<EventWaker>([](const SseEvent& e) { return may_end_turn(e, kAnyTurn); });
    deps_.hub->subscribe_live(id, FeedKind::kSession, waker);
    struct CloseAtExit {
      EventWaker& w;
      ~CloseAtExit() { w.close(); }
    } close_at_exit{*waker};
    while (std::chrono::steady_clock::now() < deadline) {
      if (stopping_.cancelled() || waker->closed())
        return core::unavailable("the server is stopping");
      // The query may wait for the workflow's task (a model request in it): no longer than
      // the POST's deadline.
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (auto reply = agent_output(id, std::max(left, std::chrono::milliseconds(1))); reply.ok()) {
        if (const auto* t = durable::find_turn(reply->turns, message_id)) return *t;
        if (const auto* m = durable::find_rejected(reply->rejected, message_id))
          return core::invalid_argument("the conversation refused the message: " + m->error +
                                        " (a worker older than message ids? upgrade it)");
      }
      auto d = client.describe_workflow(id);
      if (d.ok() && d->status != "Running") {
        std::string ignored;
        auto turns = session_turns(id, *d, ignored);
        if (const auto* t = durable::find_turn(turns, message_id)) return *t;
        return core::Error(
            core::Code::kFailedPrecondition,
            "the conversation ended (" + resource_status(*d, "") + ") before answering");
      }
      waker->wait(std::min(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(1)));
    }
    return core::Error(core::Code::kDeadlineExceeded,
                       fmt::format("no answer within {} s; the conversation goes on: follow it "
                                   "with workflow_id \"{}\"",
                                   config_.chat_timeout_seconds, id));
  };

  // ---- the seed's endpoints
  if (r.method == "POST" && p == "/chat") {
    auto body = body_object(r, false);
    if (!body.ok()) return fail(body.error());
    auto task = text_field(*body, "task");
    if (!task.ok()) return fail(task.error());
    std::string id;
    if (body->contains("workflow_id") && !(*body)["workflow_id"].is_null()) {
      if (!(*body)["workflow_id"].is_string())
        return fail(core::invalid_argument("workflow_id: must be a string"));
      id = (*body)["workflow_id"].get<std::string>();
    }
    // The message carries an id, and its answer is the turn that carries it back: whatever
    // else is sent to the session meanwhile (another POST /chat, the page), and across a
    // restart of an ended session.
    const durable::ChatMessage message{*task, new_message_id()};
    if (id.empty()) {
      auto in = new_task_input(Json::object(), {});
      if (!in.ok()) return fail(in.error());
      durable::ChatInput chat;
      chat.base = *in;
      id = kSessionKind.prefix + random_token().substr(0, 12);
      auto started = start(kSessionKind, chat.to_json(), *task, model_label(*in), message, id);
      if (!started.ok()) return fail(started.error());
    } else {
      auto d = owned(kSessionKind, id);
      if (!d.ok()) return fail(d.error());
      if (auto s = send_message(id, *d, message); !s.ok()) return fail(s.error());
    }
    auto turn = wait_turn(id, message.id);
    if (!turn.ok()) return fail(turn.error());
    if (!turn->output) {
      return fail(core::Error(core::Code::kInternal,
                              "the agent failed: " + turn->error.value_or("unknown error") +
                                  "; the conversation goes on: continue it with workflow_id \"" +
                                  id + "\""));
    }
    return ok_json({{"message", *turn->output},
                    {"container_id", id},
                    {"file_paths", turn->files},
                    {"workflow_id", id}});
  }
  if (r.method == "GET" && p == "/download_file") {
    auto id = r.query_param("container_id");
    auto path = r.query_param("file_path");
    if (!id || id->empty()) return fail(core::invalid_argument("container_id: is required"));
    if (!path || path->empty()) return fail(core::invalid_argument("file_path: is required"));
    auto d = owned(kSessionKind, *id);
    if (!d.ok()) d = owned(kRunKind, *id);
    if (!d.ok()) return fail(core::not_found("sandbox \"" + *id + "\" not found"));
    return download(*deps_.sandboxes, *id, *path, r);
  }

  // ---- /v1
  const std::vector<std::string> seg = [&] {
    std::vector<std::string> out;
    for (auto& s : core::split(p, '/'))
      if (!s.empty()) out.push_back(s);
    return out;
  }();
  if (seg.size() < 2 || seg[0] != "v1" || (seg[1] != "sessions" && seg[1] != "runs"))
    return not_found("\"" + r.method + " " + p + "\"");
  const Kind& kind = seg[1] == "sessions" ? kSessionKind : kRunKind;

  if (seg.size() == 2 && r.method == "POST") {
    auto body = body_object(r, kind.feed == FeedKind::kSession);
    if (!body.ok()) return fail(body.error());
    auto in = new_task_input(*body, {kind.feed == FeedKind::kSession ? "message" : "task"});
    if (!in.ok()) return fail(in.error());
    const std::string id = kind.prefix + random_token().substr(0, 12);
    Result<std::string> started = core::invalid_argument("");
    std::string title;
    durable::ChatMessage first;  // a session's first message, if the body has one
    if (kind.feed == FeedKind::kSession) {
      std::string message;
      if (body->contains("message") && !(*body)["message"].is_null()) {
        auto m = text_field(*body, "message");
        if (!m.ok()) return fail(m.error());
        message = *m;
      }
      durable::ChatInput chat;
      chat.base = *in;
      title = message.empty() ? "New session" : message;
      first = durable::ChatMessage{message, message.empty() ? "" : new_message_id()};
      started = start(kind, chat.to_json(), title, model_label(*in), first, id);
    } else {
      auto task = text_field(*body, "task");
      if (!task.ok()) return fail(task.error());
      in->task = *task;
      title = *task;
      started = start(kind, in->to_json(), title, model_label(*in), durable::ChatMessage{}, id);
    }
    if (!started.ok()) return start_failed(started.error());
    Json created = created_json(kind, id, title, model_label(*in));
    if (!first.id.empty()) created["message_id"] = first.id;
    return ok_json(std::move(created), 201)
        .set("Location", "/v1/" + std::string(kind.plural) + "/" + id);
  }
  if (seg.size() == 2 && r.method == "GET") {
    Json items = Json::array();
    std::string token;
    do {
      auto page =
          client.list_workflows(fmt::format("WorkflowType = '{}'", kind.workflow), 200, token);
      if (!page.ok()) return fail(page.error());
      for (const auto& e : page->executions) {
        if (memo_string(e.memo, kMemoPrincipal) != caller.principal || is_deleted(e.workflow_id))
          continue;
        temporal::WorkflowDescription d;
        d.status = e.status;
        items.push_back(resource_json(kind, e.workflow_id, e.memo, resource_status(d, "")));
      }
      token = page->next_page_token;
    } while (!token.empty() && items.size() < 1000);
    // One entry per id (every run of a session is listed), newest first.
    Json unique = Json::array();
    std::set<std::string> seen;
    for (const auto& item : items)
      if (seen.insert(item["id"].get<std::string>()).second) unique.push_back(item);
    return ok_json({{kind.plural, unique}});
  }
  if (seg.size() < 3) return not_found("\"" + r.method + " " + p + "\"");
  const std::string id = seg[2];
  auto d = owned(kind, id);
  if (!d.ok()) return fail(d.error());

  if (seg.size() == 3 && r.method == "GET") {
    std::string live;
    Json j;
    if (kind.feed == FeedKind::kSession) {
      auto turns = session_turns(id, *d, live);
      j = resource_json(kind, id, d->memo, resource_status(*d, live));
      Json t = Json::array();
      for (const auto& turn : turns) t.push_back(turn.to_json());
      j["turns"] = t;
    } else {
      if (d->status == "Running") {
        auto q = client.query_workflow(id, "", durable::kProgressQuery,
                                       temporal::Args{Json{{"since", 1000000000}}});
        if (q.ok()) live = core::json_string(*q, "status");
      }
      j = resource_json(kind, id, d->memo, resource_status(*d, live));
      if (d->status == "Completed") {
        auto res = client.get_result(id, d->run_id, std::chrono::seconds(2), false);
        if (res.ok()) {
          auto out = durable::TaskOutput::from_json(res.value());
          if (out.ok()) {
            j["output"] = out->output;
            j["files"] = out->files;
            j["usage"] = out->usage;
          }
        }
      } else if (d->status == "Failed") {
        auto res = client.get_result(id, d->run_id, std::chrono::seconds(2), false);
        if (!res.ok()) j["error"] = res.failure().root_cause().message;
      }
      Json task = d->memo.value(kMemoInput, Json::object());
      j["task"] = task.is_object() ? task.value("task", "") : "";
    }
    return ok_json(j);
  }
  if (seg.size() == 3 && r.method == "DELETE") {
    if (d->status == "Running") {
      auto s = client.terminate_workflow(id, "", "deleted over the API by " + caller.principal);
      if (!s.ok()) return fail(s.error());
    }
    const bool volume = r.query_param("volume").value_or("") == "true";
    auto s = deps_.sandboxes->remove(id, volume);
    if (!s.ok() && s.error().code() != core::Code::kNotFound) return fail(s.error());
    // A sandbox start under way when the workflow was terminated can still create the container.
    if (d->status == "Running") sweeper_->sweep_later(id, volume);
    // Then every run of the id leaves Temporal too; the server deletes them in the background,
    // so this server hides the id at once.
    {
      std::lock_guard lock(mu_);
      deleted_.insert(id);
    }
    auto runs = client.list_workflows(fmt::format("WorkflowId = '{}'", id), 1000);
    std::vector<std::string> run_ids;
    if (runs.ok())
      for (const auto& e : runs->executions) run_ids.push_back(e.run_id);
    if (run_ids.empty()) run_ids.push_back(d->run_id);
    for (const auto& run : run_ids) {
      auto del = client.delete_workflow(id, run);
      if (!del.ok() && del.error().code() != core::Code::kNotFound)
        core::log().warn("DELETE {}: removing run {} from Temporal failed: {}", id, run,
                         del.error().to_string());
    }
    return HttpResponse{204, {}, ""};
  }
  const std::string& action = seg[3];
  if (seg.size() == 4 && r.method == "POST" && action == "messages" &&
      kind.feed == FeedKind::kSession) {
    auto body = body_object(r, false);
    if (!body.ok()) return fail(body.error());
    for (const auto& [k, v] : body->items())
      if (k != "message") return fail(core::invalid_argument("unknown field \"" + k + "\""));
    auto message = text_field(*body, "message");
    if (!message.ok()) return fail(message.error());
    const durable::ChatMessage sent{*message, new_message_id()};
    if (auto s = send_message(id, *d, sent); !s.ok()) return fail(s.error());
    return ok_json({{"accepted", true}, {"message_id", sent.id}}, 202);
  }
  if (seg.size() == 4 && r.method == "POST" && action == "cancel") {
    if (d->status != "Running")
      return ok_json({{"accepted", false}, {"status", resource_status(*d, "")}}, 202);
    if (kind.feed == FeedKind::kSession) {
      // A session cancels its running turn only: the chat and its sandbox go on.
      std::string live_status;
      session_turns(id, *d, live_status);
      if (live_status != "running")
        return ok_json(
            {{"accepted", false}, {"status", live_status.empty() ? "running" : live_status}}, 202);
      auto s = client.signal_workflow(id, "", durable::kCancelTurn);
      if (!s.ok()) return fail(s.error());
      return ok_json({{"accepted", true}}, 202);
    }
    auto s = client.cancel_workflow(id, "", "cancelled over the API by " + caller.principal);
    if (!s.ok()) return fail(s.error());
    return ok_json({{"accepted", true}}, 202);
  }
  if (seg.size() == 4 && r.method == "POST" && action == "fork" &&
      kind.feed == FeedKind::kSession) {
    auto body = body_object(r, true);
    if (!body.ok()) return fail(body.error());
    int64_t turn = 0;
    for (const auto& [k, v] : body->items()) {
      if (k != "turn") return fail(core::invalid_argument("unknown field \"" + k + "\""));
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 1000000)
        return fail(core::invalid_argument("turn: must be an integer of 1 or more"));
      turn = v.get<int64_t>();
    }
    auto q = client.query_workflow(id, "", durable::kConversationQuery);
    if (!q.ok()) {
      return fail(core::unavailable("the session cannot be read to fork it (is a worker up?): " +
                                    q.error().message()));
    }
    auto source = durable::ConversationReply::from_json(*q);
    if (!source.ok()) return fail(source.error());
    if (turn == 0) turn = static_cast<int64_t>(source->turns.size()) + 1;
    const std::string new_id = kSessionKind.prefix + random_token().substr(0, 12);
    auto chat = durable::fork_chat_input(*source, static_cast<int>(turn), new_id);
    if (!chat.ok()) return fail(chat.error());
    chat->base.activities = deps_.policies;
    const std::string title =
        fmt::format("{} (fork at turn {})", memo_string(d->memo, kMemoTitle), turn);
    auto started = start(kSessionKind, chat->to_json(), title, memo_string(d->memo, kMemoModel),
                         durable::ChatMessage{}, new_id);
    if (!started.ok()) return start_failed(started.error());
    Json created = created_json(kSessionKind, new_id, title, memo_string(d->memo, kMemoModel));
    Json turns = Json::array();
    for (const auto& t : chat->turns) turns.push_back(t.to_json());
    created["turns"] = turns;
    created["forked_from"] = Json{
        {"session", id},
        {"turn", turn},
        {"checkpoint", chat->base.fork_from ? Json(chat->base.fork_from->checkpoint) : Json()}};
    return ok_json(std::move(created), 201).set("Location", "/v1/sessions/" + new_id);
  }
  if (seg.size() == 4 && r.method == "POST" && action == "stop" &&
      kind.feed == FeedKind::kSession) {
    if (d->status != "Running")
      return ok_json({{"accepted", false}, {"status", resource_status(*d, "")}}, 202);
    auto s = client.signal_workflow(id, "", durable::kStopChat);
    if (!s.ok()) return fail(s.error());
    return ok_json({{"accepted", true}}, 202);
  }
  if (seg.size() == 4 && r.method == "GET" && action == "events") {
    std::string last = r.header("last-event-id");
    if (last.empty()) last = r.query_param("last_event_id").value_or("");
    StreamedResponse s;
    s.headers = {{"Content-Type", "text/event-stream"},
                 {"Cache-Control", "no-cache"},
                 {"X-Accel-Buffering", "no"}};
    EventHub* hub = deps_.hub;
    s.on_open = [hub, id, feed = kind.feed, last](std::shared_ptr<EventStream> stream) {
      stream->send("retry: 1000\n\n");
      hub->subscribe(id, feed, std::move(stream), last);
    };
    return s;
  }
  if (seg.size() == 4 && r.method == "GET" && action == "variables") {
    auto v = deps_.sandboxes->variables(id);
    if (!v.ok()) return fail(v.error());
    return ok_json(*v);
  }
  if (seg.size() == 4 && r.method == "GET" && action == "files") {
    auto files = deps_.sandboxes->list_files(id, "/output");
    if (!files.ok()) return fail(files.error());
    Json list = Json::array();
    for (const auto& f : *files)
      list.push_back({{"path", f.path}, {"size", f.size}, {"mtime", f.mtime}});
    return ok_json({{"files", list}});
  }
  if (seg.size() >= 5 && action == "files") {
    std::vector<std::string> rest(seg.begin() + 4, seg.end());
    const std::string rel = core::join(rest, "/");
    if (r.method == "GET") return download(*deps_.sandboxes, id, rel, r);
    if (r.method == "PUT") return upload(*deps_.sandboxes, id, rel, r.body);
  }
  return not_found("\"" + r.method + " " + p + "\"");
}

}  // namespace codeact::server
