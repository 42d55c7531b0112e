// JSON forms of the durable workflows' inputs and outputs (workflows.hpp).
#include <fmt/format.h>

#include "codeact/durable/workflows.hpp"

namespace codeact::durable {
namespace {

using core::Result;

Result<std::vector<std::string>> strings_of(const Json& j, const char* key) {
  std::vector<std::string> out;
  if (!j.contains(key) || j[key].is_null()) return out;
  if (!j[key].is_array()) return core::invalid_argument(fmt::format("\"{}\" must be a list of strings", key));
  for (const auto& v : j[key]) {
    if (!v.is_string()) return core::invalid_argument(fmt::format("\"{}\" must be a list of strings", key));
    out.push_back(v.get<std::string>());
  }
  return out;
}

Json limits_to_json(const agent::UsageLimits& l) {
  auto opt = [](const std::optional<int64_t>& v) { return v ? Json(*v) : Json(nullptr); };
  return Json{{"request_limit", opt(l.request_limit)},
              {"tool_calls_limit", opt(l.tool_calls_limit)},
              {"input_tokens_limit", opt(l.input_tokens_limit)},
              {"output_tokens_limit", opt(l.output_tokens_limit)},
              {"total_tokens_limit", opt(l.total_tokens_limit)}};
}

Result<agent::UsageLimits> limits_from_json(const Json& j) {
  if (!j.is_object()) return core::invalid_argument("\"usage_limits\" must be an object");
  agent::UsageLimits l;
  auto field = [&](const char* key, std::optional<int64_t>& out) -> core::Status {
    if (!j.contains(key)) return core::ok_status();
    if (j[key].is_null()) {
      out.reset();
      return core::ok_status();
    }
    if (!j[key].is_number_integer() || j[key].get<int64_t>() <= 0)
      return core::invalid_argument(fmt::format("usage_limits.{} must be a positive integer or null", key));
    out = j[key].get<int64_t>();
    return core::ok_status();
  };
  CODEACT_TRY_STATUS(field("request_limit", l.request_limit));
  CODEACT_TRY_STATUS(field("tool_calls_limit", l.tool_calls_limit));
  CODEACT_TRY_STATUS(field("input_tokens_limit", l.input_tokens_limit));
  CODEACT_TRY_STATUS(field("output_tokens_limit", l.output_tokens_limit));
  CODEACT_TRY_STATUS(field("total_tokens_limit", l.total_tokens_limit));
  return l;
}

}  // namespace

Json ActivityPolicy::to_json() const {
  return Json{{"start_to_close_seconds", start_to_close_seconds},
              {"heartbeat_seconds", heartbeat_seconds},
              {"max_attempts", max_attempts},
              {"initial_retry_seconds", initial_retry_seconds}};
}

Result<ActivityPolicy> ActivityPolicy::from_json(const Json& j, ActivityPolicy p) {
  if (j.is_null()) return p;
  if (!j.is_object()) return core::invalid_argument("an activity policy must be an object");
  p.start_to_close_seconds = core::json_number(j, "start_to_close_seconds", p.start_to_close_seconds);
  p.heartbeat_seconds = core::json_number(j, "heartbeat_seconds", p.heartbeat_seconds);
  p.max_attempts = static_cast<int>(core::json_int(j, "max_attempts", p.max_attempts));
  p.initial_retry_seconds = core::json_number(j, "initial_retry_seconds", p.initial_retry_seconds);
  if (p.start_to_close_seconds <= 0)
    return core::invalid_argument("start_to_close_seconds must be positive");
  if (p.heartbeat_seconds < 0 || p.max_attempts < 0 || p.initial_retry_seconds <= 0)
    return core::invalid_argument(
        "heartbeat_seconds and max_attempts must be >= 0, initial_retry_seconds > 0");
  return p;
}

Json ActivityPolicies::to_json() const {
  return Json{{"model", model.to_json()}, {"tool", tool.to_json()}, {"sandbox", sandbox.to_json()}};
}

Result<ActivityPolicies> ActivityPolicies::from_json(const Json& j) {
  ActivityPolicies p;
  if (j.is_null()) return p;
  if (!j.is_object()) return core::invalid_argument("\"activities\" must be an object");
  for (const auto& [key, _] : j.items()) {
    if (key != "model" && key != "tool" && key != "sandbox")
      return core::invalid_argument("unknown activity kind \"" + key +
                                    "\" (known: model, tool, sandbox)");
  }
  CODEACT_TRY(p.model, ActivityPolicy::from_json(j.value("model", Json()), p.model));
  CODEACT_TRY(p.tool, ActivityPolicy::from_json(j.value("tool", Json()), p.tool));
  CODEACT_TRY(p.sandbox, ActivityPolicy::from_json(j.value("sandbox", Json()), p.sandbox));
  return p;
}

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
         {"tools", tools.to_json()},
         {"activities", activities.to_json()}};
  j["usage_limits"] = usage_limits ? limits_to_json(*usage_limits) : Json(nullptr);
  if (!message_history.empty()) j["message_history"] = llm::to_json(message_history);
  return j;
}

Result<TaskInput> TaskInput::from_json(const Json& j) {
  TaskInput in;
  if (j.is_string()) {
    in.task = j.get<std::string>();
  } else {
    if (!j.is_object())
      return core::invalid_argument("the input must be a task (a string) or an object with \"task\"");
    in.task = core::json_string(j, "task");
    in.agent = core::json_string(j, "agent", in.agent);
    in.model = core::json_string(j, "model");
    in.sandbox_id = core::json_string(j, "sandbox_id");
    CODEACT_TRY(in.python_packages, strings_of(j, "python_packages"));
    CODEACT_TRY(in.system_packages, strings_of(j, "system_packages"));
    CODEACT_TRY(in.mcp_servers, strings_of(j, "mcp_servers"));
    in.network = core::json_bool(j, "network");
    in.keep_sandbox = core::json_bool(j, "keep_sandbox");
    in.remove_volume = core::json_bool(j, "remove_volume");
    if (j.contains("usage_limits") && !j["usage_limits"].is_null()) {
      CODEACT_TRY(auto l, limits_from_json(j["usage_limits"]));
      in.usage_limits = l;
    }
    if (j.contains("tools") && !j["tools"].is_null()) {
      Json t = j["tools"];
      // The workflow binds the sandbox; whatever the input says is replaced.
      if (t.is_object()) t["sandbox_id"] = "bound-by-the-workflow";
      CODEACT_TRY(in.tools, codeact::SandboxToolsOptions::from_json(t));
      in.tools.sandbox_id.clear();
    }
    CODEACT_TRY(in.activities, ActivityPolicies::from_json(j.value("activities", Json())));
    if (j.contains("message_history") && !j["message_history"].is_null()) {
      CODEACT_TRY(in.message_history, llm::messages_from_json(j["message_history"]));
    }
  }
  if (in.agent.empty()) return core::invalid_argument("\"agent\" must not be empty");
  return in;
}

Json TaskOutput::to_json() const {
  return Json{{"output", output}, {"workflow_id", workflow_id}, {"sandbox_id", sandbox_id},
              {"files", files},   {"usage", usage},             {"model", model},
              {"agent", agent},   {"run_id", run_id}};
}

Result<TaskOutput> TaskOutput::from_json(const Json& j) {
  if (!j.is_object()) return core::invalid_argument("a task output must be an object");
  TaskOutput o;
  o.output = core::json_string(j, "output");
  o.workflow_id = core::json_string(j, "workflow_id");
  o.sandbox_id = core::json_string(j, "sandbox_id");
  CODEACT_TRY(o.files, strings_of(j, "files"));
  o.usage = j.value("usage", Json::object());
  o.model = core::json_string(j, "model");
  o.agent = core::json_string(j, "agent");
  o.run_id = core::json_string(j, "run_id");
  return o;
}

Json ChatInput::to_json() const {
  Json j = base.to_json();
  j.erase("task");
  j["idle_timeout_seconds"] = idle_timeout_seconds;
  j["max_turns_per_run"] = max_turns_per_run;
  j["turns"] = turns;
  j["pending"] = pending;
  j["sandbox_started"] = sandbox_started;
  j["runs"] = runs;
  return j;
}

Result<ChatInput> ChatInput::from_json(const Json& j) {
  ChatInput in;
  if (j.is_null()) return in;
  if (!j.is_object()) return core::invalid_argument("the chat input must be an object");
  Json base = j;
  base["task"] = "";
  CODEACT_TRY(in.base, TaskInput::from_json(base));
  in.idle_timeout_seconds = core::json_number(j, "idle_timeout_seconds", in.idle_timeout_seconds);
  in.max_turns_per_run = static_cast<int>(core::json_int(j, "max_turns_per_run", in.max_turns_per_run));
  if (in.idle_timeout_seconds <= 0 || in.max_turns_per_run <= 0)
    return core::invalid_argument("idle_timeout_seconds and max_turns_per_run must be positive");
  in.turns = j.value("turns", Json::array());
  Json pending = j.value("pending", Json::array());
  if (!in.turns.is_array() || !pending.is_array())
    return core::invalid_argument("\"turns\" and \"pending\" must be lists");
  // Queued messages as the signal takes them: a string, or {"task": ...}.
  for (const auto& p : pending) {
    std::string task = p.is_string() ? p.get<std::string>() : core::json_string(p, "task");
    if (task.empty()) return core::invalid_argument("\"pending\" items must be messages (a string or {\"task\": ...})");
    in.pending.push_back(task);
  }
  in.sandbox_started = core::json_bool(j, "sandbox_started");
  in.runs = static_cast<int>(core::json_int(j, "runs", 1));
  return in;
}

}  // namespace codeact::durable
