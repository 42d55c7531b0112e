// sandbox_tools_agent: an agent that gets only the sandbox tools it needs.
//
//   codeact_example_sandbox_tools_agent
//   codeact_example_sandbox_tools_agent --model openai:gpt-4o "Summarise these readings: ..."
//
// SandboxTools offers nine tools on the agent's sandbox (execute_python, execute_bash, read_file,
// write_file, list_files, list_state_variables, read_state_variable, install_additional_packages,
// clear_python_state). This agent keeps four of them: its excluded_tools() hook names the others,
// which the model is never shown and cannot call. The prompts come from code (a PromptBook)
// rather than agent_prompts.yml, and the tools' limits (timeouts, output sizes, retries) are set
// per run. Without --model or $CODEACT_MODEL a scripted model plays the LLM; it first tries a
// tool it was not given, to show that the call is refused.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "codeact/codeact/codeact_agent.hpp"
#include "codeact/llm/function_model.hpp"
#include "codeact/sandbox/docker_client.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"

namespace {

namespace agent = codeact::agent;
namespace cc = codeact::codeact;
namespace llm = codeact::llm;
using codeact::core::Json;
using codeact::core::Result;
using codeact::core::Status;

// The sandbox tools this agent's model may call.
const std::vector<std::string> kChosenTools = {"write_file", "execute_python", "read_file",
                                               "list_files"};

// The agent's prompts (Jinja templates, docs/templates.md), keyed by its name as in
// agent_prompts.yml. The instructions are rendered again before every model request, so the model
// sees the sandbox's files as they are now.
constexpr const char* kPrompts = R"yaml(
report_agent:
  system_prompt: >-
    You turn raw data into short reports. Put input data in the sandbox with write_file, analyse
    it with execute_python, save the report under /output and check it with read_file before
    you answer.
  instructions: |
    You work in the sandbox {{ container_id }}; its Python kernel keeps variables between calls.
    {%- if sandbox_files %}
    Files in the sandbox: {{ sandbox_files | join(", ") }}.
    {%- endif %}
    There is no shell, no network and no package installer: use Python's standard library,
    numpy and pandas. Answer with the text of the report.
)yaml";

constexpr const char* kDefaultTask =
    "Here are today's sensor readings (sensor,celsius): t1,21.5 t1,22.1 t1,23.0 t2,19.4 t2,18.9 "
    "t3,25.2 t3,26.8 t3,24.9. Write a Markdown report with the mean, min and max per sensor.";

// The scripted model's moves, one per step; each sees what the tool answered the step before.
std::vector<llm::ToolCallPart> scripted_calls() {
  const std::string csv =
      "sensor,celsius\nt1,21.5\nt1,22.1\nt1,23.0\nt2,19.4\nt2,18.9\nt3,25.2\nt3,26.8\nt3,24.9\n";
  const std::string cell = R"py(import pandas as pd
readings = pd.read_csv("/output/readings.csv")
stats = readings.groupby("sensor")["celsius"].agg(["mean", "min", "max"]).round(2)
hottest = stats["mean"].idxmax()
report = "# Sensor report\n\n" + stats.to_string() + f"\n\nWarmest on average: {hottest}\n"
with open("/output/report.md", "w") as f:
    f.write(report)
print(f"{len(readings)} readings from {readings['sensor'].nunique()} sensors")
)py";
  return {
      {.tool_name = "execute_bash", .args = {{"script", "ls /"}}, .tool_call_id = "call_1"},
      {.tool_name = "write_file",
       .args = {{"path", "/output/readings.csv"}, {"content", csv}},
       .tool_call_id = "call_2"},
      {.tool_name = "execute_python", .args = {{"code", cell}}, .tool_call_id = "call_3"},
      {.tool_name = "read_file", .args = {{"path", "/output/report.md"}}, .tool_call_id = "call_4"},
  };
}

// A stand-in for an LLM: plays scripted_calls(), then answers with the tools it was offered and
// the report it read back. Stateless (it counts the answered calls in the conversation), hence
// thread-safe.
std::shared_ptr<llm::Model> scripted_model() {
  auto respond = [](const std::vector<llm::ModelMessage>& messages,
                    const llm::AgentInfo& info) -> Result<llm::ModelResponse> {
    size_t answered = 0;   // tool calls answered so far, refusals (retry prompts) included
    std::string returned;  // what the last tool that ran returned
    for (const auto& message : messages) {
      const auto* request = std::get_if<llm::ModelRequest>(&message);
      for (const auto& part : request ? request->parts : std::vector<llm::ModelRequestPart>{}) {
        if (const auto* result = std::get_if<llm::ToolReturnPart>(&part)) {
          ++answered;
          returned = result->content_text();
        } else if (std::holds_alternative<llm::RetryPromptPart>(part)) {
          ++answered;
        }
      }
    }
    llm::ModelResponse response;
    const auto calls = scripted_calls();
    if (answered < calls.size()) {
      response.parts.push_back(calls[answered]);
      return response;
    }
    std::string offered;
    for (const auto& tool :
         info.params ? info.params->function_tools : std::vector<llm::ToolDefinition>{})
      offered += (offered.empty() ? "" : ", ") + tool.name;
    response.parts.push_back(llm::TextPart{"Tools I was given: " + offered + ".\n\n" + returned});
    return response;
  };
  return std::make_shared<llm::FunctionModel>(respond, nullptr, "scripted");
}

class ReportAgent final : public cc::CodeActAgent {
 public:
  ReportAgent() : CodeActAgent("report_agent") {}

  // The seed's blacklist: every sandbox tool that is not chosen.
  std::vector<std::string> excluded_tools() const override {
    std::vector<std::string> excluded;
    for (const auto& name : cc::SandboxTools::tool_names()) {
      if (std::find(kChosenTools.begin(), kChosenTools.end(), name) == kChosenTools.end())
        excluded.push_back(name);
    }
    return excluded;
  }

  Result<std::shared_ptr<llm::Model>> llm_model(const cc::AgentBuilder& builder) const override {
    if (builder.model.empty()) return scripted_model();
    return CodeActAgent::llm_model(builder);
  }
};

// One line per tool call (its path, or the first line of its code), and the refusals.
void show(const agent::AgentEvent& event) {
  if (const auto* call = std::get_if<agent::ToolCallEvent>(&event)) {
    const Json& args = call->part.args;
    std::string what = args.value("path", args.value("code", std::string()));
    if (size_t eol = what.find('\n'); eol != std::string::npos) what = what.substr(0, eol) + " ...";
    std::cout << "── " << call->part.tool_name << " " << what << "\n";
  } else if (const auto* result = std::get_if<agent::ToolResultEvent>(&event)) {
    if (const auto* retry = std::get_if<llm::RetryPromptPart>(&result->result))
      std::cout << "── " << retry->tool_name << " refused: " << retry->content << "\n";
  }
}

Status run(const std::string& task, const std::string& model) {
  CODEACT_TRY(auto builder, cc::AgentBuilder::load());  // app_conf.yml, for provider keys
  CODEACT_TRY(auto prompts, agent::PromptBook::parse(kPrompts, "report_agent prompts (main.cpp)"));
  builder.prompts = std::make_shared<const agent::PromptBook>(std::move(prompts));
  builder.model = model;
  if (model.empty())
    std::cerr << "[example] no --model or CODEACT_MODEL: a scripted model plays the LLM\n";

  CODEACT_TRY(auto docker, codeact::sandbox::DockerClient::create());
  CODEACT_TRY_STATUS(docker->ping());
  // The `sandbox:` section of app_conf.yml (e.g. `disk: none`) applies, as in `codeact run`.
  CODEACT_TRY(auto manager_options,
              codeact::sandbox::manager_options_from_config(builder.config.raw));
  auto manager = std::make_shared<codeact::sandbox::SandboxManager>(docker, manager_options);

  cc::CodeActRunOptions options;
  options.tools.default_timeout_seconds = 30;  // a cell or script the model gives no timeout
  options.tools.max_timeout_seconds = 120;     // the most the model may ask for
  options.tools.max_output_bytes = 4000;       // of each stream, shown to the model
  options.tools.max_retries = 2;               // failures in a row of one tool before giving up
  options.remove_volume = true;                // leave nothing behind
  options.on_event = show;
  ReportAgent agent;
  CODEACT_TRY(auto result, agent.run_direct(task, builder, manager, std::move(options)));
  for (const auto& path : result.output.file_paths)
    std::cout << "file produced in the sandbox: " << path << "\n";
  const std::string& answer = result.output.message;
  std::cout << "── answer\n" << answer << (answer.ends_with('\n') ? "" : "\n");
  return codeact::core::ok_status();
}

}  // namespace

int main(int argc, char** argv) {
  std::string task = kDefaultTask;
  std::string model = std::getenv("CODEACT_MODEL") ? std::getenv("CODEACT_MODEL") : "";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--model" && i + 1 < argc) {
      model = argv[++i];
    } else if (!arg.starts_with("--")) {
      task = arg;
    } else {
      std::cerr << "usage: " << argv[0] << " [--model PROVIDER:MODEL] [TASK]\n";
      return 2;
    }
  }
  auto status = run(task, model);
  if (!status.ok()) {
    std::cerr << "sandbox_tools_agent: " << status.error().message() << "\n";
    return codeact::core::exit_code(status.error().code());
  }
  return 0;
}
