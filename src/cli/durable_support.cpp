#include "durable_support.hpp"

#include <csignal>
#include <iostream>
#include <random>

#include <fmt/format.h>

#include "codeact/core/cancel.hpp"
#include "codeact/core/config.hpp"
#include "cli_context.hpp"

namespace codeact::cli {
namespace {

core::CancelToken g_interrupt;
extern "C" void on_interrupt(int) { g_interrupt.cancel(); }

}  // namespace

void add_durable_flags(CLI::App* cmd, DurableFlags& flags, bool hosts_worker_optionally) {
  cmd->add_option("--temporal", flags.temporal,
                  "Temporal frontend HOST:PORT (default: app_conf.yml temporal.url; if none, an "
                  "embedded dev server is started or reused)");
  cmd->add_option("--task-queue", flags.task_queue, "Temporal task queue (default: $TASK_QUEUE, else codeact)");
  if (hosts_worker_optionally) {
    cmd->add_flag("--no-worker", flags.no_worker,
                  "Do not host a worker in this process; `codeact worker` processes run the workflow");
  }
}

std::string task_queue_of(const DurableFlags& flags) {
  if (!flags.task_queue.empty()) return flags.task_queue;
  auto env = core::getenv_string("TASK_QUEUE");
  return env && !env->empty() ? *env : std::string(durable::kDefaultTaskQueue);
}

DurableSession::~DurableSession() {
  if (worker) worker->shutdown(std::chrono::seconds(5));
}

core::Result<durable::ActivityPolicies> activity_policies(const codeact::AgentBuilder& builder) {
  const core::Json& raw = builder.config.raw;
  if (!raw.is_object() || !raw.contains("durable") || !raw["durable"].is_object()) return durable::ActivityPolicies{};
  auto p = durable::ActivityPolicies::from_json(raw["durable"].value("activities", core::Json()));
  if (!p.ok()) return std::move(p).error().with_context("durable.activities in " + builder.config.source);
  return p;
}

core::Result<std::unique_ptr<DurableSession>> open_session(const DurableFlags& flags,
                                                           const codeact::AgentBuilder& builder,
                                                           bool host_worker) {
  auto session = std::make_unique<DurableSession>();
  durable::EndpointRequest req;
  req.flag = flags.temporal;
  req.config_url = builder.config.temporal_url;
  req.ns = builder.config.temporal_namespace;
  auto say = [](const std::string& line) { std::cerr << "[codeact] " << line << "\n"; };
  CODEACT_TRY(session->endpoint, durable::resolve_temporal(req, say));
  auto client = durable::connect_temporal(session->endpoint, std::chrono::seconds(15));
  if (!client.ok()) {
    return core::unavailable(client.error().message() +
                             (flags.temporal.empty() && builder.config.temporal_url.empty()
                                  ? std::string()
                                  : " (check --temporal / temporal.url, or run with --no-durable)"));
  }
  session->client.emplace(std::move(*client));
  if (host_worker) {
    CODEACT_TRY(auto manager, make_manager());
    auto env = std::make_shared<durable::WorkerEnv>();
    env->builder = builder;
    env->manager = manager;
    temporal::WorkerOptions wo;
    wo.task_queue = task_queue_of(flags);
    session->worker = std::make_unique<temporal::Worker>(*session->client, wo);
    durable::register_codeact(*session->worker, env);
    CODEACT_TRY_STATUS(session->worker->start());
  }
  return session;
}

bool ProgressFollower::poll() {
  auto r = client_.query_workflow(workflow_id_, "", durable::kProgressQuery, temporal::Args{core::Json{{"since", next_}}});
  if (!r.ok()) return false;
  if (!r->is_object()) return false;
  for (const auto& e : r->value("events", core::Json::array())) view_.show_json(e);
  next_ = static_cast<size_t>(core::json_int(*r, "next", static_cast<int64_t>(next_)));
  status_ = core::json_string(*r, "status");
  return true;
}

int report_failure(const temporal::Failure& failure) {
  const temporal::Failure& root = failure.root_cause();
  if (root.kind == temporal::FailureKind::kCanceled || failure.kind == temporal::FailureKind::kCanceled) {
    std::cerr << "codeact: " << (root.message.empty() ? std::string("the run was cancelled") : root.message) << "\n";
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
