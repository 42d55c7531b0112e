// The CodeAct agent's hooks and its direct-mode run: the ONE binding (AgentBinder) and the ONE
// sandbox lifecycle (SandboxRun), their effects run inline on a SandboxBackend.
#include "codeact/codeact/codeact_agent.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <random>

#include "codeact/core/log.hpp"
#include "codeact/core/strings.hpp"
#include "codeact/llm/model_factory.hpp"
#include "codeact/mcp/server_config.hpp"

namespace codeact::codeact {
namespace {

using core::Json;
using core::Result;

std::string random_suffix() {
  std::random_device rd;
  return fmt::format("{:08x}", rd());
}

// Direct mode's effects: inline on the backend, on the thread that drives the run.
class DirectRunSteps final : public RunSteps {
 public:
  DirectRunSteps(AgentBinder& binder, std::shared_ptr<const CodeActAgent> agent, BindOptions bind,
                 agent::Executor* executor)
      : binder_(binder), agent_(std::move(agent)), bind_(std::move(bind)), executor_(executor) {}

  agent::Task<Result<SandboxStarted>> start_sandbox(const SandboxPlan& plan) override {
    co_return codeact::start_sandbox(*binder_.backend(), plan);
  }
  agent::Task<Result<std::vector<sandbox::FileEntry>>> list_output(
      const std::string& sandbox_id) override {
    co_return binder_.backend()->list_files(sandbox_id, "/output");
  }
  agent::Task<core::Status> finish_sandbox(const std::string& sandbox_id, SandboxEnd end,
                                           bool remove_volume) override {
    co_return end_sandbox(*binder_.backend(), sandbox_id, end, remove_volume);
  }
  agent::Task<Result<PreparedAgent>> prepare_agent(const std::string& sandbox_id) override {
    co_return prepare(sandbox_id);
  }

 private:
  Result<PreparedAgent> prepare(const std::string& sandbox_id) {
    BindOptions options = bind_;
    options.sandbox_id = sandbox_id;
    CODEACT_TRY(auto binding, binder_.bind(agent_, options));
    PreparedAgent p;
    CODEACT_TRY(p.model_name, binding.model_name());
    CODEACT_TRY(auto bound, binding.agent());
    p.agent = std::move(bound);
    p.drivers.executor = executor_;
    return p;
  }

  AgentBinder& binder_;
  std::shared_ptr<const CodeActAgent> agent_;
  BindOptions bind_;
  agent::Executor* executor_;
};

// The lifecycle as the lines `codeact run --no-durable` prints.
class ProgressLines {
 public:
  ProgressLines(const SandboxPlan& plan, std::function<void(const std::string&)> progress)
      : plan_(plan), progress_(std::move(progress)) {}

  void operator()(const SandboxRunEvent& e) {
    const std::string& id = e.sandbox_id;
    switch (e.kind) {
      case SandboxRunEvent::Kind::kStarting:
        say(fmt::format("starting sandbox {}{}", id,
                        plan_.network ? " (network on)" : " (no network)"));
        break;
      case SandboxRunEvent::Kind::kStarted:
        volume_ = e.started.volume;
        say(e.started.resumed ? fmt::format("sandbox {} resumed with its state", id)
                              : fmt::format("sandbox {} started", id));
        break;
      case SandboxRunEvent::Kind::kFiles:
      case SandboxRunEvent::Kind::kClosing:
        break;
      case SandboxRunEvent::Kind::kClosed:
        if (!e.closed.ok()) {
          core::log().warn("sandbox \"{}\": cleanup failed: {}", id, e.closed.error().message());
          say(fmt::format("could not clean up sandbox {}: {}", id, e.closed.error().message()));
        } else if (e.end == SandboxEnd::kKeep) {
          say(fmt::format("sandbox {} left running (--keep-sandbox)", id));
        } else if (e.end == SandboxEnd::kStop) {
          say(fmt::format("sandbox {} stopped (its volume {} keeps the state)", id, volume_));
        } else {
          say(fmt::format("sandbox {} removed{}", id,
                          plan_.remove_volume ? " with its volume" : " (volume kept)"));
        }
        break;
    }
  }

 private:
  void say(const std::string& line) const {
    if (progress_) progress_(line);
  }
  const SandboxPlan& plan_;
  std::function<void(const std::string&)> progress_;
  std::string volume_;
};

}  // namespace

Json CodeActAgentOutput::to_json() const {
  return Json{{"message", message}, {"container_id", container_id}, {"file_paths", file_paths}};
}

// ---------------------------------------------------------------------------------------------
// Building

Result<std::shared_ptr<llm::Model>> BaseAgent::llm_model(const AgentBuilder& builder) const {
  CODEACT_TRY(auto name, resolve_model_name(builder));
  llm::ModelConfig config = builder.model_config;
  if (config.llm_config.empty() && builder.config.raw.is_object()) {
    config.llm_config = builder.config.raw.value("llm", Json::object());
  }
  if (!config.env && builder.env) config.env = builder.env;
  CODEACT_TRY(auto model, llm::make_model(name, config));
  return std::shared_ptr<llm::Model>(std::move(model));
}

Result<std::shared_ptr<const agent::AgentPrompt>> BaseAgent::prompts(
    const AgentBuilder& builder) const {
  if (!builder.prompts)
    return core::failed_precondition("agent \"" + name_ + "\": no prompts loaded");
  return builder.prompts->get(name_);
}

Result<std::shared_ptr<functions::SandboxFunctions>> BaseAgent::sandbox_functions(
    const AgentBuilder& builder, const std::vector<std::string>& extra_mcp_servers) const {
  functions::SandboxFunctionsOptions options;
  options.mcp_servers = mcp_servers(builder);
  for (const auto& name : extra_mcp_servers) {
    if (std::find(options.mcp_servers.begin(), options.mcp_servers.end(), name) ==
        options.mcp_servers.end())
      options.mcp_servers.push_back(name);
  }
  options.host_functions = host_functions();
  options.python_functions = custom_functions();
  if (options.mcp_servers.empty() && options.host_functions.empty() &&
      options.python_functions.empty()) {
    return std::shared_ptr<functions::SandboxFunctions>();
  }
  if (!options.mcp_servers.empty()) {
    options.mcp = builder.mcp;
    if (!options.mcp) {
      CODEACT_TRY(auto entries, mcp::parse_mcp_servers(builder.config.raw));
      options.mcp = std::make_shared<mcp::McpServerSet>(std::move(entries));
    }
  }
  return std::make_shared<functions::SandboxFunctions>(std::move(options));
}

Result<CodeActRunResult> CodeActAgent::run_direct(const std::string& task,
                                                  const AgentBuilder& builder,
                                                  std::shared_ptr<sandbox::SandboxBackend> backend,
                                                  CodeActRunOptions options) const {
  // The binding keeps a pointer to this agent only while this call runs.
  std::shared_ptr<const CodeActAgent> self(std::shared_ptr<const CodeActAgent>(), this);
  AgentBinder binder(builder, std::move(backend));
  SandboxPlan plan;
  plan.sandbox_id = options.sandbox_id.empty() ? "run-" + random_suffix() : options.sandbox_id;
  plan.python_packages = options.python_packages;
  plan.system_packages = options.system_packages;
  plan.network = options.network;
  plan.disk = options.disk;
  plan.keep_sandbox = options.keep_sandbox;
  plan.remove_volume = options.remove_volume;
  BindOptions bind;
  bind.sandbox_id = plan.sandbox_id;
  bind.tools = options.tools;
  bind.mcp_servers = options.mcp_servers;
  {
    // A bad model name or a missing key fails here, before any sandbox starts.
    CODEACT_TRY(auto binding, binder.bind(self, bind));
    CODEACT_TRY_STATUS(binding.model());
  }

  agent::RunLoop loop;
  DirectRunSteps steps(binder, self, bind, &loop);
  ProgressLines progress(plan, options.on_progress);
  SandboxRun run(steps, plan, [&progress](const SandboxRunEvent& e) { progress(e); });
  agent::RunOptions ro;
  ro.message_history = std::move(options.message_history);
  ro.deps = Json{{"sandbox_id", plan.sandbox_id}};
  ro.on_event = options.on_event;
  ro.usage_limits = options.usage_limits;
  ro.cancel = options.cancel;
  ro.run_id = options.run_id;
  const core::CancelToken* cancel = options.cancel;
  std::optional<TaskRunOutcome> outcome;
  try {
    outcome = loop.run(run_task_in_sandbox(run, task, std::move(ro),
                                           [cancel] { return cancel && cancel->cancelled(); }));
  } catch (const std::exception& e) {
    return core::internal_error("agent '" + name() +
                                "': run failed with an exception: " + e.what());
  }
  if (!outcome->run.ok()) return with_cleanup(std::move(outcome->run).error(), outcome->closed);

  CodeActRunResult out;
  out.model_name = outcome->model_name;
  out.output.message = outcome->run->output_text();
  out.output.container_id = plan.sandbox_id;
  out.output.file_paths = outcome->files;
  out.run = std::move(*outcome->run);
  return out;
}

Result<std::shared_ptr<CodeActAgent>> make_agent(const std::string& name,
                                                 const AgentBuilder& builder) {
  if (name == "simple_agent") return std::shared_ptr<CodeActAgent>(std::make_shared<SimpleAgent>());
  if (builder.prompts) {
    auto names = builder.prompts->agent_names();
    if (std::find(names.begin(), names.end(), name) != names.end())
      return std::make_shared<CodeActAgent>(name);
    const std::string list = core::join(names, ", ");
    return core::not_found(fmt::format("no agent \"{}\" in {} (agents there: {})", name,
                                       builder.prompts->source(), list.empty() ? "none" : list));
  }
  return core::not_found("no agent \"" + name + "\": no prompts loaded");
}

}  // namespace codeact::codeact
