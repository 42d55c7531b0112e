#include "durable_support.hpp"

#include <fmt/format.h>

#include <csignal>
#include <iostream>
#include <random>

#include "cli_context.hpp"
#include "codeact/core/cancel.hpp"
#include "codeact/core/config.hpp"
#include "codeact/durable/durable_config.hpp"
#include "codeact/sandbox/host_id.hpp"

namespace codeact::cli {
namespace {

core::CancelToken g_interrupt;
extern "C" void on_interrupt(int) { g_interrupt.cancel(); }

}  // namespace

CLI::Validator host_id_validator() {
  return CLI::Validator(
      [](const std::string& v) {
        auto ok = sandbox::validate_host_id(v);
        return ok.ok() ? std::string() : ok.error().message();
      },
      "HOST_ID");
}

void add_durable_flags(CLI::App* cmd, DurableFlags& flags, bool hosts_worker_optionally) {
  cmd->add_option("--temporal", flags.temporal,
                  "Temporal frontend HOST:PORT (default: app_conf.yml temporal.url; if none, an "
                  "embedded dev server is started or reused)");
  cmd->add_option("--task-queue", flags.task_queue,
                  "Temporal task queue (default: $TASK_QUEUE, else codeact)");
  cmd->add_option("--host-id", flags.host_id,
                  "This machine's host id for the worker this process runs: the sandboxes it "
                  "starts live on this Docker engine, and their work comes to it through task "
                  "queue QUEUE@ID (default: $CODEACT_HOST_ID, else the host name; docs/deploy.md)")
      ->check(host_id_validator());
  if (hosts_worker_optionally) {
    cmd->add_flag(
        "--no-worker", flags.no_worker,
        "Do not host a worker in this process; `codeact worker` processes run the workflow");
  }
}

std::string task_queue_of(const DurableFlags& flags) {
  return flags.task_queue.empty() ? durable::default_task_queue() : flags.task_queue;
}

core::Result<durable::ActivityPolicies> activity_policies(const codeact::AgentBuilder& builder) {
  auto c = durable::DurableConfig::from_config(builder.config.raw);
  if (!c.ok())
    return std::move(c).error().with_context(
        builder.config.source.empty() ? std::string("app_conf.yml") : builder.config.source);
  return c->activities;
}

core::Result<std::unique_ptr<DurableSession>> open_session(const DurableFlags& flags,
                                                           const codeact::AgentBuilder& builder,
                                                           bool host_worker) {
  auto session = std::make_unique<DurableSession>();
  auto say = [](const std::string& line) { std::cerr << "[codeact] " << line << "\n"; };
  auto explain = [&](const core::Error& e) {
    if (e.code() != core::Code::kUnavailable ||
        (flags.temporal.empty() && builder.config.temporal_url.empty()))
      return e;
    return core::unavailable(e.message() +
                             " (check --temporal / temporal.url, or run with --no-durable)");
  };
  if (host_worker) {
    durable::WorkerRunnerOptions o;
    o.task_queue = task_queue_of(flags);
    o.temporal = flags.temporal;
    o.builder = builder;
    o.host_id = flags.host_id;
    o.progress = say;
    CODEACT_TRY(auto manager, make_manager(builder.config.source, flags.host_id));
    o.backend = manager;
    session->reaper = std::make_unique<sandbox::MovedSandboxReaper>(manager);
    auto runner = durable::CodeActWorkerRunner::create(std::move(o));
    if (!runner.ok()) return explain(runner.error());
    session->worker = std::move(*runner);
    session->endpoint = session->worker->endpoint();
    session->client.emplace(session->worker->client());
    CODEACT_TRY_STATUS(session->worker->start());
    return session;
  }
  durable::EndpointRequest req;
  req.flag = flags.temporal;
  req.config_url = builder.config.temporal_url;
  req.ns = builder.config.temporal_namespace;
  req.tls = builder.config.temporal_tls;
  CODEACT_TRY(session->endpoint, durable::resolve_temporal(req, say));
  auto client = durable::connect_temporal(session->endpoint, std::chrono::seconds(15));
  if (!client.ok()) return explain(client.error());
  session->client.emplace(std::move(*client));
  return session;
}

bool ProgressFollower::poll() {
  auto r = client_.query_workflow(workflow_id_, "", durable::kProgressQuery,
                                  temporal::Args{core::Json{{"since", next_}}});
  if (!r.ok()) return false;
  auto reply = durable::ProgressReply::from_json(*r);
  if (!reply.ok()) {
    if (!said_malformed_) std::cerr << "[codeact] " << reply.error().message() << "\n";
    said_malformed_ = true;
    return false;
  }
  // A chat continued as new: its events start again at 0.
  if (!run_.empty() && reply->run_id != run_) {
    run_ = reply->run_id;
    next_ = 0;
    return poll();
  }
  run_ = reply->run_id;
  for (const auto& e : reply->events) view_.show_json(e);
  next_ = static_cast<size_t>(reply->next);
  status_ = reply->status;
  return true;
}

int report_failure(const temporal::Failure& failure) {
  const temporal::Failure& root = failure.root_cause();
  if (root.kind == temporal::FailureKind::kCanceled ||
      failure.kind == temporal::FailureKind::kCanceled) {
    std::cerr << "codeact: "
              << (root.message.empty() ? std::string("the run was cancelled") : root.message)
              << "\n";
    return 130;
  }
  return report(root.to_error());
}

void install_interrupt_handler() {
  g_interrupt.reset();
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sa.sa_flags = SA_RESETHAND;  // a second Ctrl-C ends the process at once
  sigaction(SIGINT, &sa, nullptr);
}

void restore_interrupt_handler() { signal(SIGINT, SIG_DFL); }
bool interrupted() { return g_interrupt.cancelled(); }

std::string random_hex(int chars) {
  std::random_device rd;
  std::string out;
  while (static_cast<int>(out.size()) < chars) out += fmt::format("{:08x}", rd());
  return out.substr(0, chars);
}

}  // namespace codeact::cli
