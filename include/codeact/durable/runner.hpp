// CodeActWorkerRunner (after the seed's): a worker for durable CodeAct runs, built from config.
//
//   auto runner = durable::CodeActWorkerRunner::create({.task_queue = "sales"});
//   runner->add_agent(std::make_shared<MyAgent>());   // agents with host functions, MCP hooks
//   runner->start();                                    // polls until shutdown()
//   runner->wait();
//
// create() loads agent_prompts.yml and app_conf.yml (the usual search, or the given paths),
// reads its `durable:` section strictly (durable_config.hpp: an unknown key or a wrong type is
// an InvalidArgument error naming it, before anything is started), connects to Temporal
// (--temporal / temporal.url, else the embedded dev server, see endpoint.hpp) and to Docker,
// and registers the three workflows and the codeact.* activities
// (workflows.hpp) on the task queue, and the activities again on this host's queue
// (host_task_queue(task_queue, host_id), sandbox_host.hpp), where a run sends the activities of a
// sandbox this worker started. Models, API keys and MCP servers are read by this process
// only. Thread-safe: shutdown() may be called from any thread (a signal-handling one).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "codeact/durable/endpoint.hpp"
#include "codeact/durable/workflows.hpp"

namespace codeact::durable {

struct WorkerRunnerOptions {
  std::string task_queue;    // "" = $TASK_QUEUE, else "codeact"
  std::string temporal;      // HOST:PORT; "" = temporal.url, else the embedded dev server
  std::string config_path;   // app_conf.yml; "" = the usual search
  std::string prompts_path;  // agent_prompts.yml; "" = the usual search (built-in prompts if none)
  std::string model;         // default model for runs that name none; "" = from config
  // This worker's host: the one Docker engine its sandboxes run on (docs/deploy.md). Workers
  // on one engine share it; workers on different engines must not. "" = sandbox::default_host_id().
  std::string host_id;
  std::optional<codeact::AgentBuilder> builder;  // used as is instead of loading the two files
  int max_concurrent_activities = 16;
  // Activities at once from this host's queue (every activity of the runs whose sandboxes live
  // here, mostly waiting on their kernels). Sized for every sandbox of the host at once: one that
  // waits longer than durable.activities.host_timeout_seconds to be taken fails its run as if
  // the host were lost.
  int max_concurrent_host_activities = 256;
  // Workflow task pollers, half of them on the worker's sticky queue (temporal::WorkerOptions):
  // also how many workflow tasks and queries are processed at once.
  int workflow_task_pollers = 4;
  std::shared_ptr<sandbox::SandboxBackend> backend;  // null = a SandboxManager on the local Docker
  std::function<void(const std::string&)> progress;  // "starting the embedded ..." lines
  // How often to look for sandboxes orphaned by terminated or timed-out runs (whose workflow code
  // never got to clean up): a running sandbox whose id is the id of a codeact workflow that ended
  // that way is stopped (its volume kept). 0 = never. Default: app_conf.yml
  // durable.reap_interval_seconds (durable_config.hpp), else 60.
  std::optional<double> reap_interval_seconds;
};

class CodeActWorkerRunner {
 public:
  static core::Result<std::unique_ptr<CodeActWorkerRunner>> create(WorkerRunnerOptions options);
  ~CodeActWorkerRunner();  // shutdown() with a 5 s deadline

  // Registers an agent defined in C++ under its name. REQUIRES: before start().
  CodeActWorkerRunner& add_agent(std::shared_ptr<codeact::CodeActAgent> agent);

  // Starts polling the task queue, and the reaper unless its interval is 0.
  core::Status start();
  // Blocks until the worker has stopped (shutdown() from another thread).
  void wait();
  // Stops the reaper and the worker; running activities get until `deadline`. Idempotent.
  void shutdown(std::chrono::milliseconds deadline = std::chrono::seconds(30));

  const TemporalEndpoint& endpoint() const;
  const std::string& task_queue() const;
  const std::string& host_id() const;
  temporal::Client& client();
  // What the activities run with; env().live_output is the hub where this worker publishes a
  // cell's output while it runs (live_output.hpp): a server in this process subscribes there.
  const WorkerEnv& env() const;

 private:
  struct Impl;
  explicit CodeActWorkerRunner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// $TASK_QUEUE, else "codeact".
std::string default_task_queue();

}  // namespace codeact::durable
