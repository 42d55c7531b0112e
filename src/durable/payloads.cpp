// The JSON forms of what crosses Temporal (payloads.hpp), read strictly with JsonReader.
#include "codeact/durable/payloads.hpp"

#include <fmt/format.h>

#include <cmath>

#include "codeact/core/json_reader.hpp"

namespace codeact::durable {

using core::JsonReader;
using core::Result;

namespace {

template <typename T>
using Parse = std::function<Result<T>(const Json&)>;

Result<std::vector<llm::ModelMessage>> messages_of(const Json& j) {
  return llm::messages_from_json(j);
}

// The agent target's keys, read from (or written into) an activity input.
core::Status read_target(JsonReader& r, AgentTarget& t) {
  CODEACT_TRY_STATUS(r.required("agent", t.agent));
  if (t.agent.empty()) return core::invalid_argument(r.what() + ": \"agent\" must not be empty");
  CODEACT_TRY_STATUS(r.required("sandbox_id", t.bind.sandbox_id));
  if (t.bind.sandbox_id.empty())
    return core::invalid_argument(r.what() + ": \"sandbox_id\" must not be empty");
  CODEACT_TRY_STATUS(r.optional("model", t.bind.model));
  CODEACT_TRY_STATUS(r.optional("mcp_servers", t.bind.mcp_servers));
  CODEACT_TRY_STATUS(r.optional_with<codeact::SandboxToolsOptions>(
      "tools", t.bind.tools, sandbox_tools_options_from_json));
  t.bind.tools.sandbox_id = t.bind.sandbox_id;  // the sandbox is the one bound by the workflow
  return core::ok_status();
}

Json target_json(const AgentTarget& t) {
  codeact::SandboxToolsOptions tools = t.bind.tools;
  tools.sandbox_id = t.bind.sandbox_id;
  return Json{{"agent", t.agent},
              {"model", t.bind.model},
              {"sandbox_id", t.bind.sandbox_id},
              {"mcp_servers", t.bind.mcp_servers},
              {"tools", to_json(tools)}};
}

Result<codeact::SandboxEnd> end_from_name(const std::string& what, const std::string& mode) {
  for (auto end :
       {codeact::SandboxEnd::kStop, codeact::SandboxEnd::kRemove, codeact::SandboxEnd::kKeep}) {
    if (codeact::sandbox_end_name(end) == mode) return end;
  }
  return core::invalid_argument(
      fmt::format("{}: \"mode\" must be stop, remove or keep, not \"{}\"", what, mode));
}

Result<sandbox::FileEntry> file_from_json(const Json& j) {
  JsonReader r(j, "a file");
  CODEACT_TRY_STATUS(r.valid());
  sandbox::FileEntry f;
  CODEACT_TRY_STATUS(r.required("path", f.path));
  CODEACT_TRY_STATUS(r.optional("size", f.size));
  CODEACT_TRY_STATUS(r.optional("mtime", f.mtime));
  CODEACT_TRY_STATUS(r.finish());
  return f;
}

template <typename T>
Result<std::vector<T>> list_of(const Json& j, const char* what, const Parse<T>& item) {
  if (!j.is_array()) return core::invalid_argument(fmt::format("{} must be a list", what));
  std::vector<T> out;
  for (size_t i = 0; i < j.size(); ++i) {
    auto v = item(j[i]);
    if (!v.ok()) return std::move(v).error().with_context(fmt::format("{} [{}]", what, i));
    out.push_back(std::move(*v));
  }
  return out;
}

// TaskInput's keys, shared by the chat input (which has no "task").
// "fork_from": {sandbox, checkpoint} (TaskInput, SandboxStartInput); written only when set, as
// workers before it refuse unknown keys.
Json fork_json(const codeact::SandboxFork& f) {
  return Json{{"sandbox", f.sandbox}, {"checkpoint", f.checkpoint}};
}

Result<codeact::SandboxFork> fork_of(const Json& j) {
  JsonReader r(j, "a checkpoint");
  CODEACT_TRY_STATUS(r.valid());
  codeact::SandboxFork f;
  CODEACT_TRY_STATUS(r.required("sandbox", f.sandbox));
  CODEACT_TRY_STATUS(r.required("checkpoint", f.checkpoint));
  CODEACT_TRY_STATUS(r.finish());
  if (f.sandbox.empty() || f.checkpoint < 1) {
    return core::invalid_argument("a checkpoint needs a sandbox and a number (1 or more)");
  }
  return f;
}

core::Status read_fork(JsonReader& r, std::optional<codeact::SandboxFork>& out,
                       const char* key = "fork_from") {
  if (!r.has(key)) {
    r.raw(key);  // null is none
    return core::ok_status();
  }
  codeact::SandboxFork f;
  CODEACT_TRY_STATUS(r.optional_with<codeact::SandboxFork>(key, f, fork_of));
  out = f;
  return core::ok_status();
}

core::Status read_task_fields(JsonReader& r, TaskInput& in) {
  CODEACT_TRY_STATUS(r.optional("agent", in.agent));
  if (in.agent.empty()) return core::invalid_argument(r.what() + ": \"agent\" must not be empty");
  CODEACT_TRY_STATUS(r.optional("model", in.model));
  CODEACT_TRY_STATUS(r.optional("sandbox_id", in.sandbox_id));
  CODEACT_TRY_STATUS(r.optional("python_packages", in.python_packages));
  CODEACT_TRY_STATUS(r.optional("system_packages", in.system_packages));
  CODEACT_TRY_STATUS(r.optional("mcp_servers", in.mcp_servers));
  CODEACT_TRY_STATUS(r.optional("network", in.network));
  CODEACT_TRY_STATUS(r.optional("disk", in.disk));
  CODEACT_TRY_STATUS(r.optional("keep_sandbox", in.keep_sandbox));
  CODEACT_TRY_STATUS(r.optional("remove_volume", in.remove_volume));
  agent::UsageLimits limits;
  if (r.has("usage_limits")) {
    CODEACT_TRY_STATUS(
        r.optional_with<agent::UsageLimits>("usage_limits", limits, usage_limits_from_json));
    in.usage_limits = limits;
  } else {
    r.raw("usage_limits");
  }
  CODEACT_TRY_STATUS(r.optional_with<codeact::SandboxToolsOptions>(
      "tools", in.tools, sandbox_tools_options_from_json));
  in.tools.sandbox_id
      .clear();  // the workflow binds the sandbox; whatever the input says is replaced
  CODEACT_TRY_STATUS(
      r.optional_with<ActivityPolicies>("activities", in.activities, ActivityPolicies::from_json));
  CODEACT_TRY_STATUS(r.optional_with<std::vector<llm::ModelMessage>>(
      "message_history", in.message_history, messages_of));
  CODEACT_TRY_STATUS(r.optional("host", in.host));
  CODEACT_TRY_STATUS(r.optional("shared_storage", in.shared_storage));
  return read_fork(r, in.fork_from);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Values inside payloads

Json to_json(const agent::RunContext& ctx) {
  return Json{{"deps", ctx.deps},
              {"agent_name", ctx.agent_name},
              {"run_id", ctx.run_id},
              {"run_step", ctx.run_step},
              {"usage", llm::to_json(ctx.usage)},
              {"prompt", ctx.prompt},
              {"tool_name", ctx.tool_name},
              {"tool_call_id", ctx.tool_call_id},
              {"retry", ctx.retry},
              {"max_retries", ctx.max_retries}};
}

Result<agent::RunContext> run_context_from_json(const Json& j) {
  JsonReader r(j, "run context");
  CODEACT_TRY_STATUS(r.valid());
  agent::RunContext ctx;
  CODEACT_TRY_STATUS(r.optional("deps", ctx.deps));
  CODEACT_TRY_STATUS(r.optional("agent_name", ctx.agent_name));
  CODEACT_TRY_STATUS(r.optional("run_id", ctx.run_id));
  CODEACT_TRY_STATUS(r.optional("run_step", ctx.run_step));
  CODEACT_TRY_STATUS(r.optional_with<llm::Usage>("usage", ctx.usage, llm::usage_from_json));
  CODEACT_TRY_STATUS(r.optional("prompt", ctx.prompt));
  CODEACT_TRY_STATUS(r.optional("tool_name", ctx.tool_name));
  CODEACT_TRY_STATUS(r.optional("tool_call_id", ctx.tool_call_id));
  CODEACT_TRY_STATUS(r.optional("retry", ctx.retry));
  CODEACT_TRY_STATUS(r.optional("max_retries", ctx.max_retries));
  CODEACT_TRY_STATUS(r.finish());
  return ctx;
}

Json to_json(const agent::ToolResult& result) {
  if (!result.ok()) {
    return Json{{"kind", "error"},
                {"code", std::string(core::code_name(result.error().code()))},
                {"message", result.error().message()}};
  }
  if (const auto* ret = std::get_if<agent::ToolReturn>(&*result)) {
    Json j{{"kind", "return"}, {"content", ret->content}};
    if (ret->text) j["text"] = *ret->text;
    return j;
  }
  return Json{{"kind", "retry"}, {"message", std::get<agent::ModelRetry>(*result).message}};
}

Result<agent::ToolResult> tool_result_from_json(const Json& j) {
  JsonReader r(j, "tool result");
  CODEACT_TRY_STATUS(r.valid());
  std::string kind;
  CODEACT_TRY_STATUS(r.required("kind", kind));
  agent::ToolResult out = core::internal_error("unset");
  if (kind == "return") {
    agent::ToolReturn ret;
    CODEACT_TRY_STATUS(r.optional("content", ret.content));
    std::string text;
    if (r.has("text")) {
      CODEACT_TRY_STATUS(r.optional("text", text));
      ret.text = text;
    }
    out = agent::ToolOutcome{ret};
  } else if (kind == "retry") {
    std::string message;
    CODEACT_TRY_STATUS(r.required("message", message));
    out = agent::ToolOutcome{agent::ModelRetry{message}};
  } else if (kind == "error") {
    std::string code, message;
    CODEACT_TRY_STATUS(r.required("code", code));
    CODEACT_TRY_STATUS(r.required("message", message));
    out = core::Error(core::code_from_name(code), message);
  } else {
    return core::invalid_argument("tool result: \"kind\" must be return, retry or error, not \"" +
                                  kind + "\"");
  }
  CODEACT_TRY_STATUS(r.finish());
  return out;
}

Json to_json(const agent::ToolInfo& info) {
  return Json{{"definition", llm::to_json(info.definition)},
              {"max_retries", info.max_retries ? Json(*info.max_retries) : Json(nullptr)},
              {"sequential", info.sequential}};
}

Result<agent::ToolInfo> tool_info_from_json(const Json& j) {
  JsonReader r(j, "tool");
  CODEACT_TRY_STATUS(r.valid());
  agent::ToolInfo info;
  CODEACT_TRY_STATUS(r.required_with<llm::ToolDefinition>("definition", info.definition,
                                                          llm::tool_definition_from_json));
  if (r.has("max_retries")) {
    int n = 0;
    CODEACT_TRY_STATUS(r.optional("max_retries", n));
    info.max_retries = n;
  } else {
    r.raw("max_retries");
  }
  CODEACT_TRY_STATUS(r.optional("sequential", info.sequential));
  CODEACT_TRY_STATUS(r.finish());
  return info;
}

Json to_json(const codeact::SandboxToolsOptions& o) {
  return Json{{"sandbox_id", o.sandbox_id},
              {"default_timeout_seconds", o.default_timeout_seconds},
              {"max_timeout_seconds", o.max_timeout_seconds},
              {"max_output_bytes", o.max_output_bytes},
              {"max_read_bytes", o.max_read_bytes},
              {"max_retries", o.max_retries},
              {"files_root", o.files_root}};
}

Result<codeact::SandboxToolsOptions> sandbox_tools_options_from_json(const Json& j) {
  JsonReader r(j, "sandbox tools options");
  CODEACT_TRY_STATUS(r.valid());
  codeact::SandboxToolsOptions o;
  CODEACT_TRY_STATUS(r.optional("sandbox_id", o.sandbox_id));
  CODEACT_TRY_STATUS(r.optional("default_timeout_seconds", o.default_timeout_seconds));
  CODEACT_TRY_STATUS(r.optional("max_timeout_seconds", o.max_timeout_seconds));
  CODEACT_TRY_STATUS(r.optional("max_output_bytes", o.max_output_bytes));
  CODEACT_TRY_STATUS(r.optional("max_read_bytes", o.max_read_bytes));
  CODEACT_TRY_STATUS(r.optional("max_retries", o.max_retries));
  CODEACT_TRY_STATUS(r.optional("files_root", o.files_root));
  CODEACT_TRY_STATUS(r.finish());
  codeact::SandboxToolsOptions checked = o;
  if (checked.sandbox_id.empty()) checked.sandbox_id = "unbound";
  CODEACT_TRY_STATUS(checked.validate());
  return o;
}

Json to_json(const sandbox::FileEntry& f) {
  return Json{{"path", f.path}, {"size", f.size}, {"mtime", f.mtime}};
}

Json to_json(const agent::UsageLimits& l) {
  auto opt = [](const std::optional<int64_t>& v) { return v ? Json(*v) : Json(nullptr); };
  return Json{{"request_limit", opt(l.request_limit)},
              {"tool_calls_limit", opt(l.tool_calls_limit)},
              {"input_tokens_limit", opt(l.input_tokens_limit)},
              {"output_tokens_limit", opt(l.output_tokens_limit)},
              {"total_tokens_limit", opt(l.total_tokens_limit)}};
}

Result<agent::UsageLimits> usage_limits_from_json(const Json& j) {
  JsonReader r(j, "usage_limits");
  CODEACT_TRY_STATUS(r.valid());
  agent::UsageLimits l;
  auto field = [&](const char* key, std::optional<int64_t>& out) -> core::Status {
    if (!r.has(key)) {
      // Present as null: no limit; absent: the default.
      if (j.contains(key)) out.reset();
      r.raw(key);
      return core::ok_status();
    }
    int64_t v = 0;
    CODEACT_TRY_STATUS(r.optional(key, v));
    if (v <= 0)
      return core::invalid_argument(
          fmt::format("usage_limits.{} must be a positive integer or null", key));
    out = v;
    return core::ok_status();
  };
  CODEACT_TRY_STATUS(field("request_limit", l.request_limit));
  CODEACT_TRY_STATUS(field("tool_calls_limit", l.tool_calls_limit));
  CODEACT_TRY_STATUS(field("input_tokens_limit", l.input_tokens_limit));
  CODEACT_TRY_STATUS(field("output_tokens_limit", l.output_tokens_limit));
  CODEACT_TRY_STATUS(field("total_tokens_limit", l.total_tokens_limit));
  CODEACT_TRY_STATUS(r.finish());
  return l;
}

// ---------------------------------------------------------------------------------------------
// Activity options

Json ActivityPolicy::to_json() const {
  return Json{{"start_to_close_seconds", start_to_close_seconds},
              {"heartbeat_seconds", heartbeat_seconds},
              {"max_attempts", max_attempts},
              {"initial_retry_seconds", initial_retry_seconds}};
}

Result<ActivityPolicy> ActivityPolicy::from_json(const Json& j, ActivityPolicy p) {
  if (j.is_null()) return p;
  JsonReader r(j, "an activity policy");
  CODEACT_TRY_STATUS(r.valid());
  CODEACT_TRY_STATUS(r.optional("start_to_close_seconds", p.start_to_close_seconds));
  CODEACT_TRY_STATUS(r.optional("heartbeat_seconds", p.heartbeat_seconds));
  CODEACT_TRY_STATUS(r.optional("max_attempts", p.max_attempts));
  CODEACT_TRY_STATUS(r.optional("initial_retry_seconds", p.initial_retry_seconds));
  CODEACT_TRY_STATUS(r.finish());
  if (p.start_to_close_seconds <= 0)
    return core::invalid_argument("start_to_close_seconds must be positive");
  if (p.heartbeat_seconds < 0 || p.max_attempts < 0 || p.initial_retry_seconds <= 0)
    return core::invalid_argument(
        "heartbeat_seconds and max_attempts must be >= 0, initial_retry_seconds > 0");
  for (auto [key, seconds] :
       {std::pair<const char*, double>{"start_to_close_seconds", p.start_to_close_seconds},
        {"heartbeat_seconds", p.heartbeat_seconds},
        {"initial_retry_seconds", p.initial_retry_seconds}}) {
    if (seconds > kMaxPolicySeconds)
      return core::invalid_argument(fmt::format("{} must be at most {} (ten years), not {}", key,
                                                kMaxPolicySeconds, seconds));
  }
  return p;
}

Json ActivityPolicies::to_json() const {
  Json j{{"model", model.to_json()}, {"tool", tool.to_json()}, {"sandbox", sandbox.to_json()}};
  if (host_timeout_seconds != ActivityPolicies{}.host_timeout_seconds)
    j["host_timeout_seconds"] = host_timeout_seconds;
  if (!local_model_requests) j["local_model_requests"] = false;
  return j;
}

Result<ActivityPolicies> ActivityPolicies::from_json(const Json& j) {
  ActivityPolicies p;
  if (j.is_null()) return p;
  JsonReader r(j, "\"activities\"");
  CODEACT_TRY_STATUS(r.valid());
  for (auto [key, policy] : {std::pair<const char*, ActivityPolicy*>{"model", &p.model},
                             {"tool", &p.tool},
                             {"sandbox", &p.sandbox}}) {
    const Json* v = r.raw(key);
    if (!v) continue;
    auto parsed = ActivityPolicy::from_json(*v, *policy);
    if (!parsed.ok())
      return std::move(parsed).error().with_context(std::string("activities.") + key);
    *policy = *parsed;
  }
  CODEACT_TRY_STATUS(r.optional("host_timeout_seconds", p.host_timeout_seconds));
  CODEACT_TRY_STATUS(r.optional("local_model_requests", p.local_model_requests));
  if (!std::isfinite(p.host_timeout_seconds) || p.host_timeout_seconds < 0 ||
      p.host_timeout_seconds > kMaxPolicySeconds) {
    return core::invalid_argument(
        fmt::format("activities.host_timeout_seconds must be between 0 and {} seconds, not {}",
                    kMaxPolicySeconds, p.host_timeout_seconds));
  }
  auto done = r.finish();
  if (!done.ok())
    return core::invalid_argument(done.error().message() +
                                  "; the activity kinds are model, tool, sandbox (and "
                                  "host_timeout_seconds)");
  return p;
}

// ---------------------------------------------------------------------------------------------
// Workflow inputs and outputs

Json TaskInput::to_json() const {
  Json j{{"task", task},
         {"agent", agent},
         {"model", model},
         {"sandbox_id", sandbox_id},
         {"python_packages", python_packages},
         {"system_packages", system_packages},
         {"mcp_servers", mcp_servers},
         {"network", network},
         {"keep_sandbox", keep_sandbox},
         {"remove_volume", remove_volume},
         {"tools", durable::to_json(tools)},
         {"activities", activities.to_json()}};
  j["usage_limits"] = usage_limits ? durable::to_json(*usage_limits) : Json(nullptr);
  if (!disk.empty()) j["disk"] = disk;  // only when set: workers before it refuse unknown keys
  if (!message_history.empty()) j["message_history"] = llm::to_json(message_history);
  if (fork_from) j["fork_from"] = fork_json(*fork_from);
  if (!host.empty()) j["host"] = host;
  if (shared_storage) j["shared_storage"] = true;
  return j;
}

Result<TaskInput> TaskInput::from_json(const Json& j) {
  TaskInput in;
  if (j.is_string()) {
    in.task = j.get<std::string>();
    return in;
  }
  JsonReader r(j, "the task input");
  if (!j.is_object())
    return core::invalid_argument("the input must be a task (a string) or an object with \"task\"");
  CODEACT_TRY_STATUS(r.required("task", in.task));
  CODEACT_TRY_STATUS(read_task_fields(r, in));
  CODEACT_TRY_STATUS(r.finish());
  return in;
}

Json TaskOutput::to_json() const {
  Json j{{"output", output},         {"workflow_id", workflow_id},
         {"sandbox_id", sandbox_id}, {"files", files},
         {"usage", usage},           {"model", model},
         {"agent", agent},           {"run_id", run_id}};
  if (!warning.empty()) j["warning"] = warning;
  return j;
}

Result<TaskOutput> TaskOutput::from_json(const Json& j) {
  JsonReader r(j, "the task output");
  CODEACT_TRY_STATUS(r.valid());
  TaskOutput o;
  CODEACT_TRY_STATUS(r.required("output", o.output));
  CODEACT_TRY_STATUS(r.optional("workflow_id", o.workflow_id));
  CODEACT_TRY_STATUS(r.optional("sandbox_id", o.sandbox_id));
  CODEACT_TRY_STATUS(r.optional("files", o.files));
  CODEACT_TRY_STATUS(r.optional("usage", o.usage));
  CODEACT_TRY_STATUS(r.optional("model", o.model));
  CODEACT_TRY_STATUS(r.optional("agent", o.agent));
  CODEACT_TRY_STATUS(r.optional("run_id", o.run_id));
  CODEACT_TRY_STATUS(r.optional("warning", o.warning));
  CODEACT_TRY_STATUS(r.finish());
  return o;
}

Json ConversationReply::to_json() const {
  Json t = Json::array();
  for (const auto& turn : turns) t.push_back(turn.to_json());
  return Json{{"base", base.to_json()}, {"turns", t}, {"messages", llm::to_json(messages)}};
}

Result<ConversationReply> ConversationReply::from_json(const Json& j) {
  JsonReader r(j, "the conversation");
  CODEACT_TRY_STATUS(r.valid());
  ConversationReply c;
  CODEACT_TRY_STATUS(r.optional_with<TaskInput>("base", c.base, TaskInput::from_json));
  CODEACT_TRY_STATUS(r.optional_with<std::vector<ChatTurn>>("turns", c.turns, [](const Json& v) {
    return list_of<ChatTurn>(v, "turns", ChatTurn::from_json);
  }));
  CODEACT_TRY_STATUS(
      r.optional_with<std::vector<llm::ModelMessage>>("messages", c.messages, messages_of));
  CODEACT_TRY_STATUS(r.finish());
  return c;
}

Json ChatMessage::to_json() const {
  if (id.empty()) return Json(task);
  return Json{{"task", task}, {"id", id}};
}

Result<ChatMessage> ChatMessage::from_json(const Json& j) {
  ChatMessage m;
  if (j.is_string()) {
    m.task = j.get<std::string>();
  } else if (j.is_object()) {
    JsonReader r(j, "a chat message");
    core::Status task = r.required("task", m.task);
    CODEACT_TRY_STATUS(r.optional("id", m.id));
    CODEACT_TRY_STATUS(r.finish());  // a misspelt "task" is named as such, not as a missing one
    CODEACT_TRY_STATUS(task);
  } else {
    return core::invalid_argument(fmt::format(
        "a chat message must be a string or {{\"task\": ...}}, got {}", core::json_preview(j)));
  }
  if (m.task.empty()) return core::invalid_argument("a chat message must not be empty");
  return m;
}

const ChatTurn* find_turn(const std::vector<ChatTurn>& turns, const std::string& message_id) {
  if (message_id.empty()) return nullptr;
  for (const auto& t : turns)
    if (t.message_id == message_id) return &t;
  return nullptr;
}

const RejectedMessage* find_rejected(const std::vector<RejectedMessage>& rejected,
                                     const std::string& message_id) {
  if (message_id.empty()) return nullptr;
  const std::string quoted = "\"" + message_id + "\"";
  for (const auto& m : rejected)
    if (m.sent.find(quoted) != std::string::npos) return &m;
  return nullptr;
}

Json ChatTurn::to_json() const {
  Json j{{"task", task}, {"output", output ? Json(*output) : Json(nullptr)}, {"files", files}};
  if (!message_id.empty()) j["message_id"] = message_id;
  if (error) {
    j["error"] = *error;
  } else {
    j["usage"] = usage;
  }
  if (checkpoint) j["checkpoint"] = fork_json(*checkpoint);
  return j;
}

Result<ChatTurn> ChatTurn::from_json(const Json& j) {
  JsonReader r(j, "a chat turn");
  CODEACT_TRY_STATUS(r.valid());
  ChatTurn t;
  CODEACT_TRY_STATUS(r.required("task", t.task));
  CODEACT_TRY_STATUS(r.optional("message_id", t.message_id));
  std::string text;
  if (r.has("output")) {
    CODEACT_TRY_STATUS(r.optional("output", text));
    t.output = text;
  } else {
    r.raw("output");
  }
  CODEACT_TRY_STATUS(r.optional("files", t.files));
  CODEACT_TRY_STATUS(r.optional("usage", t.usage));
  if (r.has("error")) {
    CODEACT_TRY_STATUS(r.optional("error", text));
    t.error = text;
  } else {
    r.raw("error");
  }
  CODEACT_TRY_STATUS(read_fork(r, t.checkpoint, "checkpoint"));
  CODEACT_TRY_STATUS(r.finish());
  if (!t.output && !t.error)
    return core::invalid_argument("a chat turn has neither an \"output\" nor an \"error\"");
  return t;
}

namespace {

Result<std::vector<ChatTurn>> turns_of(JsonReader& r) {
  Json turns = Json::array();
  CODEACT_TRY_STATUS(r.optional("turns", turns));
  return list_of<ChatTurn>(turns, (r.what() + ": \"turns\"").c_str(), ChatTurn::from_json);
}

Json turns_json(const std::vector<ChatTurn>& turns) {
  Json out = Json::array();
  for (const auto& t : turns) out.push_back(t.to_json());
  return out;
}

}  // namespace

Json ChatInput::to_json() const {
  Json j = base.to_json();
  j.erase("task");
  j["idle_timeout_seconds"] = idle_timeout_seconds;
  j["max_turns_per_run"] = max_turns_per_run;
  j["turns"] = turns_json(turns);
  Json queued = Json::array();
  for (const auto& m : pending) queued.push_back(m.to_json());
  j["pending"] = queued;
  j["sandbox_started"] = sandbox_started;
  j["runs"] = runs;
  return j;
}

Result<ChatInput> ChatInput::from_json(const Json& j) {
  ChatInput in;
  if (j.is_null()) return in;
  JsonReader r(j, "the chat input");
  CODEACT_TRY_STATUS(r.valid());
  CODEACT_TRY_STATUS(read_task_fields(r, in.base));
  CODEACT_TRY_STATUS(r.optional("idle_timeout_seconds", in.idle_timeout_seconds));
  CODEACT_TRY_STATUS(r.optional("max_turns_per_run", in.max_turns_per_run));
  if (in.idle_timeout_seconds <= 0 || in.max_turns_per_run <= 0)
    return core::invalid_argument("idle_timeout_seconds and max_turns_per_run must be positive");
  if (in.idle_timeout_seconds > kMaxPolicySeconds)
    return core::invalid_argument(
        fmt::format("idle_timeout_seconds must be at most {} (ten years), not {}",
                    kMaxPolicySeconds, in.idle_timeout_seconds));
  CODEACT_TRY(in.turns, turns_of(r));
  Json pending = Json::array();
  CODEACT_TRY_STATUS(r.optional("pending", pending));
  CODEACT_TRY(auto messages,
              list_of<ChatMessage>(pending, "the chat input: \"pending\"", ChatMessage::from_json));
  in.pending = std::move(messages);
  CODEACT_TRY_STATUS(r.optional("sandbox_started", in.sandbox_started));
  CODEACT_TRY_STATUS(r.optional("runs", in.runs));
  CODEACT_TRY_STATUS(r.finish());
  return in;
}

Json ChatOutput::to_json() const {
  Json j{
      {"turns", turns_json(turns)}, {"sandbox_id", sandbox_id}, {"reason", reason}, {"runs", runs}};
  if (!warning.empty()) j["warning"] = warning;
  return j;
}

Result<ChatOutput> ChatOutput::from_json(const Json& j) {
  JsonReader r(j, "the chat output");
  CODEACT_TRY_STATUS(r.valid());
  ChatOutput o;
  CODEACT_TRY(o.turns, turns_of(r));
  CODEACT_TRY_STATUS(r.optional("sandbox_id", o.sandbox_id));
  CODEACT_TRY_STATUS(r.required("reason", o.reason));
  CODEACT_TRY_STATUS(r.optional("runs", o.runs));
  CODEACT_TRY_STATUS(r.optional("warning", o.warning));
  // No finish(): read by older clients, which must take a newer worker's extra keys.
  return o;
}

Json RejectedMessage::to_json() const { return Json{{"sent", sent}, {"error", error}}; }

Result<RejectedMessage> RejectedMessage::from_json(const Json& j) {
  JsonReader r(j, "a rejected message");
  CODEACT_TRY_STATUS(r.valid());
  RejectedMessage m;
  CODEACT_TRY_STATUS(r.optional("sent", m.sent));
  CODEACT_TRY_STATUS(r.required("error", m.error));
  // No finish(): read by older clients, which must take a newer worker's extra keys.
  return m;
}

Json AgentOutputReply::to_json() const {
  Json j{{"turns", turns_json(turns)},
         {"pending", pending},
         {"status", status},
         {"sandbox_id", sandbox_id}};
  if (!rejected.empty()) {
    Json list = Json::array();
    for (const auto& m : rejected) list.push_back(m.to_json());
    j["rejected"] = list;
  }
  return j;
}

Result<AgentOutputReply> AgentOutputReply::from_json(const Json& j) {
  JsonReader r(j, "the agent_output reply");
  CODEACT_TRY_STATUS(r.valid());
  AgentOutputReply o;
  CODEACT_TRY(o.turns, turns_of(r));
  CODEACT_TRY_STATUS(r.optional("pending", o.pending));
  CODEACT_TRY_STATUS(r.optional("status", o.status));
  CODEACT_TRY_STATUS(r.optional("sandbox_id", o.sandbox_id));
  Json rejected = Json::array();
  CODEACT_TRY_STATUS(r.optional("rejected", rejected));
  CODEACT_TRY(o.rejected, list_of<RejectedMessage>(rejected, "the agent_output reply: \"rejected\"",
                                                   RejectedMessage::from_json));
  // No finish(): read by older clients, which must take a newer worker's extra keys.
  return o;
}

Json ProgressReply::to_json() const {
  return Json{{"events", events},
              {"next", next},
              {"status", status},
              {"sandbox_id", sandbox_id},
              {"run_id", run_id}};
}

Result<ProgressReply> ProgressReply::from_json(const Json& j) {
  JsonReader r(j, "the progress reply");
  CODEACT_TRY_STATUS(r.valid());
  ProgressReply o;
  Json events = Json::array();
  CODEACT_TRY_STATUS(r.optional("events", events));
  if (!events.is_array())
    return core::invalid_argument("the progress reply: \"events\" must be a list");
  for (const auto& e : events) {
    if (!e.is_object())
      return core::invalid_argument("the progress reply: every event must be an object");
    o.events.push_back(e);
  }
  CODEACT_TRY_STATUS(r.required("next", o.next));
  if (o.next < 0) return core::invalid_argument("the progress reply: \"next\" must be >= 0");
  CODEACT_TRY_STATUS(r.optional("status", o.status));
  CODEACT_TRY_STATUS(r.optional("sandbox_id", o.sandbox_id));
  CODEACT_TRY_STATUS(r.optional("run_id", o.run_id));
  // No finish(): read by older clients, which must take a newer worker's extra keys.
  return o;
}

// ---------------------------------------------------------------------------------------------
// Activity payloads

Json SandboxStartInput::to_json() const {
  Json j{{"sandbox_id", plan.sandbox_id},
         {"python_packages", plan.python_packages},
         {"system_packages", plan.system_packages},
         {"network", plan.network}};
  if (!plan.disk.empty()) j["disk"] = plan.disk;
  if (plan.fork_from) j["fork_from"] = fork_json(*plan.fork_from);
  return j;
}

Result<SandboxStartInput> SandboxStartInput::from_json(const Json& j) {
  JsonReader r(j, "codeact.sandbox_start input");
  CODEACT_TRY_STATUS(r.valid());
  SandboxStartInput in;
  CODEACT_TRY_STATUS(r.required("sandbox_id", in.plan.sandbox_id));
  CODEACT_TRY_STATUS(r.optional("python_packages", in.plan.python_packages));
  CODEACT_TRY_STATUS(r.optional("system_packages", in.plan.system_packages));
  CODEACT_TRY_STATUS(r.optional("network", in.plan.network));
  CODEACT_TRY_STATUS(r.optional("disk", in.plan.disk));
  CODEACT_TRY_STATUS(read_fork(r, in.plan.fork_from));
  CODEACT_TRY_STATUS(r.finish());
  return in;
}

Json SandboxStartOutput::to_json() const {
  Json j{{"sandbox_id", sandbox_id}, {"resumed", resumed}, {"volume", volume}};
  if (!host.empty()) j["host"] = host;
  if (shared) {
    j["shared"] = true;
    j["cell"] = cell;
  }
  return j;
}

Result<SandboxStartOutput> SandboxStartOutput::from_json(const Json& j) {
  JsonReader r(j, "codeact.sandbox_start result");
  CODEACT_TRY_STATUS(r.valid());
  SandboxStartOutput o;
  CODEACT_TRY_STATUS(r.required("sandbox_id", o.sandbox_id));
  CODEACT_TRY_STATUS(r.optional("resumed", o.resumed));
  CODEACT_TRY_STATUS(r.optional("volume", o.volume));
  CODEACT_TRY_STATUS(r.optional("host", o.host));
  CODEACT_TRY_STATUS(r.optional("shared", o.shared));
  CODEACT_TRY_STATUS(r.optional("cell", o.cell));
  CODEACT_TRY_STATUS(r.finish());
  return o;
}

Json SandboxFilesInput::to_json() const { return Json{{"sandbox_id", sandbox_id}}; }

Result<SandboxFilesInput> SandboxFilesInput::from_json(const Json& j) {
  JsonReader r(j, "codeact.sandbox_files input");
  CODEACT_TRY_STATUS(r.valid());
  SandboxFilesInput in;
  CODEACT_TRY_STATUS(r.required("sandbox_id", in.sandbox_id));
  CODEACT_TRY_STATUS(r.finish());
  return in;
}

Json SandboxFilesOutput::to_json() const {
  Json list = Json::array();
  for (const auto& f : files) list.push_back(durable::to_json(f));
  return Json{{"files", list}};
}

Result<SandboxFilesOutput> SandboxFilesOutput::from_json(const Json& j) {
  JsonReader r(j, "codeact.sandbox_files result");
  CODEACT_TRY_STATUS(r.valid());
  SandboxFilesOutput o;
  Json files = Json::array();
  CODEACT_TRY_STATUS(r.required("files", files));
  CODEACT_TRY(o.files, list_of<sandbox::FileEntry>(files, "codeact.sandbox_files result: \"files\"",
                                                   file_from_json));
  CODEACT_TRY_STATUS(r.finish());
  return o;
}

Json SandboxFinishInput::to_json() const {
  return Json{{"sandbox_id", sandbox_id},
              {"mode", std::string(codeact::sandbox_end_name(end))},
              {"remove_volume", remove_volume}};
}

Result<SandboxFinishInput> SandboxFinishInput::from_json(const Json& j) {
  JsonReader r(j, "codeact.sandbox_finish input");
  CODEACT_TRY_STATUS(r.valid());
  SandboxFinishInput in;
  std::string mode;
  CODEACT_TRY_STATUS(r.required("sandbox_id", in.sandbox_id));
  CODEACT_TRY_STATUS(r.required("mode", mode));
  CODEACT_TRY(in.end, end_from_name(r.what(), mode));
  CODEACT_TRY_STATUS(r.optional("remove_volume", in.remove_volume));
  CODEACT_TRY_STATUS(r.finish());
  return in;
}

Json SandboxFinishOutput::to_json() const {
  return Json{{"mode", std::string(codeact::sandbox_end_name(end))},
              {"volume_removed", volume_removed}};
}

Result<SandboxFinishOutput> SandboxFinishOutput::from_json(const Json& j) {
  JsonReader r(j, "codeact.sandbox_finish result");
  CODEACT_TRY_STATUS(r.valid());
  SandboxFinishOutput o;
  std::string mode;
  CODEACT_TRY_STATUS(r.required("mode", mode));
  CODEACT_TRY(o.end, end_from_name(r.what(), mode));
  CODEACT_TRY_STATUS(r.optional("volume_removed", o.volume_removed));
  CODEACT_TRY_STATUS(r.finish());
  return o;
}

Json AgentPrepareInput::to_json() const { return target_json(target); }

Result<AgentPrepareInput> AgentPrepareInput::from_json(const Json& j) {
  JsonReader r(j, "codeact.agent_prepare input");
  CODEACT_TRY_STATUS(r.valid());
  AgentPrepareInput in;
  CODEACT_TRY_STATUS(read_target(r, in.target));
  CODEACT_TRY_STATUS(r.finish());
  return in;
}

Json AgentPrepareOutput::to_json() const {
  Json sets = Json::array();
  for (const auto& ts : toolsets) {
    Json tools = Json::array();
    for (const auto& t : ts.tools) tools.push_back(durable::to_json(t));
    sets.push_back(Json{{"id", ts.id}, {"tools", tools}});
  }
  return Json{{"system_prompts", system_prompts},
              {"toolsets", sets},
              {"max_tool_retries", max_tool_retries},
              {"model", model}};
}

Result<AgentPrepareOutput> AgentPrepareOutput::from_json(const Json& j) {
  JsonReader r(j, "codeact.agent_prepare result");
  CODEACT_TRY_STATUS(r.valid());
  AgentPrepareOutput o;
  CODEACT_TRY_STATUS(r.optional("system_prompts", o.system_prompts));
  CODEACT_TRY_STATUS(r.optional("max_tool_retries", o.max_tool_retries));
  CODEACT_TRY_STATUS(r.optional("model", o.model));
  const Parse<agent::ToolInfo> tool = tool_info_from_json;
  if (const Json* old = r.raw("tools")) {
    // The first shape: one toolset, the sandbox tools.
    CODEACT_TRY(auto tools,
                list_of<agent::ToolInfo>(*old, "codeact.agent_prepare result: \"tools\"", tool));
    o.toolsets.push_back(ToolsetListing{codeact::SandboxTools::kId, std::move(tools)});
  }
  if (const Json* sets = r.raw("toolsets")) {
    const Parse<ToolsetListing> listing = [&tool](const Json& s) -> Result<ToolsetListing> {
      JsonReader lr(s, "a toolset");
      CODEACT_TRY_STATUS(lr.valid());
      ToolsetListing l;
      Json tools = Json::array();
      CODEACT_TRY_STATUS(lr.required("id", l.id));
      CODEACT_TRY_STATUS(lr.optional("tools", tools));
      CODEACT_TRY(l.tools, list_of<agent::ToolInfo>(tools, "\"tools\"", tool));
      CODEACT_TRY_STATUS(lr.finish());
      return l;
    };
    CODEACT_TRY(auto more, list_of<ToolsetListing>(
                               *sets, "codeact.agent_prepare result: \"toolsets\"", listing));
    for (auto& l : more) o.toolsets.push_back(std::move(l));
  }
  CODEACT_TRY_STATUS(r.finish());
  return o;
}

Json ModelRequestInput::to_json() const {
  Json j = target_json(target);
  j["messages"] = llm::to_json(messages);
  j["settings"] = llm::to_json(settings);
  j["params"] = llm::to_json(params);
  if (ctx) j["ctx"] = durable::to_json(*ctx);
  if (!sandbox_host.empty()) j["sandbox_host"] = sandbox_host;
  return j;
}

Result<ModelRequestInput> ModelRequestInput::from_json(const Json& j) {
  JsonReader r(j, "codeact.model_request input");
  CODEACT_TRY_STATUS(r.valid());
  ModelRequestInput in;
  CODEACT_TRY_STATUS(read_target(r, in.target));
  CODEACT_TRY_STATUS(
      r.required_with<std::vector<llm::ModelMessage>>("messages", in.messages, messages_of));
  CODEACT_TRY_STATUS(
      r.optional_with<llm::ModelSettings>("settings", in.settings, llm::settings_from_json));
  CODEACT_TRY_STATUS(r.optional_with<llm::ModelRequestParameters>(
      "params", in.params, llm::request_parameters_from_json));
  if (r.has("ctx")) {
    agent::RunContext ctx;
    CODEACT_TRY_STATUS(r.optional_with<agent::RunContext>("ctx", ctx, run_context_from_json));
    in.ctx = std::move(ctx);
  } else {
    r.raw("ctx");
  }
  CODEACT_TRY_STATUS(r.optional("sandbox_host", in.sandbox_host));
  CODEACT_TRY_STATUS(r.finish());
  return in;
}

Json ModelRequestOutput::to_json() const {
  Json j{{"response", llm::to_json(response)}};
  if (instructions) j["instructions"] = *instructions;
  return j;
}

Result<ModelRequestOutput> ModelRequestOutput::from_json(const Json& j) {
  ModelRequestOutput o;
  if (j.is_object() && !j.contains("response")) {
    // The first shape: the bare response.
    auto response = llm::response_from_json(j);
    if (!response.ok())
      return std::move(response).error().with_context("codeact.model_request result");
    o.response = std::move(*response);
    return o;
  }
  JsonReader r(j, "codeact.model_request result");
  CODEACT_TRY_STATUS(r.valid());
  CODEACT_TRY_STATUS(
      r.required_with<llm::ModelResponse>("response", o.response, llm::response_from_json));
  if (r.has("instructions")) {
    std::string text;
    CODEACT_TRY_STATUS(r.optional("instructions", text));
    o.instructions = std::move(text);
  } else {
    r.raw("instructions");
  }
  CODEACT_TRY_STATUS(r.finish());
  return o;
}

Json ToolCallInput::to_json() const {
  Json j = target_json(target);
  j["toolset"] = toolset;
  j["call"] =
      Json{{"tool_name", call.tool_name}, {"args", call.args}, {"tool_call_id", call.tool_call_id}};
  j["ctx"] = durable::to_json(ctx);
  return j;
}

Result<ToolCallInput> ToolCallInput::from_json(const Json& j) {
  JsonReader r(j, "codeact.tool_call input");
  CODEACT_TRY_STATUS(r.valid());
  ToolCallInput in;
  CODEACT_TRY_STATUS(read_target(r, in.target));
  CODEACT_TRY_STATUS(r.optional("toolset", in.toolset));
  const Parse<agent::ToolCall> call = [](const Json& c) -> Result<agent::ToolCall> {
    JsonReader cr(c, "the call");
    CODEACT_TRY_STATUS(cr.valid());
    agent::ToolCall out;
    CODEACT_TRY_STATUS(cr.required("tool_name", out.tool_name));
    CODEACT_TRY_STATUS(cr.optional("args", out.args));
    CODEACT_TRY_STATUS(cr.optional("tool_call_id", out.tool_call_id));
    CODEACT_TRY_STATUS(cr.finish());
    return out;
  };
  CODEACT_TRY_STATUS(r.required_with<agent::ToolCall>("call", in.call, call));
  CODEACT_TRY_STATUS(r.required_with<agent::RunContext>("ctx", in.ctx, run_context_from_json));
  CODEACT_TRY_STATUS(r.finish());
  return in;
}

}  // namespace codeact::durable
