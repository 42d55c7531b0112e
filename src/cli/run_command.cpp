// `codeact run "TASK"`: a CodeAct agent solves a task in a fresh (or resumed) sandbox, shown live.
//
// Durable by default: the run is a CodeActTaskWorkflow on Temporal (the embedded dev server unless
// --temporal / temporal.url say otherwise), executed by a worker hosted in this process (or, with
// --no-worker, by `codeact worker` processes). The live view follows the workflow's "progress"
// query, so it looks the same whichever worker runs it. If this process dies, the workflow does
// not: `codeact run --workflow-id ID ...` attaches to it again (or any worker finishes it).
// --no-durable runs the same agent loop in this process.
#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <iostream>
#include <sstream>
#include <thread>

#include "cli_app.hpp"
#include "cli_context.hpp"
#include "codeact/codeact/codeact_agent.hpp"
#include "codeact/core/cancel.hpp"
#include "codeact/core/json.hpp"
#include "codeact/durable/task_run_start.hpp"
#include "codeact/mcp/server_config.hpp"
#include "durable_support.hpp"
#include "live_view.hpp"

namespace codeact::cli {
namespace {

using core::Json;

core::CancelToken g_interrupt;

extern "C" void on_sigint(int) { g_interrupt.cancel(); }

struct RunFlags {
  std::string task;
  std::string model;
  std::string agent = "simple_agent";
  std::vector<std::string> packages;
  std::vector<std::string> system_packages;
  std::vector<std::string> mcp_servers;
  bool network = false;
  std::string disk;
  std::string workflow_id;
  bool no_durable = false;
  std::string config;
  std::string prompts;
  bool json = false;
  bool keep_sandbox = false;
  bool remove_volume = false;
  int64_t max_requests = 50;
  double cell_timeout = 120;
  std::string host;  // --host: the worker host to start the sandbox on
  DurableFlags durable;
};

void print_answer(const std::string& sandbox_id, const std::vector<std::string>& files,
                  const std::string& message) {
  if (!files.empty()) {
    std::cout << "── files produced (in volume " << sandbox::SandboxManager::volume_name(sandbox_id)
              << ")\n";
    for (const auto& p : files) std::cout << "  " << p << "\n";
  }
  std::cout << "── answer\n" << message;
  if (message.empty() || message.back() != '\n') std::cout << "\n";
}

int run_durable(const RunFlags& f, const codeact::AgentBuilder& builder,
                const std::string& model_name) {
  auto policies = activity_policies(builder);
  if (!policies.ok()) return report(policies.error());
  auto session = open_session(f.durable, builder, !f.durable.no_worker);
  if (!session.ok()) return report(session.error());
  temporal::Client& client = *(*session)->client;

  durable::TaskInput in;
  in.task = f.task;
  in.agent = f.agent;
  in.model = model_name;
  in.python_packages = f.packages;
  in.system_packages = f.system_packages;
  in.mcp_servers = f.mcp_servers;
  in.network = f.network;
  in.disk = f.disk;
  in.keep_sandbox = f.keep_sandbox;
  in.remove_volume = f.remove_volume;
  agent::UsageLimits limits;
  limits.request_limit = f.max_requests;
  in.usage_limits = limits;
  in.tools.default_timeout_seconds = f.cell_timeout;
  in.activities = *policies;
  in.host = f.host;

  const std::string queue = task_queue_of(f.durable);
  const std::string workflow_id = f.workflow_id.empty() ? "run-" + random_hex() : f.workflow_id;
  temporal::StartWorkflowOptions so;
  so.id = workflow_id;
  so.task_queue = queue;
  // The same command again after the run completed (its first `codeact run` was killed before
  // it printed the answer) follows that run instead of doing the task a second time. Another
  // task on the same --workflow-id starts a new run.
  auto followed = durable::start_or_follow(client, in, so);
  if (!followed.ok()) return report(followed.error());
  const bool completed_before = followed->completed_before;
  const temporal::WorkflowRun* started = &followed->run;
  if (completed_before) {
    std::cerr << "[codeact] workflow " << workflow_id
              << " already completed this task: its answer follows (to do the task again, give "
                 "another --workflow-id)\n";
  } else if (started->started) {
    std::cerr << "[codeact] workflow " << workflow_id << " started on task queue " << queue
              << " at " << (*session)->endpoint.address
              << ((*session)->worker ? " (worker in this process)"
                                     : " (waiting for a `codeact worker`)")
              << "\n";
  } else {
    auto d = client.describe_workflow(workflow_id, started->run_id);
    if (d.ok() && d->workflow_type != durable::kTaskWorkflow) {
      std::cerr
          << "codeact: workflow " << workflow_id << " is a running " << d->workflow_type
          << ", not a task run; pick another --workflow-id (a chat is followed with `codeact chat "
             "--workflow-id`)\n";
      return kExitUsage;
    }
    std::cerr << "[codeact] workflow " << workflow_id
              << " is already running: following it (it keeps the task it was started with)\n";
  }

  std::ostream& live = f.json ? std::cerr : std::cout;
  LiveView view(live, model_name);
  ProgressFollower follower(client, workflow_id, view);
  std::atomic<bool> done{false};
  std::optional<temporal::Outcome<core::Json>> result;
  std::thread waiter([&] {
    result.emplace(client.get_result(workflow_id, started->run_id));
    done.store(true);
  });
  // The live view polls on its own thread: a query can block while no worker is polling, and
  // Ctrl-C must still be handled at once.
  std::thread viewer([&] {
    while (!done.load()) {
      follower.poll();
      for (int i = 0; i < 5 && !done.load(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  install_interrupt_handler();
  bool cancel_sent = false;
  while (!done.load()) {
    if (interrupted() && !cancel_sent) {
      cancel_sent = true;
      std::cerr
          << "\n[codeact] cancelling the run (what becomes of its sandbox is said when it ends; "
             "Ctrl-C again to leave it running in the background)\n";
      auto s =
          client.cancel_workflow(workflow_id, started->run_id, "interrupted from the command line");
      if (!s.ok()) std::cerr << "[codeact] could not cancel: " << s.error().message() << "\n";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  waiter.join();
  viewer.join();
  follower.poll();  // the last events
  restore_interrupt_handler();

  if (!result->ok()) return report_failure(result->failure());
  auto out = durable::TaskOutput::from_json(result->value());
  if (!out.ok()) return report(out.error());
  if (f.json) {
    core::Json j = out->to_json();
    j["durable"] = true;
    std::cout << core::dump_json(j, 2) << "\n";
    return kExitOk;
  }
  print_answer(out->sandbox_id, out->files, out->output);
  return kExitOk;
}

int run(const RunFlags& f) {
  if (auto disk = sandbox::SandboxManager::validate_disk(f.disk); !disk.ok())
    return report(disk.error());
  if (!f.packages.empty() && !f.network) {
    std::cerr
        << "codeact: --packages needs --network (the sandbox has no network otherwise, so pip "
           "cannot download them)\n";
    return kExitUsage;
  }
  auto builder = codeact::AgentBuilder::load(f.prompts, f.config);
  if (!builder.ok()) return report(builder.error());
  builder->model = f.model;
  auto model_name = codeact::resolve_model_name(*builder);
  if (!model_name.ok()) {
    std::cerr << "codeact: " << model_name.error().message()
              << ", or pass --model <provider>:<model> (e.g. --model openai:gpt-4.1, or --model "
                 "openai-compatible:<model>@http://localhost:8000/v1 for a local server)\n";
    return kExitUsage;
  }
  auto agent = codeact::make_agent(f.agent, *builder);
  if (!agent.ok()) return report(agent.error());
  // Fail on a bad model name or missing key before any sandbox starts.
  auto model = (*agent)->llm_model(*builder);
  if (!model.ok()) {
    int code = report(model.error());
    return model.error().code() == core::Code::kFailedPrecondition ? kExitUsage : code;
  }

  // Unknown --mcp names fail here, before anything starts.
  if (!f.mcp_servers.empty()) {
    auto entries = mcp::parse_mcp_servers(builder->config.raw);
    if (!entries.ok()) return report(entries.error());
    std::string known;
    for (const auto& e : *entries) known += (known.empty() ? "" : ", ") + e.name;
    for (const auto& name : f.mcp_servers) {
      bool found = false;
      for (const auto& e : *entries) found = found || e.name == name;
      if (!found) {
        std::cerr << "codeact: --mcp " << name << ": no such server in mcp_servers of "
                  << (builder->config.source.empty() ? std::string("app_conf.yml")
                                                     : builder->config.source)
                  << " (configured: " << (known.empty() ? std::string("none") : known) << ")\n";
        return kExitUsage;
      }
    }
  }
  // The model was resolved above; give the builder the same name so the run uses it.
  builder->model = *model_name;
  if (!f.no_durable) return run_durable(f, *builder, *model_name);
  if (!f.host.empty()) {
    std::cerr << "codeact: --host places the sandbox of a durable run; with --no-durable the "
                 "sandbox runs on this machine's Docker engine\n";
    return kExitUsage;
  }

  auto manager = make_manager(f.config, f.durable.host_id);
  if (!manager.ok()) return report(manager.error());

  std::ostream& live = f.json ? std::cerr : std::cout;
  LiveView view(live, (*model)->model_name());
  codeact::CodeActRunOptions options;
  options.sandbox_id = f.workflow_id;
  options.python_packages = f.packages;
  options.system_packages = f.system_packages;
  options.mcp_servers = f.mcp_servers;
  options.network = f.network;
  options.disk = f.disk;
  options.keep_sandbox = f.keep_sandbox;
  options.remove_volume = f.remove_volume;
  options.tools.default_timeout_seconds = f.cell_timeout;
  agent::UsageLimits limits;
  limits.request_limit = f.max_requests;
  options.usage_limits = limits;
  options.on_event = [&view](const agent::AgentEvent& e) { view(e); };
  options.on_progress = [](const std::string& line) { std::cerr << "[codeact] " << line << "\n"; };
  g_interrupt.reset();
  options.cancel = &g_interrupt;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sa.sa_flags = SA_RESETHAND;  // a second Ctrl-C ends the process at once
  sigaction(SIGINT, &sa, nullptr);

  auto result = (*agent)->run_direct(f.task, *builder, *manager, std::move(options));
  signal(SIGINT, SIG_DFL);
  if (!result.ok()) return report(result.error());

  const auto& out = result->output;
  if (f.json) {
    Json usage = llm::to_json(result->run.usage);
    usage["tool_calls"] = result->run.tool_calls;
    Json j{
        {"output", out.message},        {"workflow_id", nullptr}, {"sandbox_id", out.container_id},
        {"files", out.file_paths},      {"usage", usage},         {"model", result->model_name},
        {"run_id", result->run.run_id}, {"agent", f.agent},       {"durable", false}};
    std::cout << core::dump_json(j, 2) << "\n";
    return kExitOk;
  }
  print_answer(out.container_id, out.file_paths, out.message);
  return kExitOk;
}

}  // namespace

void add_run_command(CLI::App& app, ExitCode& exit) {
  auto f = std::make_shared<RunFlags>();
  auto* cmd = app.add_subcommand("run", kRunSummary);
  cmd->add_option("task", f->task, "What the agent should do")->required();
  cmd->add_option("--model,-m", f->model,
                  "provider:model, e.g. openai:gpt-4.1, google-gla:gemini-2.5-pro, "
                  "anthropic:claude-sonnet-4-5, "
                  "ollama:qwen2.5-coder, openai-compatible:<model>@<base-url> (default: "
                  "app_conf.yml llm.<provider>)");
  cmd->add_option("--agent", f->agent, "Agent name in agent_prompts.yml")->capture_default_str();
  auto pkgs = std::make_shared<std::vector<std::string>>();
  auto sys = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--packages", *pkgs,
                  "Python packages to install in the sandbox (a,b or repeated; needs --network)")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--system-packages", *sys, "Debian packages to install in the sandbox image")
      ->delimiter(',')
      ->allow_extra_args(false);
  cmd->add_option("--mcp", f->mcp_servers,
                  "An MCP server of app_conf.yml mcp_servers whose tools the agent's code may call "
                  "(repeatable); the server and its credentials stay on the host")
      ->allow_extra_args(false);
  cmd->add_flag("--network", f->network, "Give the sandbox network access (off by default)");
  cmd->add_option(
      "--disk", f->disk,
      "Disk limit of a new sandbox, e.g. 20g, or none (default: sandbox.disk in app_conf.yml "
      "of the worker, else 10g)");
  cmd->add_option("--workflow-id", f->workflow_id,
                  "Run id; also the sandbox id (an existing sandbox is resumed with its state). "
                  "Default: generated");
  cmd->add_flag("--no-durable", f->no_durable,
                "Run the agent loop in this process instead of as a Temporal workflow (no crash "
                "recovery of the run; the sandbox's state still survives)");
  add_durable_flags(cmd, f->durable, true);
  cmd->add_option("--host", f->host,
                  "Start the sandbox on this host (a worker's --host-id) instead of on the host "
                  "of the first worker that takes it; with the same --workflow-id, resumes a "
                  "sandbox left there")
      ->check(host_id_validator());
  cmd->add_option("--config", f->config, "app_conf.yml to use");
  cmd->add_option("--prompts", f->prompts, "agent_prompts.yml to use");
  cmd->add_flag("--json", f->json,
                "Print the result as JSON (output, workflow_id, sandbox_id, files, usage); "
                "the live view goes to stderr");
  cmd->add_flag("--keep-sandbox", f->keep_sandbox, "Leave the sandbox running at the end");
  cmd->add_flag("--remove-volume", f->remove_volume,
                "Also remove the sandbox's volume (its state and files) at the end");
  cmd->add_option("--max-requests", f->max_requests, "Stop after this many model requests")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--cell-timeout", f->cell_timeout,
                  "Default seconds per cell when the model gives none")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->callback([f, pkgs, sys, &exit] {
    f->packages = split_csv(*pkgs);
    f->system_packages = split_csv(*sys);
    exit.value = run(*f);
  });
}

}  // namespace codeact::cli
