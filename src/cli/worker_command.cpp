// `codeact worker` (the seed's CodeActWorkerRunner) and `codeact chat`.
//
// worker: hosts the durable agent's workflows and activities on a task queue until Ctrl-C or
//   SIGTERM, then stops polling and lets running activities finish (up to 30 s). Models, API
//   keys, MCP servers and prompts come from this process's config and environment.
// chat: an interactive CodeActChatWorkflow. Each line read is sent with the send_user_task
//   signal; the agent's steps are shown live and its answer printed; EOF or /exit sends stop_chat.
//   --workflow-id resumes a chat that is still running; --fork S [--turn K] starts a new one
//   forking chat S before its turn K (durable/chat_fork.hpp).
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <optional>
#include <thread>

#include "cli_app.hpp"
#include "cli_context.hpp"
#include "codeact/core/json.hpp"
#include "codeact/durable/chat_fork.hpp"
#include "codeact/durable/sandbox_host.hpp"
#include "durable_support.hpp"
#include "stop_signals.hpp"

namespace codeact::cli {
namespace {

using core::Json;

struct WorkerFlags {
  DurableFlags durable;
  std::string config;
  std::string prompts;
  std::string model;
};

int run_worker(const WorkerFlags& f) {
  StopSignals stop;  // before any thread starts; the main thread waits for them below
  durable::WorkerRunnerOptions o;
  o.task_queue = task_queue_of(f.durable);
  o.temporal = f.durable.temporal;
  o.config_path = f.config;
  o.prompts_path = f.prompts;
  o.model = f.model;
  o.host_id = f.durable.host_id;
  o.progress = [](const std::string& line) { std::cerr << "[codeact] " << line << "\n"; };
  auto manager = make_manager(f.config, f.durable.host_id);
  if (!manager.ok()) return report(manager.error());
  o.backend = *manager;
  sandbox::MovedSandboxReaper reaper(*manager);
  auto runner = durable::CodeActWorkerRunner::create(std::move(o));
  if (!runner.ok()) return report(runner.error());
  auto started = (*runner)->start();
  if (!started.ok()) return report(started.error());
  auto model = codeact::resolve_model_name((*runner)->env().builder);
  std::cerr << fmt::format(
      "[codeact] worker polling task queue {} at {} — workflows {}, {}, {}; default model {}\n"
      "[codeact] host {}: the sandboxes it starts run on this Docker engine, and their work "
      "comes through task queue {}\n"
      "[codeact] Ctrl-C or SIGTERM stops it (running activities get 30 s to finish)\n",
      (*runner)->task_queue(), (*runner)->endpoint().address, durable::kTaskWorkflow,
      durable::kChatWorkflow, durable::kSimpleAgentWorkflow,
      model.ok() ? *model : "(none: " + model.error().message() + ")", (*runner)->host_id(),
      durable::host_task_queue((*runner)->task_queue(), (*runner)->host_id()));
  std::cerr << "[codeact] " << StopSignals::describe(stop.wait()) << ": stopping the worker\n";
  (*runner)->shutdown(std::chrono::seconds(30));
  return kExitOk;
}

struct ChatFlags {
  DurableFlags durable;
  std::string workflow_id;
  std::string model;
  std::string agent = "simple_agent";
  std::vector<std::string> packages;
  std::vector<std::string> mcp_servers;
  bool network = false;
  std::string config;
  std::string prompts;
  double idle_timeout = 3600;
  std::string fork;  // a chat to fork
  int turn = 0;      // its turn to fork at (0: after the last)
  std::string host;  // --host: the worker host to start the sandbox on
};

// The input of a chat forking `f.fork` at `f.turn` (durable/chat_fork.hpp), read from the source's
// "conversation" query (answered by any worker, also for a chat that has ended).
core::Result<durable::ChatInput> forked_chat(temporal::Client& client, const ChatFlags& f,
                                             const std::string& new_id) {
  core::Result<Json> r = core::Error(core::Code::kUnavailable, "no answer");
  for (int attempt = 0; attempt < 30; ++attempt) {
    r = client.query_workflow(f.fork, "", durable::kConversationQuery);
    if (r.ok() || r.error().code() == core::Code::kNotFound ||
        r.error().code() == core::Code::kInvalidArgument) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (!r.ok()) return r.error().with_context(fmt::format("reading chat \"{}\" to fork it", f.fork));
  CODEACT_TRY(auto source, durable::ConversationReply::from_json(*r));
  const int turn = f.turn > 0 ? f.turn : static_cast<int>(source.turns.size()) + 1;
  return durable::fork_chat_input(source, turn, new_id);
}

// The chat's "agent_output", or nullopt when the query failed (no worker yet, or starting) or
// its reply is not one (reported on stderr once).
std::optional<durable::AgentOutputReply> agent_output(temporal::Client& client,
                                                      const std::string& id) {
  auto r = client.query_workflow(id, "", durable::kAgentOutputQuery);
  if (!r.ok()) return std::nullopt;
  auto reply = durable::AgentOutputReply::from_json(*r);
  if (!reply.ok()) {
    static bool said = false;
    if (!said) std::cerr << "[codeact] " << reply.error().message() << "\n";
    said = true;
    return std::nullopt;
  }
  return std::move(*reply);
}

// Whether the chat's latest run has closed; if so, reports how (its failure) and returns the exit
// status, else nullopt.
std::optional<int> chat_closed(temporal::Client& client, const std::string& id) {
  auto d = client.describe_workflow(id);
  if (!d.ok() || d->status == "Running" || d->status == "ContinuedAsNew") return std::nullopt;
  auto result = client.get_result(id);
  if (!result.ok()) return report_failure(result.failure());
  auto out = durable::ChatOutput::from_json(result.value());
  std::cerr << "[codeact] the chat has ended (" << (out.ok() ? out->reason : d->status) << ")\n";
  return 1;
}

int run_chat(const ChatFlags& f) {
  auto builder = codeact::AgentBuilder::load(f.prompts, f.config);
  if (!builder.ok()) return report(builder.error());
  builder->model = f.model;
  auto model_name = codeact::resolve_model_name(*builder);
  if (!model_name.ok()) {
    std::cerr << "codeact: " << model_name.error().message()
              << ", or pass --model <provider>:<model>\n";
    return kExitUsage;
  }
  builder->model = *model_name;
  auto policies = activity_policies(*builder);
  if (!policies.ok()) return report(policies.error());
  auto session = open_session(f.durable, *builder, !f.durable.no_worker);
  if (!session.ok()) return report(session.error());
  temporal::Client& client = *(*session)->client;

  durable::ChatInput in;
  in.base.agent = f.agent;
  in.base.model = *model_name;
  in.base.python_packages = f.packages;
  in.base.mcp_servers = f.mcp_servers;
  in.base.network = f.network;
  in.base.activities = *policies;
  in.base.host = f.host;
  const std::string id = f.workflow_id.empty() ? "chat-" + random_hex() : f.workflow_id;
  if (!f.fork.empty()) {
    auto forked = forked_chat(client, f, id);
    if (!forked.ok()) return report(forked.error());
    in = std::move(*forked);
    std::cerr << fmt::format(
        "[codeact] forking chat {} before its turn {}: {} turn(s) kept, sandbox {}\n", f.fork,
        in.turns.size() + 1, in.turns.size(),
        in.base.fork_from ? fmt::format("from checkpoint {} of {}", in.base.fork_from->checkpoint,
                                        in.base.fork_from->sandbox)
                          : std::string("empty (no cell ran before that turn)"));
    for (size_t i = 0; i < in.turns.size(); ++i) {
      const auto& t = in.turns[i];
      std::cout << fmt::format("you> {}\n── {}\n{}\n", t.task, t.error ? "error" : "answer",
                               t.error ? *t.error : t.output.value_or(""));
    }
  }
  in.idle_timeout_seconds = f.idle_timeout;
  temporal::StartWorkflowOptions so;
  so.id = id;
  so.task_queue = task_queue_of(f.durable);
  so.id_reuse_policy = temporal::IdReusePolicy::kAllowDuplicate;
  so.id_conflict_policy = temporal::IdConflictPolicy::kUseExisting;
  auto started = client.start_workflow(durable::kChatWorkflow, temporal::Args{in.to_json()}, so);
  if (!started.ok()) return report(started.error().with_context("starting chat \"" + id + "\""));
  const bool tty = isatty(STDIN_FILENO);
  std::cerr << fmt::format(
      "[codeact] chat {} {} (sandbox {}). One message per line; /exit or end of input stops it.\n",
      id, started->started ? "started" : "resumed", id);

  LiveView view(std::cout, *model_name);
  ProgressFollower follower(client, id, view);
  std::string line;
  while (true) {
    if (tty) std::cout << "you> " << std::flush;
    if (!std::getline(std::cin, line) || line == "/exit" || line == "/quit") break;
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    // The workflow may not answer a query yet (no worker, or starting): wait until it does.
    while (!agent_output(client, id)) {
      if (auto closed = chat_closed(client, id)) return *closed;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    // The answer is the turn that carries the message's id back, whoever else writes to the
    // chat meanwhile.
    const durable::ChatMessage message{line, "msg-" + random_hex(16)};
    auto s =
        client.signal_workflow(id, "", durable::kSendUserTask, temporal::Args{message.to_json()});
    if (!s.ok()) return report(s.error().with_context("sending the message"));
    // Follow the agent until the turn is recorded.
    while (true) {
      follower.poll();
      auto out = agent_output(client, id);
      const durable::ChatTurn* answer = out ? durable::find_turn(out->turns, message.id) : nullptr;
      if (const auto* refused = out ? durable::find_rejected(out->rejected, message.id) : nullptr) {
        std::cout << "── error\nthe chat refused the message: " << refused->error
                  << " (a worker older than message ids? upgrade it)\n";
        break;
      }
      if (answer) {
        follower.poll();
        const durable::ChatTurn& t = *answer;
        if (t.error) {
          std::cout << "── error\n" << *t.error << "\n";
        } else {
          for (const auto& file : t.files) std::cout << "  file: " << file << "\n";
          std::cout << "── answer\n" << t.output.value_or("") << "\n";
        }
        break;
      }
      if (auto closed = chat_closed(client, id)) return *closed;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  auto s = client.signal_workflow(id, "", durable::kStopChat);
  if (!s.ok()) return report(s.error().with_context("stopping the chat"));
  auto result = client.get_result(id);
  if (!result.ok()) return report_failure(result.failure());
  auto out = durable::ChatOutput::from_json(result.value());
  if (!out.ok()) return report(out.error());
  if (!out->warning.empty()) std::cerr << "[codeact] warning: " << out->warning << "\n";
  std::cerr << fmt::format(
      "[codeact] chat {} ended after {} message(s); the sandbox's state is kept in volume {}\n", id,
      out->turns.size(), sandbox::SandboxManager::volume_name(id));
  return kExitOk;
}

}  // namespace

void add_worker_commands(CLI::App& app, ExitCode& exit) {
  auto wf = std::make_shared<WorkerFlags>();
  auto* w = app.add_subcommand("worker", kWorkerSummary);
  add_durable_flags(w, wf->durable, false);
  w->add_option("--config", wf->config, "app_conf.yml to use");
  w->add_option("--prompts", wf->prompts, "agent_prompts.yml to use");
  w->add_option("--model,-m", wf->model,
                "Model for runs that do not name one (default: app_conf.yml llm.<provider>)");
  w->callback([wf, &exit] { exit.value = run_worker(*wf); });

  auto cf = std::make_shared<ChatFlags>();
  auto pkgs = std::make_shared<std::vector<std::string>>();
  auto* c = app.add_subcommand("chat", kChatSummary);
  c->add_option("--workflow-id", cf->workflow_id,
                "Chat id (also the sandbox id); an existing chat is resumed");
  c->add_option("--model,-m", cf->model, "provider:model (default: app_conf.yml llm.<provider>)");
  c->add_option("--agent", cf->agent, "Agent name in agent_prompts.yml")->capture_default_str();
  c->add_option("--packages", *pkgs, "Python packages to install in the sandbox (needs --network)")
      ->delimiter(',')
      ->allow_extra_args(false);
  c->add_option("--mcp", cf->mcp_servers,
                "An MCP server of app_conf.yml whose tools cells may call (repeatable)")
      ->allow_extra_args(false);
  c->add_flag("--network", cf->network, "Give the sandbox network access");
  c->add_option("--host", cf->host,
                "Start the sandbox on this host (a worker's --host-id; a fork starts beside its "
                "source's sandbox)")
      ->check(host_id_validator());
  c->add_option("--idle-timeout", cf->idle_timeout,
                "End the chat after this many seconds without a message")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  auto* fork = c->add_option("--fork", cf->fork,
                             "Start a new chat as a fork of this one (its id): the turns before "
                             "--turn and a sandbox from the checkpoint its last cell before them "
                             "left");
  c->add_option("--turn", cf->turn,
                "With --fork: the turn to ask again, from 1 (default: after the last turn)")
      ->check(CLI::PositiveNumber)
      ->needs(fork);
  c->add_option("--config", cf->config, "app_conf.yml to use");
  c->add_option("--prompts", cf->prompts, "agent_prompts.yml to use");
  add_durable_flags(c, cf->durable, true);
  c->callback([cf, pkgs, &exit] {
    cf->packages = split_csv(*pkgs);
    exit.value = run_chat(*cf);
  });
}

}  // namespace codeact::cli
