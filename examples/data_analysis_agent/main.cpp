// data_analysis_agent: a data analyst whose code calls functions you give it, from C++ and from
// Python.
//
//   codeact_example_data_analysis_agent
//   codeact_example_data_analysis_agent --model openai:gpt-4o "Which month grew fastest?"
//
//   - Host functions (C++, run in this process): load_sales() reads the sales ledger and
//     usd_rate() the exchange rates, data the sandbox has no other way to reach. Sandbox code
//     calls them as plain Python functions; the call travels over the kernel's bridge.
//   - Custom Python functions (kAnalysisFunctions), defined once in the sandbox's kernel. Their
//     third-party imports are detected and the missing ones installed on first use: pandas is in
//     the sandbox image, tabulate is not, so pip installs it. That needs network, which a
//     sandbox has only when asked for (options.network below).
// The model is shown every function's signature and docstring (the tools_as_func prompt
// variable). Files the analysis saves under /output are copied to ./data_analysis_output/.
// Without --model or $CODEACT_MODEL a scripted model plays the LLM.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

#include "codeact/codeact/codeact_agent.hpp"
#include "codeact/functions/host_function.hpp"
#include "codeact/functions/python_functions.hpp"
#include "codeact/llm/function_model.hpp"
#include "codeact/sandbox/docker_client.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"

namespace {

namespace agent = codeact::agent;
namespace cc = codeact::codeact;
namespace core = codeact::core;
namespace functions = codeact::functions;
namespace llm = codeact::llm;
using core::Json;
using core::Result;
using core::Status;

// Python functions for the sandbox, as you would keep them in a .py file
// (functions::PythonFunctionSource::from_file reads one).
constexpr const char* kAnalysisFunctions = R"py(
import pandas as pd
from tabulate import tabulate


def totals_by(df: pd.DataFrame, key: str, value: str = "revenue_usd") -> pd.DataFrame:
    """Sum of `value` per distinct `key`, largest first, with each group's share of the total."""
    out = df.groupby(key, as_index=False)[value].sum().sort_values(value, ascending=False)
    out["share"] = out[value] / out[value].sum()
    return out.reset_index(drop=True)


def markdown_table(df: pd.DataFrame) -> str:
    """A DataFrame as a Markdown table, numbers with thousands separators and two decimals."""
    return tabulate(df, headers="keys", tablefmt="github", showindex=False, floatfmt=",.2f")
)py";

// The host's data (a database in a real program): the sales ledger by quarter, exchange rates.
const Json kLedger = Json::parse(R"json({"2025-Q1": [
  {"month": "Jan", "region": "North", "currency": "EUR", "revenue": 120500},
  {"month": "Jan", "region": "South", "currency": "USD", "revenue": 98000},
  {"month": "Jan", "region": "West", "currency": "GBP", "revenue": 64250},
  {"month": "Feb", "region": "North", "currency": "EUR", "revenue": 131000},
  {"month": "Feb", "region": "South", "currency": "USD", "revenue": 91500},
  {"month": "Feb", "region": "West", "currency": "GBP", "revenue": 70900},
  {"month": "Mar", "region": "North", "currency": "EUR", "revenue": 142750},
  {"month": "Mar", "region": "South", "currency": "USD", "revenue": 104300},
  {"month": "Mar", "region": "West", "currency": "GBP", "revenue": 69800}
]})json");
const std::map<std::string, double> kUsdRates = {{"USD", 1.0}, {"EUR", 1.08}, {"GBP", 1.27}};

// C++ functions sandbox code may call. The parameter names give the Python signature; the C++
// types its annotations ("def usd_rate(currency: str) -> float"); arguments are checked before
// the lambda runs. An Error returned here is raised in the sandbox as ToolError.
std::vector<functions::HostFunction> analysis_host_functions() {
  return {
      functions::host_function(
          "load_sales", {"quarter"},
          "Sales of a quarter (\"2025-Q1\"): a list of {month, region, currency, revenue}.",
          [](std::string quarter) -> Result<Json> {
            if (!kLedger.contains(quarter))
              return core::not_found("no sales for quarter \"" + quarter + "\"");
            return kLedger.at(quarter);
          }),
      functions::host_function("usd_rate", {"currency"},
                               "US dollars per unit of `currency` (\"EUR\", \"GBP\", \"USD\").",
                               [](std::string currency) -> Result<double> {
                                 auto rate = kUsdRates.find(currency);
                                 if (rate == kUsdRates.end())
                                   return core::not_found("no rate for \"" + currency + "\"");
                                 return rate->second;
                               }),
  };
}

// The agent's prompts, keyed by its name as in agent_prompts.yml. tools_as_func lists the
// functions above (signature and docstring each).
constexpr const char* kPrompts = R"yaml(
data_analyst:
  system_prompt: >-
    You are a data analyst. You answer questions about the company's sales by writing pandas code
    that runs in a sandbox. Get data only through the functions listed below, and save every
    chart under /output.
  instructions: |
    You work in the sandbox {{ container_id }}; its kernel keeps variables between calls.
    {%- if sandbox_variable_names %}
    Variables so far: {{ sandbox_variable_names | join(", ") }}.
    {%- endif %}
    {%- if sandbox_files %}
    Files so far: {{ sandbox_files | join(", ") }}.
    {%- endif %}
    Call these functions from your code like any other (no import, no await):
    {% for func in tools_as_func %}
    ```python
    {{ func }}
    ```
    {% endfor %}
    Answer with the figures the user asked for.
)yaml";

constexpr const char* kDefaultTask =
    "Which region brought in the most revenue in 2025-Q1, in US dollars? Show the totals per "
    "region as a table and save a bar chart.";

// The cell the scripted model writes: host functions, then the Python ones.
constexpr const char* kScriptedCell = R"py(import matplotlib.pyplot as plt
import pandas as pd
sales = pd.DataFrame(load_sales("2025-Q1"))
sales["revenue_usd"] = sales["revenue"] * sales["currency"].map(usd_rate)
by_region = totals_by(sales, "region")
print(markdown_table(by_region))
ax = by_region.plot.bar(x="region", y="revenue_usd", rot=0, legend=False,
                        title="Revenue 2025-Q1 (USD)")
ax.figure.savefig("/output/revenue_by_region.png", bbox_inches="tight")
plt.close(ax.figure)  # saved: the kernel need not save it again as a figure of the cell
best = by_region.iloc[0]
print(f"\nTop region: {best['region']}, {best['share']:.0%} of the quarter's revenue")
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

// A stand-in for an LLM: writes kScriptedCell, then answers with what it printed and the
// functions its instructions listed. Stateless, hence thread-safe.
std::shared_ptr<llm::Model> scripted_model() {
  auto respond = [](const std::vector<llm::ModelMessage>& messages,
                    const llm::AgentInfo&) -> Result<llm::ModelResponse> {
    llm::ModelResponse response;
    const auto* last = std::get_if<llm::ModelRequest>(&messages.back());
    for (const auto& part : last ? last->parts : std::vector<llm::ModelRequestPart>{}) {
      // A refused cell (its functions could not be set up, say): a real model would try another
      // way; this one gives up, and the run fails with the reason.
      if (const auto* refused = std::get_if<llm::RetryPromptPart>(&part))
        return core::failed_precondition("the sandbox refused the cell: " + refused->content);
      if (const auto* cell = std::get_if<llm::ToolReturnPart>(&part)) {
        std::string shown;  // the "def ..." lines of the instructions
        std::istringstream lines(last->instructions);
        for (std::string line; std::getline(lines, line);) {
          if (line.starts_with("def ")) shown += "  " + line + "\n";
        }
        response.parts.push_back(llm::TextPart{"Functions I was shown:\n" + shown + "\n" +
                                               printed(cell->content_text())});
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

class DataAnalysisAgent final : public cc::CodeActAgent {
 public:
  DataAnalysisAgent() : CodeActAgent("data_analyst") {}

  std::vector<functions::HostFunction> host_functions() const override {
    return analysis_host_functions();
  }
  std::vector<functions::PythonFunctionSource> custom_functions() const override {
    return {
        functions::PythonFunctionSource::from_string(kAnalysisFunctions, "analysis_functions.py")};
  }
  Result<std::shared_ptr<llm::Model>> llm_model(const cc::AgentBuilder& builder) const override {
    if (builder.model.empty()) return scripted_model();
    return CodeActAgent::llm_model(builder);
  }
};

// Copies the sandbox's files to `dir` on the host; returns the host paths.
Result<std::vector<std::string>> copy_out(codeact::sandbox::SandboxBackend& sandbox,
                                          const std::string& id,
                                          const std::vector<std::string>& paths,
                                          const std::filesystem::path& dir) {
  std::vector<std::string> copied;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return core::internal_error("creating " + dir.string() + ": " + error.message());
  for (const auto& path : paths) {
    CODEACT_TRY(auto bytes, sandbox.read_file(id, path));
    const auto target = dir / std::filesystem::path(path).filename();
    if (!(std::ofstream(target, std::ios::binary) << bytes))
      return core::internal_error("could not write " + target.string());
    copied.push_back(target.string());
  }
  return copied;
}

Status run(const std::string& task, const std::string& model) {
  CODEACT_TRY(auto builder, cc::AgentBuilder::load());  // app_conf.yml, for provider keys
  CODEACT_TRY(auto prompts, agent::PromptBook::parse(kPrompts, "data_analyst prompts (main.cpp)"));
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
  options.sandbox_id = "data-analysis-" + std::to_string(std::random_device()());
  options.network = true;       // pip needs it to install tabulate for analysis_functions.py
  options.keep_sandbox = true;  // still running at the end, so its files can be copied out
  options.on_progress = [](const std::string& line) { std::cerr << "[codeact] " << line << "\n"; };
  const std::string id = options.sandbox_id;
  DataAnalysisAgent agent;
  auto result = agent.run_direct(task, builder, manager, std::move(options));

  Result<std::vector<std::string>> copied = std::vector<std::string>{};
  if (result.ok())
    copied = copy_out(*manager, id, result->output.file_paths, "data_analysis_output");
  if (manager->remove(id, /*volume=*/true).ok())  // then nothing is left behind
    std::cerr << "[example] sandbox " << id << " removed with its volume\n";
  if (!result.ok()) return result.error();
  if (!copied.ok()) return copied.error();
  for (const auto& path : *copied) std::cout << "file copied to the host: " << path << "\n";
  const std::string& answer = result->output.message;
  std::cout << "── answer\n" << answer << (answer.ends_with('\n') ? "" : "\n");
  return core::ok_status();
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
    std::cerr << "data_analysis_agent: " << status.error().message() << "\n";
    return core::exit_code(status.error().code());
  }
  return 0;
}
