// CodeActWorkerRunner: config, Temporal, Docker, the worker and its reaper (reaper.hpp).
#include "codeact/durable/runner.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <mutex>
#include <utility>

#include "codeact/core/config.hpp"
#include "codeact/core/log.hpp"
#include "codeact/durable/activities.hpp"
#include "codeact/durable/durable_config.hpp"
#include "codeact/durable/sandbox_host.hpp"
#include "codeact/sandbox/docker_client.hpp"
#include "codeact/sandbox/host_id.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"
#include "reaper.hpp"

namespace codeact::durable {

std::string default_task_queue() {
  auto env = core::getenv_string("TASK_QUEUE");
  return env && !env->empty() ? *env : std::string(kDefaultTaskQueue);
}

struct CodeActWorkerRunner::Impl {
  TemporalEndpoint endpoint;
  std::string task_queue;
  std::optional<temporal::Client> client;
  std::shared_ptr<WorkerEnv> env;
  std::unique_ptr<temporal::Worker> worker;
  std::unique_ptr<temporal::Worker> host_worker;  // the activities, on this host's queue
  double reap_interval_seconds = 60;
  std::mutex mu;
  bool started = false;                      // GUARDED_BY(mu)
  std::unique_ptr<internal::Reaper> reaper;  // GUARDED_BY(mu)
};

CodeActWorkerRunner::CodeActWorkerRunner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

core::Result<std::unique_ptr<CodeActWorkerRunner>> CodeActWorkerRunner::create(
    WorkerRunnerOptions options) {
  auto r = std::make_unique<Impl>();
  r->env = std::make_shared<WorkerEnv>();
  r->env->live_output = std::make_shared<LiveOutput>();  // a server in this process subscribes
  if (options.builder) {
    r->env->builder = std::move(*options.builder);
  } else {
    CODEACT_TRY(r->env->builder,
                codeact::AgentBuilder::load(options.prompts_path, options.config_path));
  }
  if (!options.model.empty()) r->env->builder.model = options.model;
  r->env->host_id = options.host_id.empty() ? sandbox::default_host_id() : options.host_id;
  CODEACT_TRY_STATUS(sandbox::validate_host_id(r->env->host_id));
  // Before connecting to anything: a misspelt key under `durable:` fails the worker at once.
  auto durable_config = DurableConfig::from_config(r->env->builder.config.raw);
  if (!durable_config.ok())
    return std::move(durable_config)
        .error()
        .with_context(r->env->builder.config.source.empty() ? std::string("app_conf.yml")
                                                            : r->env->builder.config.source);
  r->reap_interval_seconds =
      options.reap_interval_seconds.value_or(durable_config->reap_interval_seconds);
  if (!std::isfinite(r->reap_interval_seconds) || r->reap_interval_seconds < 0 ||
      r->reap_interval_seconds > kMaxPolicySeconds)
    return core::invalid_argument(
        fmt::format("reap_interval_seconds must be between 0 (no reaper) and {}, not {}",
                    kMaxPolicySeconds, r->reap_interval_seconds));
  r->env->backend = options.backend;
  if (!r->env->backend) {
    CODEACT_TRY(auto docker, sandbox::DockerClient::create());
    CODEACT_TRY_STATUS(docker->ping());
    // `sandbox.disk` of the worker's app_conf.yml is the default disk of the sandboxes it starts.
    auto manager_options = sandbox::manager_options_from_config(r->env->builder.config.raw);
    if (!manager_options.ok()) return manager_options.error().with_context("app_conf.yml");
    r->env->backend = std::make_shared<sandbox::SandboxManager>(docker, *manager_options);
  }
  EndpointRequest req;
  req.flag = options.temporal;
  req.config_url = r->env->builder.config.temporal_url;
  req.ns = r->env->builder.config.temporal_namespace;
  req.tls = r->env->builder.config.temporal_tls;
  CODEACT_TRY(r->endpoint, resolve_temporal(req, options.progress));
  CODEACT_TRY(auto client, connect_temporal(r->endpoint, std::chrono::seconds(15)));
  r->client.emplace(std::move(client));
  r->task_queue = options.task_queue.empty() ? default_task_queue() : options.task_queue;
  // A copy of the client (it shares the connection): an activity thread may outlive the runner.
  r->env->workflow_ended = [client = *r->client](const std::string& id) mutable {
    auto d = client.describe_workflow(id);
    if (!d.ok()) return d.error().code() == core::Code::kNotFound;
    return d->status != "Running";
  };
  temporal::WorkerOptions wo;
  wo.task_queue = r->task_queue;
  // Which host ran what, in every ActivityTaskStarted event of a run's history.
  wo.identity = fmt::format("{}@{} (codeact)", ::getpid(), r->env->host_id);
  wo.max_concurrent_activities = options.max_concurrent_activities;
  wo.workflow_task_pollers = options.workflow_task_pollers;
  wo.on_workflow_task = [](const temporal::WorkflowTaskStats& st) {
    core::log().debug("workflow task {} event {}: {} events fed, cache {}, {:.2f} ms",
                      st.workflow_id, st.history_length, st.events_fed,
                      st.cache_hit ? "hit" : "miss",
                      std::chrono::duration<double, std::milli>(st.processing_time).count());
  };
  r->worker = std::make_unique<temporal::Worker>(*r->client, wo);
  wo.task_queue = host_task_queue(r->task_queue, r->env->host_id);
  wo.max_concurrent_activities = options.max_concurrent_host_activities;
  wo.on_workflow_task = nullptr;
  r->host_worker = std::make_unique<temporal::Worker>(*r->client, wo);
  return std::unique_ptr<CodeActWorkerRunner>(new CodeActWorkerRunner(std::move(r)));
}

CodeActWorkerRunner::~CodeActWorkerRunner() { shutdown(std::chrono::seconds(5)); }

CodeActWorkerRunner& CodeActWorkerRunner::add_agent(std::shared_ptr<codeact::CodeActAgent> agent) {
  const std::string name = agent->name();
  impl_->env->agents[name] = std::move(agent);
  return *this;
}

core::Status CodeActWorkerRunner::start() {
  std::lock_guard lock(impl_->mu);
  if (impl_->started) return core::failed_precondition("the worker runner is already started");
  // One set of activities (bound agents, MCP sessions) for both queues.
  auto activities = std::make_shared<CodeActActivities>(impl_->env);
  for (const auto& [name, fn] : workflow_functions()) impl_->worker->register_workflow(name, fn);
  register_codeact_activities(*impl_->worker, activities);
  register_codeact_activities(*impl_->host_worker, activities);
  CODEACT_TRY_STATUS(impl_->worker->start());
  if (auto started = impl_->host_worker->start(); !started.ok()) {
    impl_->worker->shutdown(std::chrono::seconds(5));
    return started;
  }
  impl_->started = true;
  if (impl_->reap_interval_seconds > 0) {
    impl_->reaper = std::make_unique<internal::Reaper>(
        *impl_->client, impl_->env->backend,
        std::chrono::milliseconds(static_cast<int64_t>(impl_->reap_interval_seconds * 1000)));
  }
  return core::ok_status();
}

void CodeActWorkerRunner::wait() { impl_->worker->wait(); }

void CodeActWorkerRunner::shutdown(std::chrono::milliseconds deadline) {
  std::unique_ptr<internal::Reaper> reaper;
  bool was_started = false;
  {
    std::lock_guard lock(impl_->mu);
    reaper = std::move(impl_->reaper);
    was_started = std::exchange(impl_->started, false);
  }
  reaper.reset();  // stops and joins its thread
  if (was_started && impl_->host_worker) impl_->host_worker->shutdown(deadline);
  if (was_started && impl_->worker) impl_->worker->shutdown(deadline);
}

const TemporalEndpoint& CodeActWorkerRunner::endpoint() const { return impl_->endpoint; }
const std::string& CodeActWorkerRunner::task_queue() const { return impl_->task_queue; }
const std::string& CodeActWorkerRunner::host_id() const { return impl_->env->host_id; }
temporal::Client& CodeActWorkerRunner::client() { return *impl_->client; }
const WorkerEnv& CodeActWorkerRunner::env() const { return *impl_->env; }

}  // namespace codeact::durable
