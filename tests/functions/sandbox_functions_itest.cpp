// SandboxFunctions against a real sandbox (Docker + the sandbox image) and real MCP servers:
// one cell calling tools of two servers (stdio mcp-server-time, our SDK fixture over Streamable
// HTTP with a bearer token) and a host function; tool errors and images; Python functions from
// source; and no credential in the container, its environment or what the model reads.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "codeact/core/subprocess.hpp"
#include "codeact/functions/sandbox_functions.hpp"
#include "codeact/sandbox/image_builder.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"
#include "mcp_test_support.hpp"

namespace codeact::functions {
namespace {

using namespace ::codeact::mcp::testing;
using namespace std::chrono_literals;
using sandbox::ExecuteRequest;
using sandbox::ExecuteResult;

std::string random_hex() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}", rd(), rd());
}

class SandboxFunctionsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!have_venv()) return;
    auto docker = sandbox::DockerClient::create();
    ASSERT_TRUE(docker.ok()) << docker.error().to_string();
    docker_ = *docker;
    sandbox::ImageBuilder builder(docker_);
    auto tag = builder.ensure_image();
    ASSERT_TRUE(tag.ok()) << tag.error().to_string();
    manager_ = std::make_shared<sandbox::SandboxManager>(docker_);
    id_ = "mcptest-" + std::to_string(::getpid());
    sandbox::SandboxOptions o;
    o.id = id_;
    auto info = manager_->start(o);
    ASSERT_TRUE(info.ok()) << info.error().to_string();
    env_secret_ = "env-secret-" + random_hex();
    header_secret_ = "hdr-secret-" + random_hex();
    http_ = std::make_unique<HttpFixture>(std::vector<std::string>{
        "--transport", "streamable-http", "--require-token", header_secret_});
    ASSERT_TRUE(http_->error().empty()) << http_->error();
    auto time = stdio("time", venv_bin("mcp-server-time"), {"--local-timezone", "UTC"});
    time.env["CODEACT_TEST_SECRET"] = env_secret_;
    mcp::McpServerConfig fixture;
    fixture.name = "fixture";
    fixture.transport = mcp::TransportKind::kStreamableHttp;
    fixture.url = http_->url("/mcp");
    fixture.headers = {{"Authorization", "Bearer " + header_secret_}};
    servers_ =
        std::make_shared<mcp::McpServerSet>(std::vector<mcp::McpServerConfig>{time, fixture});
  }
  static void TearDownTestSuite() {
    if (manager_) (void)manager_->remove(id_, true);
    servers_.reset();
    http_.reset();
    manager_.reset();
    docker_.reset();
  }
  void SetUp() override { CODEACT_REQUIRE_MCP_VENV(); }

  static SandboxFunctionsOptions options() {
    SandboxFunctionsOptions o;
    o.mcp = servers_;
    o.host_functions.push_back(host_function("host_mul", {"a", "b"}, "Multiplies on the host.",
                                             [](int64_t a, int64_t b) { return a * b; }));
    return o;
  }

  static ExecuteResult run(SandboxFunctions& tools, const std::string& code) {
    ExecuteRequest req;
    req.code = code;
    req.timeout_seconds = 120;
    auto r = tools.execute(*manager_, id_, req);
    EXPECT_TRUE(r.ok()) << r.error().to_string();
    return r.ok() ? *r : ExecuteResult{};
  }

  static std::shared_ptr<sandbox::DockerClient> docker_;
  static std::shared_ptr<sandbox::SandboxManager> manager_;
  static std::shared_ptr<mcp::McpServerSet> servers_;
  static std::unique_ptr<HttpFixture> http_;
  static std::string id_, env_secret_, header_secret_;
};
std::shared_ptr<sandbox::DockerClient> SandboxFunctionsTest::docker_;
std::shared_ptr<sandbox::SandboxManager> SandboxFunctionsTest::manager_;
std::shared_ptr<mcp::McpServerSet> SandboxFunctionsTest::servers_;
std::unique_ptr<HttpFixture> SandboxFunctionsTest::http_;
std::string SandboxFunctionsTest::id_, SandboxFunctionsTest::env_secret_,
    SandboxFunctionsTest::header_secret_;

TEST_F(SandboxFunctionsTest, OneCellCallsTwoServersAndAHostFunction) {
  SandboxFunctions tools(options());
  auto r = run(tools,
               "t = get_current_time(timezone='Europe/Paris')\n"
               "s = add(2, b=40)\n"
               "h = host_mul(6, 7)\n"
               "p = person(name='Ada', age=36)\n"
               "print(t['timezone'], s, h, p['name'], type(p).__name__)\n");
  EXPECT_TRUE(r.ok) << (r.error ? r.error->message + r.error->traceback : "");
  EXPECT_EQ(r.stdout_text, "Europe/Paris 42 42 Ada dict\n");
  auto fns = tools.tools_as_func(*manager_, id_);
  ASSERT_TRUE(fns.ok()) << fns.error().to_string();
  std::string all;
  for (const auto& f : *fns) all += f + "\n";
  EXPECT_NE(all.find("def get_current_time(timezone: str)"), std::string::npos) << all;
  EXPECT_NE(all.find("def add(a: int, b: int = 1) -> int:\n    \"\"\"Adds two integers.\"\"\""),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("def host_mul(a: int, b: int) -> int"), std::string::npos) << all;
}

TEST_F(SandboxFunctionsTest, ToolErrorsAreRaisedWithTheServersMessage) {
  SandboxFunctions tools(options());
  auto r = run(tools,
               "try:\n"
               "    fail(message='the server refuses')\n"
               "except ToolError as e:\n"
               "    print('caught:', e)\n"
               "host_mul(a='x', b=1)\n");
  EXPECT_NE(r.stdout_text.find("caught: "), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("the server refuses"), std::string::npos) << r.stdout_text;
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->type, "ToolError");
  EXPECT_NE(r.error->message.find("argument 'a' must be int"), std::string::npos)
      << r.error->message;
}

TEST_F(SandboxFunctionsTest, ImagesComeBackAsFilesInTheOutputFolder) {
  SandboxFunctions tools(options());
  auto r = run(tools,
               "import os\n"
               "path = image()\n"
               "print(path.startswith('/output/mcp/image-'), path.endswith('.png'), open(path, "
               "'rb').read()[:4])\n");
  EXPECT_TRUE(r.ok) << (r.error ? r.error->message + r.error->traceback : "");
  EXPECT_EQ(r.stdout_text, "True True b'\\x89PNG'\n");
}

TEST_F(SandboxFunctionsTest, NoCredentialReachesTheSandboxOrThePrompt) {
  SandboxFunctions tools(options());
  auto r = run(tools,
               "import os, json\n"
               "print(get_current_time(timezone='UTC')['timezone'])\n"
               "print(json.dumps(dict(os.environ)))\n"
               "print(open('/proc/self/environ','rb').read().decode(errors='replace'))\n");
  EXPECT_TRUE(r.ok) << (r.error ? r.error->message : "");
  EXPECT_EQ(r.stdout_text.find(env_secret_), std::string::npos);
  EXPECT_EQ(r.stdout_text.find(header_secret_), std::string::npos);
  auto inspect =
      core::run_process({"docker", "inspect", sandbox::SandboxManager::container_name(id_)}, 30s);
  ASSERT_TRUE(inspect.ok()) << inspect.error().to_string();
  ASSERT_EQ(inspect->exit_code, 0) << inspect->stderr_text;
  EXPECT_NE(inspect->stdout_text.find("codeact-" + id_), std::string::npos);
  EXPECT_EQ(inspect->stdout_text.find(env_secret_), std::string::npos);
  EXPECT_EQ(inspect->stdout_text.find(header_secret_), std::string::npos);
  auto fns = tools.tools_as_func(*manager_, id_);
  ASSERT_TRUE(fns.ok());
  for (const auto& f : *fns) {
    EXPECT_EQ(f.find(env_secret_), std::string::npos);
    EXPECT_EQ(f.find(header_secret_), std::string::npos);
  }
}

TEST_F(SandboxFunctionsTest, PythonFunctionsFromIndentedSourceWithAsyncAndImports) {
  SandboxFunctionsOptions o;
  o.python_functions.push_back(
      PythonFunctionSource::from_string("    import json\n"
                                        "    import numpy as np\n"
                                        "\n"
                                        "    async def double_later(x: int) -> int:\n"
                                        "        \"\"\"Doubles x, asynchronously.\"\"\"\n"
                                        "        import asyncio\n"
                                        "        await asyncio.sleep(0)\n"
                                        "        return x * 2\n"
                                        "\n"
                                        "    def mean(values: list[float]) -> float:\n"
                                        "        \"\"\"Mean of values.\"\"\"\n"
                                        "        def inner(v):\n"
                                        "            return float(np.mean(v))\n"
                                        "        return inner(values)\n",
                                        "helpers.py"));
  SandboxFunctions tools(o);
  auto r = run(tools,
               "import asyncio\n"
               "async def main():\n"
               "    return double_later(5)\n"
               "print(double_later(21), mean([1, 2, 3]), asyncio.run(main()))\n");
  EXPECT_TRUE(r.ok) << (r.error ? r.error->message + r.error->traceback : "");
  EXPECT_EQ(r.stdout_text, "42 2.0 10\n");
  auto fns = tools.functions(*manager_, id_);
  ASSERT_TRUE(fns.ok()) << fns.error().to_string();
  ASSERT_EQ(fns->size(), 2u);
  EXPECT_EQ((*fns)[0].signature, "def double_later(x: int) -> int");
  EXPECT_EQ((*fns)[0].doc, "Doubles x, asynchronously.");
  EXPECT_EQ((*fns)[0].origin, "python:helpers.py");
  // Kernel-provided: not user variables, and still there after a clear.
  ASSERT_TRUE(manager_->clear(id_).ok());
  auto again = run(tools, "print(mean([4.0]))\n");
  EXPECT_EQ(again.stdout_text, "4.0\n");
}

TEST_F(SandboxFunctionsTest, FunctionsComeBackAfterTheKernelRestarts) {
  SandboxFunctions tools(options());
  ASSERT_TRUE(run(tools, "x = host_mul(2, 3)\n").ok);
  ASSERT_TRUE(manager_->restart(id_).ok());
  auto r = run(tools, "print(x, host_mul(3, 3), add(a=1))\n");
  EXPECT_TRUE(r.ok) << (r.error ? r.error->message : "");
  EXPECT_EQ(r.stdout_text, "6 9 2\n");
}

TEST_F(SandboxFunctionsTest, ToolsAddedByTheServerAreCallableFromTheNextCell) {
  SandboxFunctions tools(options());
  auto first = run(tools, "print(grow())\n");
  ASSERT_TRUE(first.ok) << (first.error ? first.error->message : "");
  std::string name = first.stdout_text.substr(0, first.stdout_text.find('\n'));
  ASSERT_EQ(name.rfind("extra_", 0), 0u) << first.stdout_text;
  // notifications/tools/list_changed may arrive just after the answer.
  for (int i = 0; i < 50; ++i) {
    auto fns = tools.bridged_functions();
    ASSERT_TRUE(fns.ok());
    bool found = false;
    for (const auto& f : *fns) found = found || f.name == name;
    if (found) break;
    std::this_thread::sleep_for(20ms);
  }
  auto second = run(tools, "print(" + name + "())\n");
  EXPECT_TRUE(second.ok) << (second.error ? second.error->message : "");
  EXPECT_EQ(second.stdout_text, name + "\n");
}

TEST_F(SandboxFunctionsTest, MissingPackagesInASandboxWithoutNetworkFailClearly) {
  SandboxFunctionsOptions o;
  o.python_functions.push_back(PythonFunctionSource::from_string(
      "import sklearn\n\ndef fit():\n    return sklearn.__version__\n", "ml.py"));
  SandboxFunctions tools(o);
  auto r = tools.prepare(*manager_, id_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kFailedPrecondition) << r.error().to_string();
  EXPECT_NE(r.error().message().find("sklearn (scikit-learn)"), std::string::npos)
      << r.error().message();
}

TEST_F(SandboxFunctionsTest, NamesOfferedTwiceAreRefused) {
  SandboxFunctionsOptions o = options();
  o.host_functions.push_back(host_function("echo", {"text"}, "", [](std::string t) { return t; }));
  SandboxFunctions tools(o);
  auto r = tools.bridged_functions();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("'echo'"), std::string::npos);
  EXPECT_NE(r.error().message().find("fixture"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace codeact::functions
