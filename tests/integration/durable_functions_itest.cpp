// MCP tools and host functions in durable mode: a CodeActTaskWorkflow on a real Temporal dev
// server, run by an in-process worker whose agent offers a C++ host function and two MCP servers
// (stdio mcp-server-time with a secret in its environment, the SDK fixture over Streamable HTTP
// behind a bearer token). One cell calls all three through the kernel's bridge, inside the
// codeact.tool_call activity; no credential may appear in the workflow's history or in
// `docker inspect` of the sandbox.
#include <gtest/gtest.h>

#include <random>

#include "codeact/codeact/codeact_agent.hpp"
#include "codeact/core/subprocess.hpp"
#include "codeact/durable/workflows.hpp"
#include "codeact/sandbox/docker_client.hpp"
#include "codeact/sandbox/image_builder.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"
#include "dev_server.hpp"
#include "mcp_test_support.hpp"
#include "openai_script.hpp"

namespace codeact::durable {
namespace {

using namespace ::codeact::testing;
using namespace ::codeact::mcp::testing;
using llm::testing::json_response;
using temporal::testing::DevServer;

std::string random_hex() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}", rd(), rd());
}

// An agent defined in C++: the prompts of simple_agent, a host function and two MCP servers.
class ToolAgent final : public codeact::CodeActAgent {
 public:
  ToolAgent() : CodeActAgent("simple_agent") {}
  std::vector<std::string> mcp_servers(const codeact::AgentBuilder&) const override {
    return {"time", "fixture"};
  }
  std::vector<functions::HostFunction> host_functions() const override {
    return {functions::host_function("host_mul", {"a", "b"}, "Multiplies on the host.",
                                     [](int64_t a, int64_t b) { return a * b; })};
  }
};

TEST(DurableFunctions, OneCellCallsTwoMcpServersAndAHostFunctionAndNoSecretLeaks) {
  CODEACT_REQUIRE_MCP_VENV();
  auto docker = sandbox::DockerClient::create();
  ASSERT_TRUE(docker.ok()) << docker.error().to_string();
  ASSERT_TRUE(sandbox::ImageBuilder(*docker).ensure_image().ok());
  auto manager = std::make_shared<sandbox::SandboxManager>(*docker);

  const std::string env_secret = "env-secret-" + random_hex();
  const std::string header_secret = "hdr-secret-" + random_hex();
  HttpFixture http({"--transport", "streamable-http", "--require-token", header_secret});
  ASSERT_TRUE(http.error().empty()) << http.error();
  auto time = stdio("time", venv_bin("mcp-server-time"), {"--local-timezone", "UTC"});
  time.env["CODEACT_TEST_SECRET"] = env_secret;
  mcp::McpServerConfig fixture;
  fixture.name = "fixture";
  fixture.transport = mcp::TransportKind::kStreamableHttp;
  fixture.url = http.url("/mcp");
  fixture.headers = {{"Authorization", "Bearer " + header_secret}};

  FakeProviderServer model;
  model.enqueue(json_response(python_call("call_1",
                                          "t = get_current_time(timezone='Europe/Paris')\n"
                                          "s = add(2, b=40)\n"
                                          "h = host_mul(6, 7)\n"
                                          "print(t['timezone'], s, h)\n")));
  model.enqueue(json_response(text_answer("Paris, 42 and 42.")));

  auto env = std::make_shared<WorkerEnv>();
  auto builder =
      codeact::AgentBuilder::load(std::string(CODEACT_SOURCE_DIR) + "/config/agent_prompts.yml",
                                  std::string(CODEACT_SOURCE_DIR) + "/config/app_conf.yml");
  ASSERT_TRUE(builder.ok()) << builder.error().message();
  env->builder = std::move(*builder);
  env->builder.mcp =
      std::make_shared<mcp::McpServerSet>(std::vector<mcp::McpServerConfig>{time, fixture});
  env->backend = manager;
  env->agents["tool_agent"] = std::make_shared<ToolAgent>();

  const std::string queue = temporal::testing::unique_name("durable-fn");
  temporal::Worker worker(DevServer::client(), temporal::WorkerOptions{.task_queue = queue});
  register_codeact(worker, env);
  ASSERT_TRUE(worker.start().ok());

  TaskInput in;
  in.task = "Ask the clock and the functions.";
  in.agent = "tool_agent";
  in.model = "openai-compatible:scripted@" + model.base_url("/v1");
  const std::string id = "durable-fn-" + random_hex().substr(0, 8);
  auto client = DevServer::client();
  temporal::StartWorkflowOptions so;
  so.id = id;
  so.task_queue = queue;
  ASSERT_TRUE(client.start_workflow(kTaskWorkflow, temporal::Args{in.to_json()}, so).ok());
  auto result = client.get_result(id, "", std::chrono::minutes(5));
  ASSERT_TRUE(result.ok()) << result.failure().to_string();
  auto out = TaskOutput::from_json(result.value());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->output, "Paris, 42 and 42.");

  // The cell ran on the worker's bridge: both servers and the host function answered.
  ASSERT_EQ(model.request_count(), 2u);
  EXPECT_NE(tool_message(request_messages(model, 1), "call_1").find("Europe/Paris 42 42"),
            std::string::npos)
      << tool_message(request_messages(model, 1), "call_1");
  // The model was shown their signatures (tools_as_func, rendered on the worker).
  const std::string instructions = system_text(request_messages(model, 0));
  EXPECT_NE(instructions.find("def host_mul(a: int, b: int) -> int"), std::string::npos)
      << instructions;
  EXPECT_NE(instructions.find("def get_current_time(timezone: str)"), std::string::npos)
      << instructions;

  // No credential in the workflow's history, nor in the container's configuration.
  auto history = client.fetch_history(id);
  ASSERT_TRUE(history.ok()) << history.error().to_string();
  const std::string h = history->to_json().dump();
  EXPECT_NE(h.find("codeact.tool_call"), std::string::npos);
  EXPECT_EQ(h.find(env_secret), std::string::npos);
  EXPECT_EQ(h.find(header_secret), std::string::npos);
  auto inspect =
      core::run_process({"docker", "inspect", "codeact-" + id}, std::chrono::seconds(30));
  ASSERT_TRUE(inspect.ok());
  EXPECT_NE(inspect->stdout_text.find("codeact-" + id), std::string::npos)
      << "the stopped container is inspectable";
  EXPECT_EQ(inspect->stdout_text.find(env_secret), std::string::npos);
  EXPECT_EQ(inspect->stdout_text.find(header_secret), std::string::npos);

  worker.shutdown(std::chrono::seconds(5));
  (void)manager->remove(id, true);
}

}  // namespace
}  // namespace codeact::durable
