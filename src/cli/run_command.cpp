// `codeact run "TASK"`: a CodeAct agent solves a task in a fresh (or resumed) sandbox, shown live.
//
// Only direct mode exists in this build (the agent loop runs in this process); durable mode —
// the loop as a Temporal workflow — needs the worker, which is not built yet, and says so.
#include <fmt/format.h>

#include <csignal>
#include <iostream>
#include <sstream>

#include "cli_context.hpp"
#include "codeact/codeact/codeact_agent.hpp"
#include "codeact/core/cancel.hpp"
#include "codeact/core/json.hpp"

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
  bool network = false;
  std::string workflow_id;
  bool no_durable = false;
  std::string config;
  std::string prompts;
  bool json = false;
  bool keep_sandbox = false;
  bool remove_volume = false;
  int64_t max_requests = 50;
  double cell_timeout = 120;
};

std::string indent(const std::string& text, const std::string& prefix = "    ") {
  std::string out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out += prefix + line + "\n";
  return out;
}

// Prints the run as it happens: model steps, cells with their output, retries.
class LiveView {
 public:
  LiveView(std::ostream& out, std::string model) : out_(out), model_(std::move(model)) {}

  void operator()(const agent::AgentEvent& event) {
    std::visit([this](const auto& e) { show(e); }, event);
    out_.flush();
  }

 private:
  void show(const agent::ModelRequestStartEvent& e) {
    out_ << fmt::format("── step {} · {}\n", e.run_step, model_);
  }
  void show(const agent::ModelStreamEvent&) {}
  void show(const agent::ModelResponseEvent& e) {
    std::string text = e.response.text();
    // Text next to tool calls is the model thinking aloud; a final text is shown as the answer.
    if (!text.empty() && !e.response.tool_calls().empty()) out_ << indent(text, "  │ ");
    if (e.response.usage.total_tokens() > 0) {
      out_ << fmt::format("  ({} tokens in, {} out)\n", e.response.usage.input_tokens,
                          e.response.usage.output_tokens);
    }
  }
  void show(const agent::ToolCallEvent& e) {
    const auto& p = e.part;
    if (p.tool_name == "execute_python" && p.args.is_object() && p.args.contains("code") &&
        p.args["code"].is_string()) {
      out_ << "  ▶ execute_python\n" << indent(p.args["code"].get<std::string>(), "    >>> ");
    } else if (p.tool_name == "execute_bash" && p.args.is_object() && p.args.contains("script") &&
               p.args["script"].is_string()) {
      out_ << "  ▶ execute_bash\n" << indent(p.args["script"].get<std::string>(), "    $ ");
    } else {
      out_ << fmt::format("  ▶ {} {}\n", p.tool_name,
                          p.args_valid() ? core::dump_json(p.args) : p.args_raw);
    }
  }
  void show(const agent::ToolResultEvent& e) {
    if (const auto* ret = std::get_if<llm::ToolReturnPart>(&e.result)) {
      out_ << indent(ret->content_text(), "    ");
    } else {
      const auto& retry = std::get<llm::RetryPromptPart>(e.result);
      out_ << indent(retry.content, "    ↻ sent back to the model: ");
    }
  }
  void show(const agent::FinalResultEvent&) {}

  std::ostream& out_;
  std::string model_;
};

int run(const RunFlags& f) {
  if (!f.no_durable) {
    std::cerr << "codeact: durable mode needs the Temporal worker, which is not available in this "
                 "build yet.\n"
                 "         Pass --no-durable to run the agent directly in this process (the run "
                 "then does not\n"
                 "         survive a crash of this process; the sandbox's state still does).\n";
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

  auto manager = make_manager();
  if (!manager.ok()) return report(manager.error());

  std::ostream& live = f.json ? std::cerr : std::cout;
  LiveView view(live, (*model)->model_name());
  codeact::CodeActRunOptions options;
  options.sandbox_id = f.workflow_id;
  options.python_packages = f.packages;
  options.system_packages = f.system_packages;
  options.network = f.network;
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

  // The model was resolved above; give the builder the same name so the run uses it.
  builder->model = *model_name;
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
  if (!out.file_paths.empty()) {
    std::cout << "── files produced (in volume "
              << sandbox::SandboxManager::volume_name(out.container_id) << ")\n";
    for (const auto& p : out.file_paths) std::cout << "  " << p << "\n";
  }
  std::cout << "── answer\n" << out.message;
  if (out.message.empty() || out.message.back() != '\n') std::cout << "\n";
  return kExitOk;
}

}  // namespace

void add_run_command(CLI::App& app, ExitCode& exit) {
  auto f = std::make_shared<RunFlags>();
  auto* cmd = app.add_subcommand(
      "run", "Solve a task with a CodeAct agent: it writes Python that runs in a sandbox");
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
  cmd->add_flag("--network", f->network, "Give the sandbox network access (off by default)");
  cmd->add_option("--workflow-id", f->workflow_id,
                  "Run id; also the sandbox id (an existing sandbox is resumed with its state). "
                  "Default: generated");
  cmd->add_flag("--no-durable", f->no_durable,
                "Run the agent loop in this process (the only mode in this build)");
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
