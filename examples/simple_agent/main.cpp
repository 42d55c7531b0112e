// simple_agent: the smallest CodeAct run. A model writes Python, codeact runs it in a Docker
// sandbox with a live kernel, and the model answers from what the code printed.
//
//   codeact_example_simple_agent                      # in this process (direct mode)
//   codeact_example_simple_agent --durable            # as a Temporal workflow
//   codeact_example_simple_agent --model openai:gpt-4o "How many primes are below 10000?"
//   CODEACT_MODEL=ollama:qwen2.5-coder codeact_example_simple_agent --durable "..."
//
// Without --model or $CODEACT_MODEL a scripted model plays the LLM (it always writes the same
// cell), so the example runs with no API key. --durable runs the same agent as a
// CodeActTaskWorkflow on a worker hosted in this process; the Temporal server is --temporal
// HOST:PORT, else temporal.url of app_conf.yml, else the embedded dev server codeact starts
// (and leaves running for the next run).
#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "codeact/codeact/codeact_agent.hpp"
#include "codeact/durable/runner.hpp"
#include "codeact/llm/function_model.hpp"
#include "codeact/sandbox/docker_client.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"
#include "codeact/temporal/client.hpp"

namespace {

namespace cc = codeact::codeact;
namespace durable = codeact::durable;
namespace llm = codeact::llm;
using codeact::core::Result;
using codeact::core::Status;

constexpr const char* kDefaultTask = "What are the first 20 Fibonacci numbers, and their sum?";

// The cell the scripted model writes.
constexpr const char* kScriptedCell = R"py(fib = [0, 1]
while len(fib) < 20:
    fib.append(fib[-1] + fib[-2])
print("first 20 Fibonacci numbers:", fib)
print("their sum:", sum(fib))
)py";

// What a cell printed: the "stdout:" block of the text the model reads for it
// (SandboxTools::format_cell), without the lines that follow it ("files written: ..." and such).
std::string printed(const std::string& cell_text) {
  const std::string head = "stdout:\n";
  size_t start = cell_text.find(head);
  if (start == std::string::npos) return cell_text;  // it printed nothing, or raised
  std::string out = cell_text.substr(start + head.size());
  for (const char* next : {"\nstderr:\n", "\nresult: ", "\nerror:\n", "\nfiles written: ",
                           "\nfigures saved: ", "\nnot persisted", "\nnotice: "}) {
    if (size_t at = out.find(next); at != std::string::npos) out.resize(at + 1);
  }
  return out;
}

// A stand-in for an LLM: asks for one cell, then answers with what that cell printed. It reads
// its turn off the conversation and keeps no state, so it is thread-safe, as a model must be (a
// durable worker calls it from its activity threads).
std::shared_ptr<llm::Model> scripted_model() {
  auto respond = [](const std::vector<llm::ModelMessage>& messages,
                    const llm::AgentInfo&) -> Result<llm::ModelResponse> {
    llm::ModelResponse response;
    // The conversation ends with the request to answer: the task, or the cell's result.
    const auto* last = std::get_if<llm::ModelRequest>(&messages.back());
    for (const auto& part : last ? last->parts : std::vector<llm::ModelRequestPart>{}) {
      if (const auto* cell = std::get_if<llm::ToolReturnPart>(&part)) {
        response.parts.push_back(
            llm::TextPart{"The sandbox worked it out:\n" + printed(cell->content_text())});
        return response;
      }
    }
    response.parts.push_back(llm::ToolCallPart{.tool_name = "execute_python",
                                               .args = {{"code", kScriptedCell}},
                                               .tool_call_id = "call_1"});
    return response;
  };
  return std::make_shared<llm::FunctionModel>(respond, nullptr, "scripted");
}

// The agent. Its name picks its prompts: "simple_agent" of agent_prompts.yml, or the built-in
// ones when there is no such file. Its one hook here chooses the model.
class SimpleExampleAgent final : public cc::CodeActAgent {
 public:
  SimpleExampleAgent() : CodeActAgent("simple_agent") {}

  // builder.model is the model asked for ("provider:model"), "" when none was.
  Result<std::shared_ptr<llm::Model>> llm_model(const cc::AgentBuilder& builder) const override {
    if (builder.model.empty()) return scripted_model();
    return CodeActAgent::llm_model(builder);  // llm::make_model, keys from the environment
  }
};

struct Flags {
  std::string task = kDefaultTask;
  std::string model;
  bool durable = false;
  std::string temporal;  // HOST:PORT; "" = temporal.url of app_conf.yml, else embedded
};

void print_answer(const std::string& answer, const std::vector<std::string>& files) {
  for (const auto& path : files) std::cout << "file produced in the sandbox: " << path << "\n";
  std::cout << "── answer\n" << answer << (answer.ends_with('\n') ? "" : "\n");
}

// Direct mode: the agent loop, its model requests and its tool calls run in this process.
Status run_direct(const Flags& flags, const cc::AgentBuilder& builder,
                  const cc::CodeActAgent& agent,
                  std::shared_ptr<codeact::sandbox::SandboxBackend> sandboxes) {
  cc::CodeActRunOptions options;
  options.remove_volume = true;  // leave nothing behind; drop this to keep state and files
  options.on_progress = [](const std::string& line) { std::cerr << "[codeact] " << line << "\n"; };
  // Each cell the model writes, and what the model reads back.
  options.on_event = [](const codeact::agent::AgentEvent& event) {
    auto show = [](const std::string& title, const std::string& text) {
      std::cout << "── " << title << "\n" << text << (text.ends_with('\n') ? "" : "\n");
    };
    if (const auto* call = std::get_if<codeact::agent::ToolCallEvent>(&event)) {
      show(call->part.tool_name, call->part.args.value("code", call->part.args.dump()));
    } else if (const auto* result = std::get_if<codeact::agent::ToolResultEvent>(&event)) {
      if (const auto* r = std::get_if<llm::ToolReturnPart>(&result->result))
        show("result", r->content_text());
    }
  };
  CODEACT_TRY(auto result, agent.run_direct(flags.task, builder, sandboxes, std::move(options)));
  print_answer(result.output.message, result.output.file_paths);
  return codeact::core::ok_status();
}

// Durable mode: the same agent as a CodeActTaskWorkflow. Each model request and each tool call
// is an activity, so a crash of this process costs no progress: the workflow goes on when a
// worker polls its task queue again (this example run again, or `codeact worker --task-queue
// simple-agent-example`).
Status run_durable(const Flags& flags, const cc::AgentBuilder& builder,
                   std::shared_ptr<cc::CodeActAgent> agent,
                   std::shared_ptr<codeact::sandbox::SandboxBackend> sandboxes) {
  durable::WorkerRunnerOptions worker_options;
  worker_options.task_queue = "simple-agent-example";
  worker_options.temporal = flags.temporal;
  worker_options.builder = builder;  // the worker binds the agent with these prompts and model
  worker_options.backend = std::move(sandboxes);
  worker_options.progress = [](const std::string& line) {
    std::cerr << "[codeact] " << line << "\n";
  };
  CODEACT_TRY(auto worker, durable::CodeActWorkerRunner::create(std::move(worker_options)));
  worker->add_agent(agent);  // an agent defined in C++ is registered with the worker by name
  CODEACT_TRY_STATUS(worker->start());

  durable::TaskInput input;
  input.task = flags.task;
  input.agent = agent->name();
  input.model = builder.model;  // "" = the worker's builder.model
  input.remove_volume = true;   // as in direct mode
  codeact::temporal::StartWorkflowOptions start;
  start.id = "simple-agent-" + std::to_string(std::random_device()());  // also the sandbox id
  start.task_queue = worker->task_queue();
  codeact::temporal::Client& client = worker->client();
  CODEACT_TRY(auto run, client.start_workflow(durable::kTaskWorkflow,
                                              codeact::temporal::Args{input.to_json()}, start));
  std::cerr << "[example] workflow " << run.workflow_id << " started at "
            << worker->endpoint().address << "\n";

  auto outcome = client.get_result(run.workflow_id, run.run_id);
  worker->shutdown();
  if (!outcome.ok()) return outcome.failure().root_cause().to_error();
  CODEACT_TRY(auto output, durable::TaskOutput::from_json(outcome.value()));
  print_answer(output.output, output.files);
  return codeact::core::ok_status();
}

Status run(const Flags& flags) {
  // agent_prompts.yml and app_conf.yml if there are (./, $APP_PROMPTS_PATH, ~/.config/codeact/,
  // ...); without them the built-in prompts, and provider keys from the environment.
  CODEACT_TRY(auto builder, cc::AgentBuilder::load());
  builder.model = flags.model;
  if (builder.model.empty())
    std::cerr << "[example] no --model or CODEACT_MODEL: a scripted model plays the LLM\n";

  // Sandboxes are Docker containers with a live Python kernel.
  CODEACT_TRY(auto docker, codeact::sandbox::DockerClient::create());
  CODEACT_TRY_STATUS(docker->ping());  // no Docker: an error saying what to do
  // The `sandbox:` section of app_conf.yml (e.g. `disk: none`) applies, as in `codeact run`.
  CODEACT_TRY(auto manager_options,
              codeact::sandbox::manager_options_from_config(builder.config.raw));
  // The sandbox image is built on first use (a few minutes, once): show its progress.
  manager_options.progress = [](std::string_view line) { std::cerr << "  " << line << "\n"; };
  auto sandboxes = std::make_shared<codeact::sandbox::SandboxManager>(docker, manager_options);

  auto agent = std::make_shared<SimpleExampleAgent>();
  return flags.durable ? run_durable(flags, builder, agent, sandboxes)
                       : run_direct(flags, builder, *agent, sandboxes);
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  if (const char* model = std::getenv("CODEACT_MODEL")) flags.model = model;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--durable") {
      flags.durable = true;
    } else if ((arg == "--model" || arg == "--temporal") && i + 1 < argc) {
      (arg == "--model" ? flags.model : flags.temporal) = argv[++i];
    } else if (!arg.starts_with("--")) {
      flags.task = arg;
    } else {
      std::cerr << "usage: " << argv[0]
                << " [--model PROVIDER:MODEL] [--durable [--temporal HOST:PORT]] [TASK]\n";
      return 2;
    }
  }
  auto status = run(flags);
  if (!status.ok()) {
    std::cerr << "simple_agent: " << status.error().message() << "\n";
    return codeact::core::exit_code(status.error().code());
  }
  return 0;
}
