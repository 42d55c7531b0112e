// An agent with one C++ host function, run in a real sandbox by a scripted FunctionModel: the
// model writes a cell that calls the host function and answers with what the cell printed.
// Prints that answer; exits non-zero with the error otherwise.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "codeact/codeact/codeact_agent.hpp"
#include "codeact/functions/host_function.hpp"
#include "codeact/llm/function_model.hpp"
#include "codeact/sandbox/docker_client.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"

namespace cc = codeact::codeact;
namespace core = codeact::core;
namespace llm = codeact::llm;

namespace {

// Known only to the host: the sandbox can learn it only by calling price_with_tax().
constexpr double kTaxRate = 0.19;

std::shared_ptr<llm::Model> scripted_model() {
  auto respond = [](const std::vector<llm::ModelMessage>& messages,
                    const llm::AgentInfo&) -> core::Result<llm::ModelResponse> {
    llm::ModelResponse response;
    const auto* last = std::get_if<llm::ModelRequest>(&messages.back());
    for (const auto& part : last ? last->parts : std::vector<llm::ModelRequestPart>{}) {
      if (const auto* refused = std::get_if<llm::RetryPromptPart>(&part))
        return core::failed_precondition("the sandbox refused the cell: " + refused->content);
      if (const auto* cell = std::get_if<llm::ToolReturnPart>(&part)) {
        response.parts.push_back(llm::TextPart{"cell said: " + cell->content_text()});
        return response;
      }
    }
    response.parts.push_back(
        llm::ToolCallPart{.tool_name = "execute_python",
                          .args = {{"code", "print('gross', price_with_tax(200.0))"}},
                          .tool_call_id = "call_1"});
    return response;
  };
  return std::make_shared<llm::FunctionModel>(respond, nullptr, "scripted");
}

class TaxAgent final : public cc::CodeActAgent {
 public:
  TaxAgent() : CodeActAgent("simple_agent") {}
  std::vector<codeact::functions::HostFunction> host_functions() const override {
    return {codeact::functions::host_function(
        "price_with_tax", {"net"}, "The gross price of a net price, with the host's tax rate.",
        [](double net) -> core::Result<double> { return net * (1 + kTaxRate); })};
  }
  core::Result<std::shared_ptr<llm::Model>> llm_model(const cc::AgentBuilder&) const override {
    return scripted_model();
  }
};

}  // namespace

int main() {
  auto builder = cc::AgentBuilder::load();
  auto docker = codeact::sandbox::DockerClient::create();
  if (!builder.ok() || !docker.ok()) {
    std::cerr << "consumer: " << (builder.ok() ? docker.error() : builder.error()).message()
              << "\n";
    return 1;
  }
  // The `sandbox:` section of app_conf.yml (e.g. `disk: none`) applies, as in `codeact run`.
  auto manager_options = codeact::sandbox::manager_options_from_config(builder->config.raw);
  if (!manager_options.ok()) {
    std::cerr << "consumer: " << manager_options.error().message() << "\n";
    return 1;
  }
  auto manager = std::make_shared<codeact::sandbox::SandboxManager>(*docker, *manager_options);
  cc::CodeActRunOptions options;
  options.sandbox_id = "consumer-" + std::to_string(::getpid());
  options.remove_volume = true;
  auto result = TaxAgent().run_direct("What is 200 with tax?", *builder, manager, options);
  if (!result.ok()) {
    std::cerr << "consumer: " << result.error().message() << "\n";
    return 1;
  }
  std::cout << result->output.message << "\n";
  return 0;
}
