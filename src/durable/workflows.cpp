// The workflow side of the durable agent: CodeActTaskWorkflow, CodeActChatWorkflow and the seed's
// SimpleAgentWorkflow. Deterministic code only: every effect is one of the codeact.* activities
// (activities.cpp), and the agent loop is agent::Agent::run_task driven by the workflow executor
// with an activity-backed model and toolset.
#include <fmt/format.h>

#include <ctime>

#include "codeact/durable/workflows.hpp"
#include "codeact/temporal/workflow.hpp"
#include "durable_internal.hpp"

namespace codeact::durable {
namespace {

using core::Result;
using temporal::ApplicationError;
using temporal::WorkflowContext;

std::string rfc3339(std::chrono::system_clock::time_point t) {
  auto secs = std::chrono::system_clock::to_time_t(t);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
}

[[noreturn]] void fail_with(const core::Error& e) {
  throw ApplicationError(temporal::Failure::from_error(e));
}

// The error, plus what went wrong cleaning up after it (if anything).
core::Error with_cleanup(core::Error error, const Result<Json>& cleanup) {
  if (cleanup.ok()) return error;
  return core::Error(error.code(), error.message() + " (and cleaning up the sandbox failed: " + cleanup.error().message() + ")");
}

[[noreturn]] void fail_cancelled(const std::string& message) {
  temporal::Failure f;
  f.kind = temporal::FailureKind::kCanceled;
  f.code = core::Code::kCancelled;
  f.message = message;
  throw ApplicationError(std::move(f));
}

// What the queries read; lives in the workflow coroutine's frame.
struct RunView {
  std::vector<Json> events;  // agent events (agent::to_json), in order
  std::string status = "starting";
  std::string sandbox_id;
  std::string run_id;  // this workflow run: `next` restarts at 0 after a continue-as-new

  Json progress(const temporal::Args& args) const {
    size_t since = 0;
    if (!args.empty() && args[0].is_object()) since = static_cast<size_t>(core::json_int(args[0], "since"));
    if (!args.empty() && args[0].is_number_integer()) since = args[0].get<size_t>();
    Json out = Json::array();
    for (size_t i = since; i < events.size(); ++i) out.push_back(events[i]);
    return Json{{"events", out}, {"next", events.size()}, {"status", status}, {"sandbox_id", sandbox_id},
                {"run_id", run_id}};
  }
};

// The model seam: each request is a codeact.model_request activity.
class ActivityModel final : public agent::AsyncModel {
 public:
  ActivityModel(WorkflowContext& ctx, const TaskInput& in, std::string sandbox_id, std::string model)
      : ctx_(ctx), in_(in), sandbox_id_(std::move(sandbox_id)), model_(std::move(model)) {}

  agent::Task<Result<agent::ModelReply>> request(const agent::ModelCall& call) override {
    if (ctx_.cancel_requested()) co_return core::cancelled("the run was cancelled");
    Json payload{{"agent", in_.agent},
                 {"model", model_},
                 {"sandbox_id", sandbox_id_},
                 {"mcp_servers", in_.mcp_servers},
                 {"messages", llm::to_json(*call.messages)},
                 {"settings", llm::to_json(call.settings)},
                 {"params", llm::to_json(call.params)}};
    temporal::ActivityOptions o = activity_options(in_.activities.model);
    auto act = ctx_.execute_activity(kModelRequestActivity, payload, o);
    temporal::ActivityResult r = co_await act;
    if (!r.ok()) co_return r.failure().to_error();
    auto response = llm::response_from_json(r.value());
    if (!response.ok()) co_return std::move(response).error();
    co_return agent::ModelReply{std::move(*response), std::nullopt};
  }
  std::string model_name() const override { return model_; }

 private:
  WorkflowContext& ctx_;
  const TaskInput& in_;
  std::string sandbox_id_;
  std::string model_;
};

// The sandbox's tools as the workflow sees them: the list comes from codeact.agent_prepare, each
// call is a codeact.tool_call activity.
class ActivityToolset final : public agent::Toolset {
 public:
  ActivityToolset(WorkflowContext& ctx, const TaskInput& in, std::string sandbox_id,
                  std::vector<agent::ToolInfo> tools)
      : ctx_(ctx), in_(in), sandbox_id_(std::move(sandbox_id)), tools_(std::move(tools)) {}

  std::string id() const override { return "sandbox"; }
  agent::Task<Result<std::vector<agent::ToolInfo>>> get_tools(const agent::RunContext&) override {
    co_return tools_;
  }
  agent::Task<agent::ToolResult> call_tool(const agent::ToolCall& call, const agent::RunContext& rc) override {
    if (ctx_.cancel_requested()) co_return core::cancelled("the run was cancelled");
    Json tools = in_.tools.to_json();
    tools["sandbox_id"] = sandbox_id_;
    Json payload{{"agent", in_.agent},
                 {"sandbox_id", sandbox_id_},
                 {"mcp_servers", in_.mcp_servers},
                 {"tools", tools},
                 {"call", Json{{"tool_name", call.tool_name}, {"args", call.args}, {"tool_call_id", call.tool_call_id}}},
                 {"ctx", agent::to_json(rc)}};
    temporal::ActivityOptions o = activity_options(in_.activities.tool);
    auto act = ctx_.execute_activity(kToolCallActivity, payload, o);
    temporal::ActivityResult r = co_await act;
    if (!r.ok()) co_return r.failure().to_error();
    auto parsed = agent::tool_result_from_json(r.value());
    if (!parsed.ok()) co_return std::move(parsed).error();
    co_return std::move(*parsed);
  }

 private:
  WorkflowContext& ctx_;
  const TaskInput& in_;
  std::string sandbox_id_;
  std::vector<agent::ToolInfo> tools_;
};

// Runs one activity and returns its value; a failure is returned as an Error.
temporal::Task<Result<Json>> call_activity(WorkflowContext& ctx, const char* name, Json payload,
                                           const ActivityPolicy& policy) {
  temporal::ActivityOptions o = activity_options(policy);
  auto act = ctx.execute_activity(name, payload, o);
  temporal::ActivityResult r = co_await act;
  if (!r.ok()) co_return r.failure().to_error();
  co_return std::move(r).value();
}

struct Prepared {
  std::vector<std::string> system_prompts;
  std::vector<agent::ToolInfo> tools;
  int max_tool_retries = 3;
  std::string model;
};

temporal::Task<Result<Prepared>> prepare(WorkflowContext& ctx, const TaskInput& in,
                                         const std::string& sandbox_id) {
  Json tools = in.tools.to_json();
  tools["sandbox_id"] = sandbox_id;
  Json payload{{"agent", in.agent}, {"model", in.model}, {"sandbox_id", sandbox_id},
               {"mcp_servers", in.mcp_servers}, {"tools", tools}};
  auto task = call_activity(ctx, kAgentPrepareActivity, payload, in.activities.sandbox);
  Result<Json> r = co_await task;
  if (!r.ok()) co_return std::move(r).error();
  Prepared p;
  for (const auto& s : r->value("system_prompts", Json::array())) p.system_prompts.push_back(s.get<std::string>());
  for (const auto& t : r->value("tools", Json::array())) {
    auto info = tool_info_from_json(t);
    if (!info.ok()) co_return std::move(info).error();
    p.tools.push_back(std::move(*info));
  }
  p.max_tool_retries = static_cast<int>(core::json_int(*r, "max_tool_retries", 3));
  p.model = core::json_string(*r, "model");
  co_return p;
}

temporal::Task<Result<std::vector<sandbox::FileEntry>>> list_output(WorkflowContext& ctx,
                                                                      const TaskInput& in,
                                                                      const std::string& sandbox_id) {
  Json payload{{"sandbox_id", sandbox_id}};
  auto task = call_activity(ctx, kSandboxFilesActivity, payload, in.activities.sandbox);
  Result<Json> r = co_await task;
  if (!r.ok()) co_return std::move(r).error();
  co_return files_from_json(r->value("files", Json::array()));
}

// Stops the sandbox ("stop"), removes its container ("remove") or leaves it ("keep").
temporal::Task<Result<Json>> finish_sandbox(WorkflowContext& ctx, const TaskInput& in,
                                            const std::string& sandbox_id, bool success) {
  std::string mode = in.keep_sandbox ? "keep" : (success && !in.remove_volume ? "stop" : "remove");
  Json payload{{"sandbox_id", sandbox_id}, {"mode", mode}, {"remove_volume", in.remove_volume}};
  auto task = call_activity(ctx, kSandboxFinishActivity, payload, in.activities.sandbox);
  Result<Json> r = co_await task;
  co_return r;
}

// One agent run in a started sandbox. `history` is the conversation so far (chat) or empty.
struct TurnResult {
  Result<agent::AgentRunResult> run = core::internal_error("not run");
  std::vector<std::string> files;
};

temporal::Task<TurnResult> run_turn(WorkflowContext& ctx, const TaskInput& in, const Prepared& prep,
                                    const std::string& sandbox_id, const std::string& task,
                                    std::vector<llm::ModelMessage> history, std::string run_id,
                                    RunView& view) {
  TurnResult out;
  auto before_task = list_output(ctx, in, sandbox_id);
  Result<std::vector<sandbox::FileEntry>> before = co_await before_task;
  if (!before.ok()) {
    out.run = std::move(before).error();
    co_return out;
  }

  agent::AgentOptions ao;
  ao.name = in.agent;
  ao.system_prompts = prep.system_prompts;
  ao.max_tool_retries = prep.max_tool_retries;
  ao.toolsets.push_back(std::make_shared<ActivityToolset>(ctx, in, sandbox_id, prep.tools));
  auto loop_agent = std::make_shared<agent::Agent>(nullptr, std::move(ao));

  agent::RunOptions ro;
  ro.message_history = std::move(history);
  ro.deps = Json{{"sandbox_id", sandbox_id}};
  ro.usage_limits = in.usage_limits;
  ro.run_id = std::move(run_id);
  ro.on_event = [&view](const agent::AgentEvent& e) { view.events.push_back(agent::to_json(e)); };
  agent::RunDrivers drivers;
  drivers.model = std::make_shared<ActivityModel>(ctx, in, sandbox_id, prep.model);
  drivers.now = [&ctx] { return rfc3339(ctx.now()); };

  auto run_task = loop_agent->run_task(task, std::move(ro), std::move(drivers));
  out.run = co_await run_task;
  if (!out.run.ok()) co_return out;

  auto after_task = list_output(ctx, in, sandbox_id);
  Result<std::vector<sandbox::FileEntry>> after = co_await after_task;
  if (!after.ok()) {
    out.run = std::move(after).error().with_context("listing the files the run produced");
    co_return out;
  }
  out.files = codeact::produced_files(*before, *after);
  view.events.push_back(Json{{"event_kind", "files"}, {"files", out.files}});
  co_return out;
}

temporal::Task<Result<Json>> start_sandbox(WorkflowContext& ctx, const TaskInput& in,
                                           const std::string& sandbox_id) {
  Json payload{{"sandbox_id", sandbox_id},
               {"python_packages", in.python_packages},
               {"system_packages", in.system_packages},
               {"network", in.network}};
  auto task = call_activity(ctx, kSandboxStartActivity, payload, in.activities.sandbox);
  Result<Json> r = co_await task;
  co_return r;
}

// Starts (or resumes) the sandbox and returns what codeact.sandbox_start said. On failure the
// container is removed (a failed package install may have left it up; the volume is kept) and
// the workflow fails with both errors.
// Removes the sandbox's container (volume kept) and fails the workflow with `error` (and the
// cleanup's own error, if any).
temporal::Task<Json> fail_after_cleanup(WorkflowContext& ctx, const TaskInput& in, const std::string& sandbox_id,
                                        RunView& view, core::Error error) {
  view.status = "failed";
  auto cleanup_task = finish_sandbox(ctx, in, sandbox_id, false);
  Result<Json> cleaned = co_await cleanup_task;
  fail_with(with_cleanup(std::move(error), cleaned));
}

temporal::Task<Json> start_or_fail(WorkflowContext& ctx, const TaskInput& in, const std::string& sandbox_id,
                                   RunView& view) {
  auto start_task = start_sandbox(ctx, in, sandbox_id);
  Result<Json> started = co_await start_task;
  if (!started.ok()) {
    auto fail_task = fail_after_cleanup(ctx, in, sandbox_id, view,
                                        started.error().with_context("starting sandbox \"" + sandbox_id + "\""));
    (void)co_await fail_task;
  }
  co_return std::move(*started);
}

Json usage_json(const agent::AgentRunResult& run) {
  Json usage = llm::to_json(run.usage);
  usage["tool_calls"] = run.tool_calls;
  return usage;
}

std::string run_id_of(WorkflowContext& ctx) {
  const auto& info = ctx.info();
  // The whole run id: ids of runs started close together share a prefix (UUIDv7 starts with a
  // timestamp), and a reused workflow id must never replay another run's cells.
  return info.workflow_id + "/" + info.first_execution_run_id;
}

// ---------------------------------------------------------------------------------------------

temporal::Task<Json> task_workflow(WorkflowContext& ctx, temporal::Args args) {
  if (args.empty()) {
    throw ApplicationError("InvalidArgument", std::string(kTaskWorkflow) + " takes one argument: a task or a TaskInput object", true);
  }
  auto parsed = TaskInput::from_json(args[0]);
  if (!parsed.ok()) fail_with(parsed.error());
  const TaskInput in = std::move(*parsed);
  if (in.task.empty()) throw ApplicationError("InvalidArgument", "the task is empty", true);
  const std::string sandbox_id = in.sandbox_id.empty() ? ctx.info().workflow_id : in.sandbox_id;

  // Query handlers own what they read: a query may come after the workflow's frame is gone.
  auto shared_view = std::make_shared<RunView>();
  RunView& view = *shared_view;
  view.sandbox_id = sandbox_id;
  ctx.set_query_handler(kProgressQuery, [shared_view](const temporal::Args& a) { return shared_view->progress(a); });

  view.run_id = ctx.info().run_id;
  auto start_task = start_or_fail(ctx, in, sandbox_id, view);
  Json started = co_await start_task;
  view.events.push_back(Json{{"event_kind", "sandbox"}, {"sandbox_id", sandbox_id},
                             {"resumed", core::json_bool(started, "resumed")}});

  view.status = "running";
  auto prep_task = prepare(ctx, in, sandbox_id);
  Result<Prepared> prep = co_await prep_task;
  TurnResult turn;
  if (prep.ok()) {
    auto turn_task = run_turn(ctx, in, *prep, sandbox_id, in.task, in.message_history, run_id_of(ctx), view);
    turn = co_await turn_task;
  } else {
    turn.run = std::move(prep).error();
  }

  const bool cancelled = ctx.cancel_requested() ||
                         (!turn.run.ok() && turn.run.error().code() == core::Code::kCancelled);
  view.status = turn.run.ok() ? "finishing" : "cleaning up";
  auto finish_task = finish_sandbox(ctx, in, sandbox_id, turn.run.ok() && !cancelled);
  Result<Json> finished = co_await finish_task;
  if (cancelled) {
    view.status = "cancelled";
    fail_cancelled(finished.ok() ? "the run was cancelled; its sandbox \"" + sandbox_id + "\" was removed (volume kept)"
                                 : "the run was cancelled; removing its sandbox \"" + sandbox_id +
                                       "\" failed: " + finished.error().message());
  }
  if (!turn.run.ok()) {
    view.status = "failed";
    fail_with(with_cleanup(turn.run.error(), finished));
  }
  view.status = "completed";

  TaskOutput out;
  out.output = turn.run->output_text();
  out.workflow_id = ctx.info().workflow_id;
  out.sandbox_id = sandbox_id;
  out.files = turn.files;
  out.usage = usage_json(*turn.run);
  out.model = prep->model;
  out.agent = in.agent;
  out.run_id = turn.run->run_id;
  Json result = out.to_json();
  // The answer stands even if stopping the sandbox failed; the user is told.
  if (!finished.ok()) result["warning"] = "stopping sandbox \"" + sandbox_id + "\" failed: " + finished.error().message();
  co_return result;
}

// The seed's SimpleAgentWorkflow.run(user_task: str) -> str.
temporal::Task<Json> simple_agent_workflow(WorkflowContext& ctx, temporal::Args args) {
  auto inner = task_workflow(ctx, std::move(args));
  Json out = co_await inner;
  co_return Json(core::json_string(out, "output"));
}

// ---------------------------------------------------------------------------------------------

temporal::Task<Json> chat_workflow(WorkflowContext& ctx, temporal::Args args) {
  auto parsed = ChatInput::from_json(args.empty() ? Json::object() : args[0]);
  if (!parsed.ok()) fail_with(parsed.error());
  // Signal and query handlers own what they touch: a query may come after the frame is gone.
  auto shared_chat = std::make_shared<ChatInput>(std::move(*parsed));
  ChatInput& chat = *shared_chat;
  const TaskInput& in = chat.base;
  const std::string sandbox_id = in.sandbox_id.empty() ? ctx.info().workflow_id : in.sandbox_id;
  std::vector<llm::ModelMessage> history = in.message_history;

  struct ChatState {
    RunView view;
    bool stop = false;
    bool busy = false;
  };
  auto st = std::make_shared<ChatState>();
  RunView& view = st->view;
  view.sandbox_id = sandbox_id;
  ctx.set_signal_handler(kSendUserTask, [shared_chat](const temporal::Args& a) {
    if (a.empty()) return;
    std::string task = a[0].is_string() ? a[0].get<std::string>() : core::json_string(a[0], "task");
    if (!task.empty()) shared_chat->pending.push_back(task);
  });
  ctx.set_signal_handler(kStopChat, [st](const temporal::Args&) { st->stop = true; });
  ctx.set_query_handler(kProgressQuery, [st](const temporal::Args& a) { return st->view.progress(a); });
  ctx.set_query_handler(kAgentOutputQuery, [shared_chat, st, sandbox_id](const temporal::Args&) {
    return Json{{"turns", shared_chat->turns},
                {"pending", shared_chat->pending.size()},
                {"status", st->busy ? "running" : st->view.status},
                {"sandbox_id", sandbox_id}};
  });
  bool& stop = st->stop;
  bool& busy = st->busy;
  view.run_id = ctx.info().run_id;
  if (!chat.sandbox_started) {
    auto start_task = start_or_fail(ctx, in, sandbox_id, view);
    (void)co_await start_task;
    chat.sandbox_started = true;
  }
  auto prep_task = prepare(ctx, in, sandbox_id);
  Result<Prepared> prep = co_await prep_task;
  if (!prep.ok()) {
    auto fail_task = fail_after_cleanup(ctx, in, sandbox_id, view, prep.error());
    (void)co_await fail_task;
  }

  view.status = "idle";
  std::string reason;
  int turns_this_run = 0;
  const auto idle = std::chrono::milliseconds(static_cast<int64_t>(chat.idle_timeout_seconds * 1000));
  while (true) {
    auto wait = ctx.wait_condition([&] { return stop || !chat.pending.empty() || ctx.cancel_requested(); }, idle);
    bool woke = co_await wait;
    if (ctx.cancel_requested()) {
      reason = "cancelled";
      break;
    }
    if (stop) {
      reason = "stopped";
      break;
    }
    if (!woke) {
      reason = "idle";
      break;
    }
    std::string task = chat.pending[0].get<std::string>();
    chat.pending.erase(chat.pending.begin());
    busy = true;
    const std::string run_id = run_id_of(ctx) + "/" + std::to_string(chat.turns.size() + 1);
    auto turn_task = run_turn(ctx, in, *prep, sandbox_id, task, history, run_id, view);
    TurnResult turn = co_await turn_task;
    busy = false;
    if (turn.run.ok()) {
      history = turn.run->messages;
      chat.turns.push_back(Json{{"task", task}, {"output", turn.run->output_text()},
                                {"files", turn.files}, {"usage", usage_json(*turn.run)}});
    } else {
      if (turn.run.error().code() == core::Code::kCancelled) {
        reason = "cancelled";
        break;
      }
      chat.turns.push_back(Json{{"task", task}, {"output", nullptr}, {"files", Json::array()},
                                {"error", turn.run.error().message()}});
    }
    if (++turns_this_run >= chat.max_turns_per_run || ctx.continue_as_new_suggested()) {
      ChatInput next = chat;
      next.runs = chat.runs + 1;
      next.base.message_history = history;
      next.base.sandbox_id = sandbox_id;
      ctx.continue_as_new(temporal::Args{next.to_json()});
    }
  }

  view.status = "finishing";
  auto finish_task = finish_sandbox(ctx, in, sandbox_id, reason != "cancelled");
  (void)co_await finish_task;
  view.status = reason;
  if (reason == "cancelled") fail_cancelled("the chat was cancelled; sandbox \"" + sandbox_id + "\" was cleaned up");
  co_return Json{{"turns", chat.turns}, {"sandbox_id", sandbox_id}, {"reason", reason}, {"runs", chat.runs}};
}

}  // namespace

temporal::ActivityOptions activity_options(const ActivityPolicy& p) {
  using std::chrono::milliseconds;
  temporal::ActivityOptions o;
  o.start_to_close_timeout = milliseconds(static_cast<int64_t>(p.start_to_close_seconds * 1000));
  if (p.heartbeat_seconds > 0) o.heartbeat_timeout = milliseconds(static_cast<int64_t>(p.heartbeat_seconds * 1000));
  temporal::RetryPolicy retry;
  retry.initial_interval = milliseconds(static_cast<int64_t>(p.initial_retry_seconds * 1000));
  retry.maximum_interval = std::max(retry.initial_interval, milliseconds(30000));
  retry.maximum_attempts = p.max_attempts;
  o.retry_policy = retry;
  return o;
}

std::vector<std::pair<std::string, temporal::WorkflowFunction>> workflow_functions() {
  return {{kTaskWorkflow, task_workflow},
          {kChatWorkflow, chat_workflow},
          {kSimpleAgentWorkflow, simple_agent_workflow}};
}

void register_codeact_workflows(temporal::Replayer& replayer) {
  for (auto& [name, fn] : workflow_functions()) replayer.register_workflow(name, fn);
}

}  // namespace codeact::durable
