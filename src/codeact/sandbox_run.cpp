// SandboxRun: a run's sandbox from start to end, the same steps in both modes.
#include "codeact/codeact/sandbox_run.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace codeact::codeact {

using core::Result;

std::string_view sandbox_end_name(SandboxEnd end) {
  switch (end) {
    case SandboxEnd::kStop:
      return "stop";
    case SandboxEnd::kRemove:
      return "remove";
    case SandboxEnd::kKeep:
      return "keep";
  }
  return "stop";
}

SandboxEnd SandboxPlan::end(bool success) const {
  if (keep_sandbox) return SandboxEnd::kKeep;
  return success && !remove_volume ? SandboxEnd::kStop : SandboxEnd::kRemove;
}

sandbox::SandboxOptions SandboxPlan::start_options() const {
  sandbox::SandboxOptions o;
  o.id = sandbox_id;
  o.python_packages = python_packages;
  o.system_packages = system_packages;
  o.network = network;
  o.disk = disk;
  return o;
}

Result<SandboxStarted> start_sandbox(sandbox::SandboxBackend& backend, const SandboxPlan& plan) {
  if (plan.fork_from) {
    auto existing = backend.info(plan.sandbox_id);
    bool fork = !existing.ok() && existing.error().code() == core::Code::kNotFound;
    if (!existing.ok() && !fork) return existing.error();
    if (existing.ok()) {
      CODEACT_TRY(auto history, backend.history(plan.sandbox_id));
      fork = history.checkpoints.empty();
    }
    if (fork) {
      CODEACT_TRY(auto forked, backend.fork(plan.fork_from->sandbox, plan.fork_from->checkpoint,
                                            plan.sandbox_id));
      return SandboxStarted{false, forked.sandbox.volume, "", !forked.sandbox.shared_dir.empty(),
                            forked.sandbox.cell};
    }
  }
  CODEACT_TRY(auto info, backend.start(plan.start_options()));
  return SandboxStarted{info.resumed, info.volume, "", !info.shared_dir.empty(), info.cell};
}

core::Status end_sandbox(sandbox::SandboxBackend& backend, const std::string& sandbox_id,
                         SandboxEnd end, bool remove_volume) {
  core::Status s;
  switch (end) {
    case SandboxEnd::kKeep:
      return core::ok_status();
    case SandboxEnd::kStop:
      s = backend.stop(sandbox_id);
      break;
    case SandboxEnd::kRemove:
      s = backend.remove(sandbox_id, remove_volume);
      break;
  }
  if (!s.ok() && s.error().code() == core::Code::kNotFound) return core::ok_status();
  return s;
}

std::vector<std::string> produced_files(const std::vector<sandbox::FileEntry>& before,
                                        const std::vector<sandbox::FileEntry>& after) {
  std::map<std::string, std::pair<int64_t, double>> old;
  for (const auto& f : before) old[f.path] = {f.size, f.mtime};
  std::vector<std::string> out;
  for (const auto& f : after) {
    auto it = old.find(f.path);
    if (it == old.end() || it->second.first != f.size || it->second.second != f.mtime)
      out.push_back(f.path);
  }
  std::sort(out.begin(), out.end());
  return out;
}

core::Error with_cleanup(core::Error error, const core::Status& cleanup) {
  if (cleanup.ok()) return error;
  return core::Error(error.code(), error.message() + " (and cleaning up the sandbox failed: " +
                                       cleanup.error().message() + ")");
}

// ---------------------------------------------------------------------------------------------

SandboxRun::SandboxRun(RunSteps& steps, SandboxPlan plan,
                       std::function<void(const SandboxRunEvent&)> on_event)
    : steps_(steps), plan_(std::move(plan)), on_event_(std::move(on_event)) {}

void SandboxRun::emit(SandboxRunEvent e) const {
  if (on_event_) on_event_(e);
}

agent::Task<Result<SandboxStarted>> SandboxRun::open() {
  const std::string& id = plan_.sandbox_id;
  emit(SandboxRunEvent{.kind = SandboxRunEvent::Kind::kStarting, .sandbox_id = id});
  auto start_task = steps_.start_sandbox(plan_);
  Result<SandboxStarted> started = co_await start_task;
  if (!started.ok()) {
    core::Error error = started.error().with_context("starting sandbox \"" + id + "\"");
    auto close_task = close(false);
    core::Status closed = co_await close_task;
    co_return with_cleanup(std::move(error), closed);
  }
  emit(SandboxRunEvent{
      .kind = SandboxRunEvent::Kind::kStarted, .sandbox_id = id, .started = *started});
  co_return started;
}

agent::Task<Result<PreparedAgent>> SandboxRun::prepare() {
  auto task = steps_.prepare_agent(plan_.sandbox_id);
  Result<PreparedAgent> prepared = co_await task;
  co_return prepared;
}

agent::Task<TurnResult> SandboxRun::turn(const PreparedAgent& prepared, std::string task,
                                         agent::RunOptions options) {
  const std::string& id = plan_.sandbox_id;
  TurnResult out;
  auto before_task = steps_.list_output(id);
  Result<std::vector<sandbox::FileEntry>> before = co_await before_task;
  if (!before.ok()) {
    out.run = std::move(before).error().with_context("listing the files of sandbox \"" + id + "\"");
    co_return out;
  }
  auto run_task = prepared.agent->run_task(std::move(task), std::move(options), prepared.drivers);
  out.run = co_await run_task;
  if (!out.run.ok()) co_return out;
  auto after_task = steps_.list_output(id);
  Result<std::vector<sandbox::FileEntry>> after = co_await after_task;
  if (!after.ok()) {
    out.run = std::move(after).error().with_context(
        "listing the files the run produced in sandbox \"" + id + "\"");
    co_return out;
  }
  out.files = produced_files(*before, *after);
  emit(
      SandboxRunEvent{.kind = SandboxRunEvent::Kind::kFiles, .sandbox_id = id, .files = out.files});
  co_return out;
}

agent::Task<core::Status> SandboxRun::close(bool success) {
  const std::string& id = plan_.sandbox_id;
  const SandboxEnd end = plan_.end(success);
  emit(SandboxRunEvent{.kind = SandboxRunEvent::Kind::kClosing, .sandbox_id = id, .end = end});
  auto finish_task = steps_.finish_sandbox(id, end, plan_.remove_volume);
  core::Status closed = co_await finish_task;
  emit(SandboxRunEvent{
      .kind = SandboxRunEvent::Kind::kClosed, .sandbox_id = id, .end = end, .closed = closed});
  co_return closed;
}

agent::Task<TaskRunOutcome> run_task_in_sandbox(SandboxRun& run, std::string task,
                                                agent::RunOptions options,
                                                std::function<bool()> cancelled) {
  TaskRunOutcome out;
  auto open_task = run.open();
  Result<SandboxStarted> opened = co_await open_task;
  if (!opened.ok()) {
    out.run = std::move(opened).error();
    co_return out;
  }
  out.opened = true;
  auto prepare_task = run.prepare();
  Result<PreparedAgent> prepared = co_await prepare_task;
  if (prepared.ok()) {
    out.model_name = prepared->model_name;
    auto turn_task = run.turn(*prepared, std::move(task), std::move(options));
    TurnResult turn = co_await turn_task;
    out.run = std::move(turn.run);
    out.files = std::move(turn.files);
  } else {
    out.run = std::move(prepared).error();
  }
  out.cancelled = (cancelled && cancelled()) ||
                  (!out.run.ok() && out.run.error().code() == core::Code::kCancelled);
  auto close_task = run.close(out.run.ok() && !out.cancelled);
  out.closed = co_await close_task;
  co_return out;
}

}  // namespace codeact::codeact
