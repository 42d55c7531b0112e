// What `codeact run`, `codeact worker` and `codeact chat` share in durable mode: the Temporal
// flags, connecting (embedded dev server by default), a worker hosted in this process, following
// a workflow's "progress" query, and turning a workflow failure into the CLI's exit status.
#pragma once

#include <CLI/CLI.hpp>
#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "codeact/codeact/codeact_agent.hpp"
#include "codeact/durable/endpoint.hpp"
#include "codeact/durable/runner.hpp"
#include "codeact/durable/workflows.hpp"
#include "codeact/sandbox/moved_sandbox_reaper.hpp"
#include "codeact/temporal/client.hpp"
#include "codeact/temporal/worker.hpp"
#include "live_view.hpp"

namespace codeact::cli {

struct DurableFlags {
  std::string temporal;    // --temporal HOST:PORT
  std::string task_queue;  // --task-queue ("" = $TASK_QUEUE, else "codeact")
  bool no_worker = false;  // --no-worker: leave the work to `codeact worker` processes
  std::string host_id;     // --host-id of the worker this process hosts ("" = the default)
};

// Checks a host id option (--host-id, --host): sandbox::validate_host_id's message when bad.
CLI::Validator host_id_validator();

// Adds --temporal, --task-queue and --host-id (and --no-worker when `hosts_worker_optionally`).
void add_durable_flags(CLI::App* cmd, DurableFlags& flags, bool hosts_worker_optionally);
std::string task_queue_of(const DurableFlags& flags);

struct DurableSession {
  durable::TemporalEndpoint endpoint;
  std::optional<temporal::Client> client;
  std::unique_ptr<durable::CodeActWorkerRunner> worker;  // set when this process hosts one
  // With the worker: removes containers of sandboxes placed on another host since.
  std::unique_ptr<sandbox::MovedSandboxReaper> reaper;
};

// Resolves and connects to Temporal (progress lines to stderr) and, with `host_worker`, starts a
// worker for the task queue in this process with `builder`'s prompts, config and default model.
core::Result<std::unique_ptr<DurableSession>> open_session(const DurableFlags& flags,
                                                           const codeact::AgentBuilder& builder,
                                                           bool host_worker);

// Activity options from app_conf.yml `durable.activities` (defaults when absent); the whole
// `durable:` section is checked (durable::DurableConfig), an error names the file and the key.
core::Result<durable::ActivityPolicies> activity_policies(const codeact::AgentBuilder& builder);

// Shows new events of the workflow's "progress" query (a durable::ProgressReply) through `view`;
// returns false when the query failed (no worker yet, for instance) or its reply was malformed
// (said once on stderr) — callers just try again later.
class ProgressFollower {
 public:
  ProgressFollower(temporal::Client& client, std::string workflow_id, LiveView& view)
      : client_(client), workflow_id_(std::move(workflow_id)), view_(view) {}
  bool poll();
  const std::string& status() const { return status_; }

 private:
  temporal::Client& client_;
  std::string workflow_id_;
  LiveView& view_;
  size_t next_ = 0;
  std::string run_;  // the workflow run the events belong to
  std::string status_;
  bool said_malformed_ = false;  // a reply that is not a ProgressReply was reported
};

// "codeact: <message>" and the exit status for a failed workflow.
int report_failure(const temporal::Failure& failure);

// Ctrl-C handling for long waits: the first press sets `interrupted()`; a second one ends the
// process (the default action).
void install_interrupt_handler();
void restore_interrupt_handler();
bool interrupted();

// A short random hex suffix for generated ids.
std::string random_hex(int chars = 8);

}  // namespace codeact::cli
