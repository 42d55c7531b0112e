// CodeActWorkerRunner (after the seed's): a worker for durable CodeAct runs, built from config.
//
//   auto runner = durable::CodeActWorkerRunner::create({.task_queue = "sales"});
//   runner->add_agent(std::make_shared<MyAgent>());   // agents with host functions, MCP hooks
//   runner->start();                                    // polls until shutdown()
//   runner->wait();
//
// create() loads agent_prompts.yml and app_conf.yml (the usual search, or the given paths),
// reads its `durable:` section strictly (durable_config.hpp: an unknown key or a wrong type is
// an InvalidArgument error naming it, before anything is started), connects to Temporal (--temporal / temporal.url, else the embedded dev server, see
// endpoint.hpp) and to Docker, and registers the three workflows and the codeact.* activities
// (workflows.hpp) on the task queue. Models, API keys and MCP servers are read by this process
// only. Thread-safe: shutdown() may be called from any thread (a signal-handling one).
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "codeact/durable/endpoint.hpp"
#include "codeact/durable/workflows.hpp"

namespace codeact::durable {

struct WorkerRunnerOptions {
  std::string task_queue;    // "" = $TASK_QUEUE, else "codeact"
  std::string temporal;      // HOST:PORT; "" = temporal.url, else the embedded dev server
  std::string config_path;   // app_conf.yml; "" = the usual search
  std::string prompts_path;  // agent_prompts.yml; "" = the usual search (built-in prompts if none)
  std::string model;         // default model for runs that name none; "" = from config
  std::optional<codeact::AgentBuilder> builder;  // used as is instead of loading the two files
  int max_concurrent_activities = 16;
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
  ~CodeActWorkerRunner();

  // Registers an agent defined in C++ under its name. REQUIRES: before start().
  CodeActWorkerRunner& add_agent(std::shared_ptr<codeact::CodeActAgent> agent);

  core::Status start();
  void wait();
  void shutdown(std::chrono::milliseconds deadline = std::chrono::seconds(30));

  const TemporalEndpoint& endpoint() const { return endpoint_; }
  const std::string& task_queue() const { return task_queue_; }
  temporal::Client& client() { return *client_; }
  const WorkerEnv& env() const { return *env_; }

 private:
  CodeActWorkerRunner() = default;
  TemporalEndpoint endpoint_;
  std::string task_queue_;
  std::optional<temporal::Client> client_;
  std::shared_ptr<WorkerEnv> env_;
  std::unique_ptr<temporal::Worker> worker_;
  std::atomic<bool> started_{false};
  double reap_interval_seconds_ = 60;
  std::thread reaper_;
  std::mutex reaper_mu_;
  std::condition_variable reaper_cv_;
  bool reaper_stop_ = false;  // GUARDED_BY(reaper_mu_)
};

// $TASK_QUEUE, else "codeact".
std::string default_task_queue();

// What one pass of the reaper did: the sandboxes it stopped, and what went wrong (listing the
// sandboxes, asking Temporal about a workflow, stopping a sandbox), each saying which sandbox.
struct ReapResult {
  std::vector<std::string> stopped;
  std::vector<std::string> problems;
};

// One pass of the reaper (see WorkerRunnerOptions::reap_interval_seconds). The runner's loop
// logs each problem as a warning.
ReapResult reap_orphaned_sandboxes(temporal::Client& client, sandbox::SandboxBackend& backend);

}  // namespace codeact::durable
