// The one binding of a CodeAct agent (AgentBinder), against the in-memory sandbox backend: what
// the agent's hooks decide — its model, its tools minus the excluded ones, its own toolsets, its
// prompts rendered from the sandbox — and what a worker that binds it again and again shares.
#include "codeact/codeact/agent_binding.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "codeact/codeact/codeact_agent.hpp"
#include "fake_sandbox_backend.hpp"
#include "scripted_agent.hpp"

namespace codeact::codeact {
namespace {

using core::Json;
using testing::FakeSandboxBackend;
using testing::RecordingModel;

AgentBuilder builder() {
  AgentBuilder b;
  auto book = agent::PromptBook::parse(R"(simple_agent:
  system_prompt: "Sandbox {{ container_id }} has {{ sandbox_files | length }} files."
  instructions: "Functions: {{ tools_as_func | length }}"
analyst:
  instructions: "no system prompt"
)");
  EXPECT_TRUE(book.ok()) << book.error().to_string();
  b.prompts = std::make_shared<const agent::PromptBook>(std::move(*book));
  b.env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  return b;
}

// An agent with every hook set.
class HookedAgent final : public CodeActAgent {
 public:
  HookedAgent() : CodeActAgent("simple_agent") {}
  mutable std::atomic<int> models_made{0};
  mutable std::string model_asked;
  core::Result<std::shared_ptr<llm::Model>> llm_model(const AgentBuilder& b) const override {
    ++models_made;
    model_asked = b.model;
    return std::shared_ptr<llm::Model>(model_.model());
  }
  std::vector<std::string> excluded_tools() const override {
    return {"execute_bash", "install_additional_packages"};
  }
  std::vector<functions::HostFunction> host_functions() const override {
    return {functions::host_function("twice", {"x"}, "Doubles.", [](int x) { return 2 * x; })};
  }
  std::vector<std::shared_ptr<agent::Toolset>> toolsets(const AgentBuilder&) const override {
    return {std::make_shared<agent::FunctionToolset>(std::vector<agent::Tool>{}, "notes")};
  }

 private:
  RecordingModel model_{{RecordingModel::text("ok")}, "hooked"};
};

std::vector<std::string> tool_names(agent::Toolset& t) {
  agent::RunLoop loop;
  auto listed = loop.run(t.get_tools(agent::RunContext{}));
  std::vector<std::string> names;
  if (listed.ok())
    for (const auto& i : *listed) names.push_back(i.name());
  return names;
}

TEST(AgentBinder, TheAgentsHooksDecideItsModelToolsAndPrompts) {
  auto backend = std::make_shared<FakeSandboxBackend>();
  ASSERT_TRUE(backend->start(sandbox::SandboxOptions{.id = "s1"}).ok());
  ASSERT_TRUE(backend->write_file("s1", "/output/a.txt", "a").ok());
  AgentBinder binder(builder(), backend);
  auto agent = std::make_shared<HookedAgent>();
  BindOptions options;
  options.sandbox_id = "s1";
  options.model = "openai:gpt-4.1";
  options.tools.max_retries = 5;
  auto binding = binder.bind(agent, options);
  ASSERT_TRUE(binding.ok()) << binding.error().to_string();

  EXPECT_EQ(binding->options().tools.sandbox_id, "s1") << "the tools are bound to the sandbox";
  EXPECT_EQ(binding->model_name().value_or(""), "function:hooked");
  EXPECT_EQ(agent->model_asked, "openai:gpt-4.1") << "the hook sees the model asked for";
  ASSERT_EQ(binding->toolsets().size(), 2u);
  EXPECT_EQ(binding->toolsets()[0]->id(), "sandbox");
  EXPECT_EQ(binding->toolsets()[1]->id(), "notes");
  auto sandbox_tools = tool_names(*binding->toolsets()[0]);
  EXPECT_EQ(std::count(sandbox_tools.begin(), sandbox_tools.end(), "execute_bash"), 0)
      << "excluded";
  EXPECT_EQ(std::count(sandbox_tools.begin(), sandbox_tools.end(), "install_additional_packages"),
            0);
  EXPECT_EQ(sandbox_tools.size(), SandboxTools::tool_names().size() - 2);
  EXPECT_TRUE(binding->toolset("notes").ok());
  EXPECT_EQ(binding->toolset("web").error().code(), core::Code::kNotFound);
  ASSERT_NE(binding->functions(), nullptr) << "the host function is offered to cells";

  auto system = binding->system_prompts();
  ASSERT_TRUE(system.ok()) << system.error().to_string();
  EXPECT_EQ(*system, std::vector<std::string>{"Sandbox s1 has 1 files."});
  agent::AgentOptions ao = binding->agent_options(*system);
  EXPECT_EQ(ao.name, "simple_agent");
  EXPECT_EQ(ao.max_tool_retries, 5);
  EXPECT_EQ(ao.toolsets.size(), 2u);
  ASSERT_TRUE(ao.instructions_fn);
  agent::RunLoop loop;
  auto instructions = loop.run(ao.instructions_fn(agent::RunContext{}));
  ASSERT_TRUE(instructions.ok()) << instructions.error().to_string();
  EXPECT_EQ(*instructions, "Functions: 1");
}

TEST(AgentBinder, BindingsOfOneBinderShareTheModelAndTheFunctions) {
  auto backend = std::make_shared<FakeSandboxBackend>();
  AgentBinder binder(builder(), backend);
  auto agent = std::make_shared<HookedAgent>();
  BindOptions a{.sandbox_id = "s1"};
  BindOptions b{.sandbox_id = "s2"};
  auto first = binder.bind(agent, a);
  auto second = binder.bind(agent, b);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->functions(), second->functions())
      << "one SandboxFunctions per agent and servers";
  ASSERT_TRUE(first->model().ok());
  ASSERT_TRUE(second->model().ok());
  EXPECT_EQ(agent->models_made.load(), 1) << "one model client per agent and model name";
  EXPECT_EQ(backend->calls().size(), 0u) << "binding reads nothing from the sandbox";
}

// Regression: builder() handed out a reference to the builder that the first binding needing MCP
// servers writes (its McpServerSet) under the binder's lock, so a worker thread reading it while
// another bound raced. It now returns a copy taken under that lock.
TEST(AgentBinder, BuilderIsSafeToReadWhileOtherThreadsBind) {
  auto backend = std::make_shared<FakeSandboxBackend>();
  AgentBinder binder(builder(), backend);
  EXPECT_EQ(binder.builder().mcp, nullptr) << "no MCP servers needed yet";
  std::atomic<bool> binding_done{false};
  std::set<const mcp::McpServerSet*> seen;
  std::thread reader([&] {
    while (!binding_done.load()) {
      AgentBuilder copy = binder.builder();
      seen.insert(copy.mcp.get());
      EXPECT_NE(copy.prompts, nullptr);
    }
  });
  std::vector<std::thread> binders;
  std::vector<std::shared_ptr<mcp::McpServerSet>> sets(4);
  for (int i = 0; i < 4; ++i) {
    binders.emplace_back([&, i] {
      for (int n = 0; n < 50; ++n) {
        auto b = binder.bind(
            std::make_shared<CodeActAgent>("simple_agent"),
            BindOptions{.sandbox_id = "s" + std::to_string(i), .mcp_servers = {"time"}});
        ASSERT_TRUE(b.ok()) << b.error().to_string();
      }
      sets[i] = binder.builder().mcp;
    });
  }
  for (auto& t : binders) t.join();
  binding_done = true;
  reader.join();
  const auto shared = binder.builder().mcp;
  ASSERT_NE(shared, nullptr) << "the first binding that needed MCP servers made the set";
  for (const auto& s : sets) EXPECT_EQ(s, shared) << "every binding shares one McpServerSet";
  seen.erase(nullptr);
  EXPECT_LE(seen.size(), 1u) << "readers saw no set but the shared one";
  if (!seen.empty()) {
    EXPECT_EQ(*seen.begin(), shared.get());
  }
}

TEST(AgentBinder, WhatCannotBeBoundSaysWhy) {
  auto backend = std::make_shared<FakeSandboxBackend>();
  AgentBinder binder(builder(), backend);
  auto unknown =
      binder.bind(std::make_shared<CodeActAgent>("nobody"), BindOptions{.sandbox_id = "s1"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code(), core::Code::kNotFound);
  EXPECT_NE(unknown.error().message().find("analyst"), std::string::npos)
      << "names the agents there are";

  // A server app_conf.yml does not have: the binding is made (it reads nothing), the first use
  // of the functions says which server.
  ASSERT_TRUE(backend->start(sandbox::SandboxOptions{.id = "s1"}).ok());
  auto mcp = binder.bind(std::make_shared<CodeActAgent>("simple_agent"),
                         BindOptions{.sandbox_id = "s1", .mcp_servers = {"time"}});
  ASSERT_TRUE(mcp.ok()) << mcp.error().to_string();
  auto system = mcp->system_prompts();
  ASSERT_FALSE(system.ok());
  EXPECT_NE(system.error().message().find("time"), std::string::npos) << system.error().message();

  BindOptions bad{.sandbox_id = "s1"};
  bad.tools.max_timeout_seconds = 0;
  auto invalid = binder.bind(std::make_shared<CodeActAgent>("analyst"), bad);
  ASSERT_FALSE(invalid.ok());
  EXPECT_NE(invalid.error().message().find("max_timeout_seconds"), std::string::npos);

  auto plain =
      binder.bind(std::make_shared<CodeActAgent>("analyst"), BindOptions{.sandbox_id = "s1"});
  ASSERT_TRUE(plain.ok()) << plain.error().to_string();
  EXPECT_EQ(plain->functions(), nullptr) << "no hooks, no functions";
  EXPECT_TRUE(plain->system_prompts()->empty()) << "an agent without a system prompt has none";
}

}  // namespace
}  // namespace codeact::codeact
