// `codeact server`: the HTTP API and the chat page (docs/server.md) on the durable workflows.
//
// Durable like `codeact run`: the embedded Temporal dev server unless --temporal / temporal.url
// say otherwise, and a worker hosted in this process unless --no-worker. SIGINT/SIGTERM drain:
// every event stream gets `shutdown` and closes, then the worker stops; runs go on in Temporal.
#include <fmt/format.h>
#include <signal.h>

#include <iostream>

#include "cli_app.hpp"
#include "cli_context.hpp"
#include "codeact/core/config.hpp"
#include "codeact/server/server.hpp"
#include "durable_support.hpp"
#include "stop_signals.hpp"

namespace codeact::cli {
namespace {

// How long an API request waits for a Temporal server that does not answer (then 503).
constexpr std::chrono::seconds kApiPatience{5};

struct ServerFlags {
  std::string listen;
  DurableFlags durable;
  std::string config;
  std::string prompts;
  std::string model;
};

int run_server(const ServerFlags& f) {
  StopSignals stop;  // before any thread starts; the main thread waits for them below

  auto builder = codeact::AgentBuilder::load(f.prompts, f.config);
  if (!builder.ok()) return report(builder.error());
  if (!f.model.empty()) builder->model = f.model;
  const char* env_keys = std::getenv("CODEACT_API_KEYS");
  auto config = server::ServerConfig::from_config(builder->config.raw, env_keys ? env_keys : "");
  if (!config.ok())
    return report(config.error().with_context(
        builder->config.source.empty() ? std::string("app_conf.yml") : builder->config.source));
  if (!f.listen.empty()) config->listen = f.listen;
  if (config->sessions_file.empty())
    config->sessions_file =
        core::data_dir() + "/server/" + server::sessions_file_name(config->api_keys);
  // One per task queue (named by a digest: any queue name makes a file name), so servers of
  // other queues on this data directory keep their own.
  config->sweeps_file = core::data_dir() + "/server/sweeps-" +
                        server::sha256_hex(task_queue_of(f.durable)).substr(0, 12) + ".json";
  if (auto hp = server::parse_listen_address(config->listen); !hp.ok()) {
    return report(hp.error());
  } else if (config->api_keys.empty() && !server::is_loopback_host(hp->first)) {
    std::cerr << "codeact: --listen " << config->listen
              << " is reachable from other machines and no API key is configured; set "
                 "server.api_keys in app_conf.yml or CODEACT_API_KEYS, or listen on 127.0.0.1\n";
    return kExitUsage;
  }
  auto policies = activity_policies(*builder);
  if (!policies.ok()) return report(policies.error());
  auto manager = make_manager(f.config, f.durable.host_id);
  if (!manager.ok()) return report(manager.error());
  auto session = open_session(f.durable, *builder, !f.durable.no_worker);
  if (!session.ok()) return report(session.error());

  // A request made while Temporal does not answer gets its 503 within seconds, not a minute.
  temporal::Client api_client = (*session)->client->with_unavailable_patience(kApiPatience);
  server::ApiDeps deps;
  deps.client = &api_client;
  deps.task_queue = task_queue_of(f.durable);
  deps.builder = *builder;
  deps.policies = *policies;
  deps.sandboxes = *manager;
  if ((*session)->worker) deps.live_output = (*session)->worker->env().live_output;
  server::CodeActServer srv(*config, std::move(deps));
  if (auto s = srv.start(); !s.ok()) return report(s.error());
  std::cerr << fmt::format(
      "[codeact] serving the API and the chat page; Temporal at {}, task queue {}{}\n",
      (*session)->endpoint.address, task_queue_of(f.durable),
      (*session)->worker ? " (worker in this process)" : " (runs need a `codeact worker`)");
  if (config->api_keys.empty()) {
    std::cerr << "[codeact] no API key configured: only this machine can connect (loopback), "
                 "as the principal \"local\"\n";
  } else {
    std::cerr << fmt::format("[codeact] {} API key(s) configured; log in on the page with one\n",
                             config->api_keys.size());
  }
  std::cout << "open " << srv.url() << std::endl;
  std::cerr << "[codeact] " << StopSignals::describe(stop.wait())
            << ": closing the event streams (runs go on)\n";
  srv.stop();
  if ((*session)->worker) (*session)->worker->shutdown(std::chrono::seconds(30));
  return kExitOk;
}

}  // namespace

void add_server_command(CLI::App& app, ExitCode& exit) {
  auto f = std::make_shared<ServerFlags>();
  auto* cmd = app.add_subcommand("server", kServerSummary);
  cmd->add_option("--listen", f->listen,
                  "HOST:PORT to listen on (default: server.listen of app_conf.yml, else "
                  "127.0.0.1:8000; port 0 picks a free one). Other than loopback needs API keys");
  add_durable_flags(cmd, f->durable, true);
  cmd->add_option("--config", f->config, "app_conf.yml to use");
  cmd->add_option("--prompts", f->prompts, "agent_prompts.yml to use");
  cmd->add_option("--model,-m", f->model,
                  "Default model of the runs and sessions that name none (provider:model)");
  cmd->callback([f, &exit] { exit.value = run_server(*f); });
}

}  // namespace codeact::cli
