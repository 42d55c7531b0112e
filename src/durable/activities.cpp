// The worker side of the durable agent: the codeact.* activities. Each rebuilds what it needs
// from names (agent, model, sandbox id) and the worker's own WorkerEnv — prompts, config, API
// keys, MCP sessions, Docker — so no secret ever travels in a payload.
#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "codeact/codeact/sandbox_tools.hpp"
#include "codeact/core/log.hpp"
#include "codeact/mcp/server_config.hpp"
#include "durable_internal.hpp"

namespace codeact::durable {
namespace {

using core::Result;
using temporal::ActivityContext;
using temporal::Args;

// Heartbeats while an activity works, so a worker that dies is noticed after the heartbeat
// timeout (not the start-to-close timeout). Cancellation is deliberately not passed on to the
// cell or the model call: ActivityContext::cancelled() is also set when this worker shuts down,
// and a cell must not be rolled back because a worker stops (the retry on another worker picks
// up its result through the execution id). A cancelled run removes its container, which ends
// the cell.
class Heartbeat {
 public:
  explicit Heartbeat(ActivityContext& ctx) : ctx_(ctx) {
    if (ctx_.info().heartbeat_timeout.count() <= 0) return;
    // The first beat waits a little: most calls end sooner and never pay for a heartbeat RPC.
    const auto first = std::min<std::chrono::milliseconds>(std::chrono::milliseconds(1000),
                                                           ctx_.info().heartbeat_timeout / 4);
    thread_ = std::thread([this, first] {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, first, [this] { return done_; })) return;
      while (!done_) {
        lock.unlock();
        ctx_.heartbeat();
        lock.lock();
        cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return done_; });
      }
    });
  }
  ~Heartbeat() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
 private:
  ActivityContext& ctx_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

Result<Json> arg0(const Args& args, const char* activity) {
  if (args.empty() || !args[0].is_object())
    return core::invalid_argument(fmt::format("{}: expected one object argument", activity));
  return args[0];
}

Result<std::string> required_string(const Json& j, const char* key) {
  std::string v = core::json_string(j, key);
  if (v.empty()) return core::invalid_argument(fmt::format("\"{}\" is required", key));
  return v;
}

// Agents, models and function toolsets built once per worker and shared by activities.
class Env {
 public:
  explicit Env(std::shared_ptr<WorkerEnv> env) : env_(std::move(env)) {}

  sandbox::SandboxManager& manager() { return *env_->manager; }
  const std::shared_ptr<sandbox::SandboxManager>& manager_ptr() { return env_->manager; }
  const codeact::AgentBuilder& builder() { return env_->builder; }

  Result<std::shared_ptr<codeact::CodeActAgent>> agent(const std::string& name) {
    std::lock_guard lock(mu_);
    if (auto registered = env_->agents.find(name); registered != env_->agents.end()) return registered->second;
    auto it = agents_.find(name);
    if (it != agents_.end()) return it->second;
    CODEACT_TRY(auto a, codeact::make_agent(name, env_->builder));
    agents_[name] = a;
    return a;
  }

  // The model by name ("" = the worker's configured default).
  Result<std::shared_ptr<llm::Model>> model(const std::string& name) {
    std::lock_guard lock(mu_);
    auto it = models_.find(name);
    if (it != models_.end()) return it->second;
    codeact::AgentBuilder b = env_->builder;
    if (!name.empty()) b.model = name;
    codeact::SimpleAgent base;
    CODEACT_TRY(auto m, base.llm_model(b));
    models_[name] = m;
    return m;
  }

  // The functions sandbox code may call for this agent plus the requested MCP servers (null when
  // none). Kept for the worker's life: MCP servers start once and their sessions are shared.
  Result<std::shared_ptr<functions::SandboxFunctions>> functions(const codeact::CodeActAgent& agent,
                                                             std::vector<std::string> mcp_servers) {
    std::sort(mcp_servers.begin(), mcp_servers.end());
    std::string key = agent.name();
    for (const auto& m : mcp_servers) key += "|" + m;
    std::lock_guard lock(mu_);
    auto it = functions_.find(key);
    if (it != functions_.end()) return it->second;
    if (!env_->builder.mcp) {
      CODEACT_TRY(auto entries, mcp::parse_mcp_servers(env_->builder.config.raw));
      env_->builder.mcp = std::make_shared<mcp::McpServerSet>(std::move(entries));
    }
    CODEACT_TRY(auto f, agent.functions(env_->builder, mcp_servers));
    functions_[key] = f;
    return f;
  }

 private:
  std::shared_ptr<WorkerEnv> env_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<codeact::CodeActAgent>> agents_;     // GUARDED_BY(mu_)
  std::map<std::string, std::shared_ptr<llm::Model>> models_;                // GUARDED_BY(mu_)
  std::map<std::string, std::shared_ptr<functions::SandboxFunctions>> functions_;  // GUARDED_BY(mu_)
};

std::vector<std::string> mcp_names(const Json& in) {
  std::vector<std::string> out;
  for (const auto& n : in.value("mcp_servers", Json::array())) {
    if (n.is_string()) out.push_back(n.get<std::string>());
  }
  return out;
}

Result<codeact::SandboxToolsOptions> tools_options(const Json& in, const std::string& sandbox_id) {
  Json t = in.value("tools", Json::object());
  if (!t.is_object()) return core::invalid_argument("\"tools\" must be an object");
  t["sandbox_id"] = sandbox_id;  // the sandbox is the one bound by the workflow, nothing else
  return codeact::SandboxToolsOptions::from_json(t);
}

// What the agent activities get: the input, the agent by name and the sandbox it is bound to.
struct AgentCall {
  Json in;
  std::string sandbox_id;
  std::shared_ptr<codeact::CodeActAgent> agent;
};

Result<AgentCall> agent_call(Env& env, const Args& args, const char* activity) {
  AgentCall c;
  CODEACT_TRY(c.in, arg0(args, activity));
  CODEACT_TRY(auto name, required_string(c.in, "agent"));
  CODEACT_TRY(c.sandbox_id, required_string(c.in, "sandbox_id"));
  CODEACT_TRY(c.agent, env.agent(name));
  return c;
}

Result<Json> sandbox_start(Env& env, ActivityContext& ctx, const Args& args) {
  CODEACT_TRY(Json in, arg0(args, kSandboxStartActivity));
  Heartbeat hb(ctx);
  sandbox::SandboxOptions so;
  CODEACT_TRY(so.id, required_string(in, "sandbox_id"));
  for (const auto& p : in.value("python_packages", Json::array())) so.python_packages.push_back(p.get<std::string>());
  for (const auto& p : in.value("system_packages", Json::array())) so.system_packages.push_back(p.get<std::string>());
  so.network = core::json_bool(in, "network");
  CODEACT_TRY(auto info, env.manager().start(so));
  return Json{{"sandbox_id", so.id}, {"resumed", info.resumed}, {"volume", info.volume}};
}

Result<Json> sandbox_files(Env& env, ActivityContext& ctx, const Args& args) {
  CODEACT_TRY(Json in, arg0(args, kSandboxFilesActivity));
  Heartbeat hb(ctx);
  CODEACT_TRY(auto id, required_string(in, "sandbox_id"));
  CODEACT_TRY(auto files, env.manager().list_files(id, "/output"));
  return Json{{"files", files_to_json(files)}};
}

Result<Json> sandbox_finish(Env& env, ActivityContext& ctx, const Args& args) {
  CODEACT_TRY(Json in, arg0(args, kSandboxFinishActivity));
  Heartbeat hb(ctx);
  CODEACT_TRY(auto id, required_string(in, "sandbox_id"));
  std::string mode = core::json_string(in, "mode", "stop");
  bool remove_volume = core::json_bool(in, "remove_volume");
  if (mode == "keep") return Json{{"mode", mode}};
  if (mode == "stop") {
    auto s = env.manager().stop(id);
    // Already gone is fine: a retried finish, or a user removed it.
    if (!s.ok() && s.error().code() != core::Code::kNotFound) return std::move(s).error();
  } else if (mode == "remove") {
    auto s = env.manager().remove(id, remove_volume);
    if (!s.ok() && s.error().code() != core::Code::kNotFound) return std::move(s).error();
  } else {
    return core::invalid_argument("\"mode\" must be stop, remove or keep, not \"" + mode + "\"");
  }
  return Json{{"mode", mode}, {"volume_removed", mode == "remove" && remove_volume}};
}

Result<Json> agent_prepare(Env& env, ActivityContext& ctx, const Args& args) {
  CODEACT_TRY(AgentCall target, agent_call(env, args, kAgentPrepareActivity));
  Heartbeat hb(ctx);
  const Json& in = target.in;
  const std::string& sandbox_id = target.sandbox_id;
  const auto& agent = target.agent;
  // Fails early, and clearly, when the worker has no such model or no key for it.
  CODEACT_TRY(auto model, env.model(core::json_string(in, "model")));
  std::string model_name = core::json_string(in, "model");
  if (model_name.empty()) {
    CODEACT_TRY(model_name, codeact::resolve_model_name(env.builder()));
  }
  CODEACT_TRY(auto prompt, agent->prompts(env.builder()));
  CODEACT_TRY(auto fns, env.functions(*agent, mcp_names(in)));
  CODEACT_TRY(auto opts, tools_options(in, sandbox_id));

  Json system = Json::array();
  if (!prompt->system_prompt_source.empty()) {
    CODEACT_TRY(auto vars, codeact::sandbox_prompt_variables(env.manager(), sandbox_id, fns.get()));
    CODEACT_TRY(auto text, prompt->system_prompt.render(vars.to_json()));
    if (!text.empty()) system.push_back(text);
  }
  std::shared_ptr<agent::Toolset> tools = std::make_shared<codeact::SandboxTools>(env.manager_ptr(), opts, fns);
  auto excluded = agent->excluded_tools();
  if (!excluded.empty()) tools = agent::FilteredToolset::excluding(tools, excluded);
  agent::RunContext rc;
  rc.agent_name = agent->name();
  rc.deps = Json{{"sandbox_id", sandbox_id}};
  agent::RunLoop loop;
  auto listed = loop.run(tools->get_tools(rc));
  if (!listed.ok()) return std::move(listed).error();
  Json list = Json::array();
  for (const auto& t : *listed) list.push_back(to_json(t));
  return Json{{"system_prompts", system},
              {"tools", list},
              {"max_tool_retries", opts.max_retries},
              {"model", model_name}};
}

// Puts the instructions rendered from the sandbox's live state on the last request.
core::Status add_instructions(Env& env, const codeact::CodeActAgent& agent, const std::string& sandbox_id,
                              const std::vector<std::string>& mcp_servers,
                              std::vector<llm::ModelMessage>& messages) {
  CODEACT_TRY(auto prompt, agent.prompts(env.builder()));
  if (prompt->instructions_source.empty()) return core::ok_status();
  CODEACT_TRY(auto fns, env.functions(agent, mcp_servers));
  CODEACT_TRY(auto vars, codeact::sandbox_prompt_variables(env.manager(), sandbox_id, fns.get()));
  CODEACT_TRY(auto text, prompt->instructions.render(vars.to_json()));
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    if (auto* req = std::get_if<llm::ModelRequest>(&*it)) {
      req->instructions = req->instructions.empty() ? text : text + "\n\n" + req->instructions;
      break;
    }
  }
  return core::ok_status();
}

Result<Json> model_request(Env& env, ActivityContext& ctx, const Args& args) {
  CODEACT_TRY(AgentCall target, agent_call(env, args, kModelRequestActivity));
  Heartbeat hb(ctx);
  const Json& in = target.in;
  const std::string& sandbox_id = target.sandbox_id;
  const auto& agent = target.agent;
  CODEACT_TRY(auto model, env.model(core::json_string(in, "model")));
  CODEACT_TRY(auto messages, llm::messages_from_json(in.value("messages", Json::array())));
  CODEACT_TRY(auto settings, llm::settings_from_json(in.value("settings", Json::object())));
  CODEACT_TRY(auto params, llm::request_parameters_from_json(in.value("params", Json::object())));
  auto added = add_instructions(env, *agent, sandbox_id, mcp_names(in), messages);
  if (!added.ok()) return std::move(added).error().with_context("rendering the instructions");
  llm::ModelSettings merged = model->default_settings().merged(settings);
  CODEACT_TRY(auto response, model->request(messages, merged, params, nullptr));
  return llm::to_json(response);
}

Result<Json> tool_call(Env& env, ActivityContext& ctx, const Args& args) {
  CODEACT_TRY(AgentCall target, agent_call(env, args, kToolCallActivity));
  Heartbeat hb(ctx);
  const Json& in = target.in;
  const std::string& sandbox_id = target.sandbox_id;
  const auto& agent = target.agent;
  CODEACT_TRY(auto fns, env.functions(*agent, mcp_names(in)));
  CODEACT_TRY(auto opts, tools_options(in, sandbox_id));
  CODEACT_TRY(auto rc, agent::run_context_from_json(in.value("ctx", Json::object())));
  rc.executor = nullptr;
  rc.cancel = nullptr;
  rc.deps = Json{{"sandbox_id", sandbox_id}};
  const Json c = in.value("call", Json::object());  // value() returns a copy
  agent::ToolCall call;
  call.tool_name = core::json_string(c, "tool_name");
  call.args = c.value("args", Json::object());
  call.tool_call_id = core::json_string(c, "tool_call_id");

  codeact::SandboxTools tools(env.manager_ptr(), opts, fns);
  agent::RunLoop loop;
  auto listed = loop.run(tools.get_tools(rc));
  if (!listed.ok()) return std::move(listed).error();
  bool known = false;
  for (const auto& t : *listed) known = known || t.name() == call.tool_name;
  if (!known) return agent::to_json(agent::ToolResult(agent::ToolOutcome{agent::ModelRetry{"unknown tool " + call.tool_name}}));
  agent::ToolResult result = loop.run(tools.call_tool(call, rc));
  // Docker or kernel trouble is worth retrying (Temporal does, with the same execution id);
  // whatever the model can act on goes back to it.
  if (!result.ok() && core::is_retryable(result.error().code())) return std::move(result).error();
  return agent::to_json(result);
}

}  // namespace

Json to_json(const agent::ToolInfo& info) {
  return Json{{"definition", llm::to_json(info.definition)},
              {"max_retries", info.max_retries ? Json(*info.max_retries) : Json(nullptr)},
              {"sequential", info.sequential}};
}

Result<agent::ToolInfo> tool_info_from_json(const Json& j) {
  if (!j.is_object()) return core::invalid_argument("a tool must be an object");
  agent::ToolInfo info;
  CODEACT_TRY(info.definition, llm::tool_definition_from_json(j.value("definition", Json::object())));
  if (j.contains("max_retries") && j["max_retries"].is_number_integer()) info.max_retries = j["max_retries"].get<int>();
  info.sequential = core::json_bool(j, "sequential");
  return info;
}

Json files_to_json(const std::vector<sandbox::FileEntry>& files) {
  Json out = Json::array();
  for (const auto& f : files) out.push_back(Json{{"path", f.path}, {"size", f.size}, {"mtime", f.mtime}});
  return out;
}

Result<std::vector<sandbox::FileEntry>> files_from_json(const Json& j) {
  if (!j.is_array()) return core::invalid_argument("files must be a list");
  std::vector<sandbox::FileEntry> out;
  for (const auto& f : j) {
    sandbox::FileEntry e;
    e.path = core::json_string(f, "path");
    e.size = core::json_int(f, "size");
    e.mtime = core::json_number(f, "mtime");
    out.push_back(std::move(e));
  }
  return out;
}

void register_codeact(temporal::Worker& worker, std::shared_ptr<WorkerEnv> worker_env) {
  for (auto& [name, fn] : workflow_functions()) worker.register_workflow(name, fn);
  auto env = std::make_shared<Env>(std::move(worker_env));
  auto add = [&](const char* name, Result<Json> (*fn)(Env&, ActivityContext&, const Args&)) {
    worker.register_activity(name, [env, fn, name](ActivityContext& ctx, const Args& args) {
      auto start = std::chrono::steady_clock::now();
      auto out = fn(*env, ctx, args);
      core::log().debug("{} took {:.1f} ms", name,
                        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      return out;
    });
  };
  add(kSandboxStartActivity, sandbox_start);
  add(kSandboxFilesActivity, sandbox_files);
  add(kSandboxFinishActivity, sandbox_finish);
  add(kAgentPrepareActivity, agent_prepare);
  add(kModelRequestActivity, model_request);
  add(kToolCallActivity, tool_call);
}

}  // namespace codeact::durable
