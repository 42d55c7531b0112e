#include "codeact/durable/runner.hpp"

#include <fmt/format.h>

#include <cmath>

#include "codeact/core/config.hpp"
#include "codeact/durable/durable_config.hpp"
#include "codeact/core/log.hpp"
#include "codeact/sandbox/docker_client.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"

namespace codeact::durable {

std::string default_task_queue() {
  auto env = core::getenv_string("TASK_QUEUE");
  return env && !env->empty() ? *env : std::string(kDefaultTaskQueue);
}

core::Result<std::unique_ptr<CodeActWorkerRunner>> CodeActWorkerRunner::create(
    WorkerRunnerOptions options) {
  std::unique_ptr<CodeActWorkerRunner> r(new CodeActWorkerRunner());
  r->env_ = std::make_shared<WorkerEnv>();
  if (options.builder) {
    r->env_->builder = std::move(*options.builder);
  } else {
    CODEACT_TRY(r->env_->builder,
                codeact::AgentBuilder::load(options.prompts_path, options.config_path));
  }
  if (!options.model.empty()) r->env_->builder.model = options.model;
  // Before connecting to anything: a misspelt key under `durable:` fails the worker at once.
  auto durable_config = DurableConfig::from_config(r->env_->builder.config.raw);
  if (!durable_config.ok())
    return std::move(durable_config).error().with_context(r->env_->builder.config.source.empty()
                                                             ? std::string("app_conf.yml")
                                                             : r->env_->builder.config.source);
  r->reap_interval_seconds_ =
      options.reap_interval_seconds.value_or(durable_config->reap_interval_seconds);
  if (!std::isfinite(r->reap_interval_seconds_) || r->reap_interval_seconds_ < 0 ||
      r->reap_interval_seconds_ > kMaxPolicySeconds)
    return core::invalid_argument(
        fmt::format("reap_interval_seconds must be between 0 (no reaper) and {}, not {}",
                    kMaxPolicySeconds, r->reap_interval_seconds_));
  r->env_->backend = options.backend;
  if (!r->env_->backend) {
    CODEACT_TRY(auto docker, sandbox::DockerClient::create());
    CODEACT_TRY_STATUS(docker->ping());
    // `sandbox.disk` of the worker's app_conf.yml is the default disk of the sandboxes it starts.
    auto manager_options = sandbox::manager_options_from_config(r->env_->builder.config.raw);
    if (!manager_options.ok()) return manager_options.error().with_context("app_conf.yml");
    r->env_->backend = std::make_shared<sandbox::SandboxManager>(docker, *manager_options);
  }
  EndpointRequest req;
  req.flag = options.temporal;
  req.config_url = r->env_->builder.config.temporal_url;
  req.ns = r->env_->builder.config.temporal_namespace;
  CODEACT_TRY(r->endpoint_, resolve_temporal(req, options.progress));
  CODEACT_TRY(auto client, connect_temporal(r->endpoint_, std::chrono::seconds(15)));
  r->client_.emplace(std::move(client));
  r->task_queue_ = options.task_queue.empty() ? default_task_queue() : options.task_queue;
  temporal::WorkerOptions wo;
  wo.task_queue = r->task_queue_;
  wo.max_concurrent_activities = options.max_concurrent_activities;
  wo.on_workflow_task = [](const temporal::WorkflowTaskStats& st) {
    core::log().debug("workflow task {} event {}: {} events fed, cache {}, {:.2f} ms",
                      st.workflow_id, st.history_length, st.events_fed,
                      st.cache_hit ? "hit" : "miss",
                      std::chrono::duration<double, std::milli>(st.processing_time).count());
  };
  r->worker_ = std::make_unique<temporal::Worker>(*r->client_, wo);
  return r;
}

CodeActWorkerRunner::~CodeActWorkerRunner() { shutdown(std::chrono::seconds(5)); }

CodeActWorkerRunner& CodeActWorkerRunner::add_agent(std::shared_ptr<codeact::CodeActAgent> agent) {
  const std::string name = agent->name();
  env_->agents[name] = std::move(agent);
  return *this;
}

ReapResult reap_orphaned_sandboxes(temporal::Client& client, sandbox::SandboxBackend& backend) {
  ReapResult out;
  auto sandboxes = backend.list();
  if (!sandboxes.ok()) {
    out.problems.push_back("listing the sandboxes failed: " + sandboxes.error().message());
    return out;
  }
  for (const auto& sb : *sandboxes) {
    if (!sb.running) continue;
    auto d = client.describe_workflow(sb.id);
    if (!d.ok()) {
      // No workflow of that id: a sandbox of someone else, nothing to do.
      if (d.error().code() != core::Code::kNotFound) {
        out.problems.push_back("sandbox \"" + sb.id + "\": asking Temporal about workflow \"" +
                               sb.id + "\" failed: " + d.error().message());
      }
      continue;
    }
    const bool ours = d->workflow_type == kTaskWorkflow || d->workflow_type == kChatWorkflow ||
                      d->workflow_type == kSimpleAgentWorkflow;
    // Completed, failed and cancelled runs cleaned up themselves (or kept the sandbox on purpose).
    if (!ours || (d->status != "Terminated" && d->status != "TimedOut")) continue;
    auto stopped = backend.stop(sb.id);
    if (!stopped.ok()) {
      out.problems.push_back(
          "sandbox \"" + sb.id + "\": its workflow ended " + d->status +
          " without cleaning up, and stopping it failed: " + stopped.error().message());
      continue;
    }
    core::log().info("stopped sandbox {}: its workflow ended {} without cleaning up (volume kept)",
                     sb.id, d->status);
    out.stopped.push_back(sb.id);
  }
  return out;
}

core::Status CodeActWorkerRunner::start() {
  register_codeact(*worker_, env_);
  CODEACT_TRY_STATUS(worker_->start());
  started_ = true;
  if (reap_interval_seconds_ > 0) {
    reaper_ = std::thread([this] {
      const auto interval =
          std::chrono::milliseconds(static_cast<int64_t>(reap_interval_seconds_ * 1000));
      std::unique_lock lock(reaper_mu_);
      while (!reaper_cv_.wait_for(lock, interval, [this] { return reaper_stop_; })) {
        lock.unlock();
        for (const auto& problem : reap_orphaned_sandboxes(*client_, *env_->backend).problems)
          core::log().warn("reaper: {}", problem);
        lock.lock();
      }
    });
  }
  return core::ok_status();
}

void CodeActWorkerRunner::wait() { worker_->wait(); }

void CodeActWorkerRunner::shutdown(std::chrono::milliseconds deadline) {
  {
    std::lock_guard lock(reaper_mu_);
    reaper_stop_ = true;
  }
  reaper_cv_.notify_all();
  if (reaper_.joinable() && reaper_.get_id() != std::this_thread::get_id()) reaper_.join();
  if (worker_ && started_.exchange(false)) worker_->shutdown(deadline);
}

}  // namespace codeact::durable
