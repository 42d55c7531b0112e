#include "codeact/durable/runner.hpp"

#include "codeact/core/config.hpp"
#include "codeact/core/log.hpp"
#include "codeact/sandbox/docker_client.hpp"

namespace codeact::durable {

std::string default_task_queue() {
  auto env = core::getenv_string("TASK_QUEUE");
  return env && !env->empty() ? *env : std::string(kDefaultTaskQueue);
}

core::Result<std::unique_ptr<CodeActWorkerRunner>> CodeActWorkerRunner::create(WorkerRunnerOptions options) {
  std::unique_ptr<CodeActWorkerRunner> r(new CodeActWorkerRunner());
  r->env_ = std::make_shared<WorkerEnv>();
  if (options.builder) {
    r->env_->builder = std::move(*options.builder);
  } else {
    CODEACT_TRY(r->env_->builder, codeact::AgentBuilder::load(options.prompts_path, options.config_path));
  }
  if (!options.model.empty()) r->env_->builder.model = options.model;
  r->env_->manager = options.manager;
  if (!r->env_->manager) {
    CODEACT_TRY(auto docker, sandbox::DockerClient::create());
    CODEACT_TRY_STATUS(docker->ping());
    r->env_->manager = std::make_shared<sandbox::SandboxManager>(docker);
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
    core::log().debug("workflow task {} event {}: {} events fed, cache {}, {:.2f} ms", st.workflow_id,
                      st.history_length, st.events_fed, st.cache_hit ? "hit" : "miss",
                      std::chrono::duration<double, std::milli>(st.processing_time).count());
  };
  r->worker_ = std::make_unique<temporal::Worker>(*r->client_, wo);
  return r;
}

CodeActWorkerRunner::~CodeActWorkerRunner() {
  shutdown(std::chrono::seconds(5));
}

CodeActWorkerRunner& CodeActWorkerRunner::add_agent(std::shared_ptr<codeact::CodeActAgent> agent) {
  const std::string name = agent->name();
  env_->agents[name] = std::move(agent);
  return *this;
}

core::Status CodeActWorkerRunner::start() {
  register_codeact(*worker_, env_);
  CODEACT_TRY_STATUS(worker_->start());
  started_ = true;
  return core::ok_status();
}

void CodeActWorkerRunner::wait() { worker_->wait(); }

void CodeActWorkerRunner::shutdown(std::chrono::milliseconds deadline) {
  if (worker_ && started_.exchange(false)) worker_->shutdown(deadline);
}

}  // namespace codeact::durable
