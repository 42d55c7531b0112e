// The seed's prompt variables read from a sandbox, and the instructions rendered from them before
// each request, against the in-memory backend (no Docker).
#include "codeact/codeact/prompt_variables.hpp"

#include <gtest/gtest.h>

#include "fake_sandbox_backend.hpp"

namespace codeact::codeact {
namespace {

using core::Json;
using testing::FakeSandboxBackend;

TEST(PromptVariables, ReadFromTheSandboxAsItIsNow) {
  auto backend = std::make_shared<FakeSandboxBackend>();
  ASSERT_TRUE(
      backend
          ->start(sandbox::SandboxOptions{.id = "s1", .python_packages = {"rich"}, .network = true})
          .ok());
  ASSERT_TRUE(backend->write_file("s1", "/output/a.csv", "x\n1\n").ok());
  backend->with("s1", [](FakeSandboxBackend::Sandbox& s) {
    s.variables["df"] = {"DataFrame", "...", nullptr};
    return 0;
  });
  auto vars = sandbox_prompt_variables(*backend, "s1", nullptr);
  ASSERT_TRUE(vars.ok()) << vars.error().to_string();
  EXPECT_EQ(vars->container_id, "s1");
  EXPECT_EQ(vars->python_packages, std::vector<std::string>{"rich"});
  EXPECT_EQ(vars->sandbox_variable_names,
            (std::map<std::string, std::string>{{"df", "DataFrame"}}));
  EXPECT_EQ(vars->sandbox_files, std::vector<std::string>{"/output/a.csv"});
  EXPECT_TRUE(vars->tools_as_func.empty());

  backend->fail_next("variables", core::unavailable("kernel down"));
  auto failed = sandbox_prompt_variables(*backend, "s1", nullptr);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code(), core::Code::kUnavailable);
}

TEST(PromptVariables, InstructionsAreRenderedBeforeEachRequestWithFunctionsListedOnce) {
  auto backend = std::make_shared<FakeSandboxBackend>();
  ASSERT_TRUE(backend->start(sandbox::SandboxOptions{.id = "s1"}).ok());
  auto book = agent::PromptBook::parse(R"(simple_agent:
  instructions: "Sandbox {{ container_id }}; variables {{ sandbox_variable_names }}; {{ tools_as_func | length }} functions"
)");
  ASSERT_TRUE(book.ok()) << book.error().to_string();
  auto prompt = book->get("simple_agent");
  ASSERT_TRUE(prompt.ok());
  functions::SandboxFunctionsOptions fo;
  fo.host_functions = {
      functions::host_function("twice", {"x"}, "Doubles.", [](int x) { return 2 * x; })};
  auto fns = std::make_shared<functions::SandboxFunctions>(std::move(fo));
  auto instructions = sandbox_instructions(*prompt, backend, "s1", fns);

  agent::RunLoop loop;
  agent::RunContext ctx;
  ctx.executor = &loop;
  auto first = loop.run(instructions(ctx));
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  EXPECT_EQ(*first, "Sandbox s1; variables {}; 1 functions");
  backend->with("s1", [](FakeSandboxBackend::Sandbox& s) {
    s.variables["n"] = {"int", "1", 1};
    return 0;
  });
  auto second = loop.run(instructions(ctx));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, "Sandbox s1; variables {'n': 'int'}; 1 functions")
      << "the sandbox's state now";

  backend->fail_next("info", core::unavailable("Docker is down"));
  auto failed = loop.run(instructions(ctx));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message().find("reading sandbox \"s1\""), std::string::npos)
      << failed.error().message();
}

}  // namespace
}  // namespace codeact::codeact
