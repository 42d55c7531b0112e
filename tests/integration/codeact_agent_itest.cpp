// The CodeAct agent end to end in direct mode: a local server speaking the OpenAI chat-completions
// protocol plays the model through a scripted trajectory, cells run in a real sandbox (Docker),
// and the test checks what a user would notice — the answer, the file in the volume, what the
// model was told after a failing cell, a bad tool call, an unknown tool, and a usage limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "codeact/codeact/codeact_agent.hpp"
#include "codeact/codeact/sandbox_tools.hpp"
#include "codeact/sandbox/docker_client.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"
#include "fake_provider_server.hpp"
#include "openai_script.hpp"

namespace codeact::codeact {
namespace {

using core::Json;
using llm::testing::FakeProviderServer;
using llm::testing::json_response;
using namespace ::codeact::testing;

std::string unique_id(const std::string& prefix) {
  std::random_device rd;
  return prefix + "-" + std::to_string(rd() % 1000000);
}

class CodeActAgentTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto docker = sandbox::DockerClient::create();
    ASSERT_TRUE(docker.ok()) << docker.error().message();
    ASSERT_TRUE((*docker)->ping().ok()) << "Docker is needed for this test";
    manager_ = std::make_shared<sandbox::SandboxManager>(*docker);
  }
  static void TearDownTestSuite() { manager_.reset(); }

  void TearDown() override {
    for (const auto& id : sandboxes_) (void)manager_->remove(id, /*volume=*/true);
  }

  AgentBuilder builder(const FakeProviderServer& server) {
    auto b = AgentBuilder::load(std::string(CODEACT_SOURCE_DIR) + "/config/agent_prompts.yml",
                                std::string(CODEACT_SOURCE_DIR) + "/config/app_conf.yml");
    EXPECT_TRUE(b.ok()) << b.error().message();
    b->model = "openai-compatible:scripted@" + server.base_url("/v1");
    return std::move(*b);
  }

  std::string new_sandbox(const std::string& prefix) {
    sandboxes_.push_back(unique_id(prefix));
    return sandboxes_.back();
  }

  static std::shared_ptr<sandbox::SandboxManager> manager_;
  std::vector<std::string> sandboxes_;
};
std::shared_ptr<sandbox::SandboxManager> CodeActAgentTest::manager_;

TEST_F(CodeActAgentTest, ScriptedTrajectoryWritesACsvRecoversFromErrorsAndAnswers) {
  FakeProviderServer server;
  server.enqueue(
      json_response(python_call("call_csv",
                                "import csv\n"
                                "rows = [(n, n * n) for n in range(1, 6)]\n"
                                "with open('/output/squares.csv', 'w', newline='') as f:\n"
                                "    w = csv.writer(f)\n"
                                "    w.writerow(['n', 'square'])\n"
                                "    w.writerows(rows)\n"
                                "total = sum(s for _, s in rows)\n"
                                "total")));
  // A call whose arguments are not JSON, and a tool that does not exist.
  server.enqueue(
      json_response(calls({tool_call("call_bad_json", "execute_python", "{\"code\": \"print(1)"),
                           tool_call("call_unknown", "run_shell", "{\"cmd\": \"ls\"}")})));
  server.enqueue(json_response(python_call("call_raise",
                                           "def check(t):\n"
                                           "    raise ValueError(f'total {t} is odd')\n"
                                           "check(total)")));
  server.enqueue(json_response(
      python_call("call_fixed", "summary = f'sum of squares 1..5 = {total}'\nprint(summary)")));
  server.enqueue(json_response(
      text_answer("The sum of the squares of 1..5 is 55; the table is in /output/squares.csv.")));

  CodeActRunOptions options;
  options.sandbox_id = new_sandbox("itest-agent");
  std::vector<std::string> events;
  options.on_event = [&](const agent::AgentEvent& e) { events.push_back(agent::event_kind(e)); };
  SimpleAgent agent;
  auto result =
      agent.run_direct("Tabulate n and n^2 for n = 1..5 into a CSV and tell me the sum of squares.",
                       builder(server), manager_, options);
  ASSERT_TRUE(result.ok()) << result.error().message();

  // The answer and the produced file, filled by codeact.
  EXPECT_EQ(result->output.message,
            "The sum of the squares of 1..5 is 55; the table is in /output/squares.csv.");
  EXPECT_EQ(result->output.container_id, options.sandbox_id);
  EXPECT_EQ(result->output.file_paths, std::vector<std::string>{"/output/squares.csv"});
  EXPECT_EQ(result->run.usage.requests, 5);
  EXPECT_GE(result->run.tool_calls, 3);
  EXPECT_NE(std::find(events.begin(), events.end(), "tool_call"), events.end());

  // The file is in the sandbox's volume (the sandbox was stopped at the end; reading resumes it).
  auto info = manager_->info(options.sandbox_id);
  ASSERT_TRUE(info.ok()) << info.error().message();
  EXPECT_FALSE(info->running) << "the sandbox is stopped at the end of the run";
  auto csv = manager_->read_file(options.sandbox_id, "/output/squares.csv");
  ASSERT_TRUE(csv.ok()) << csv.error().message();
  EXPECT_NE(csv->find("n,square"), std::string::npos) << *csv;
  EXPECT_NE(csv->find("5,25"), std::string::npos) << *csv;

  ASSERT_EQ(server.request_count(), 5u);
  // Tools offered: the nine sandbox tools, none with a container id.
  Json tools = server.requests()[0].json()["tools"];
  std::vector<std::string> names;
  for (const auto& t : tools) {
    names.push_back(t["function"]["name"].get<std::string>());
    EXPECT_EQ(t["function"]["parameters"].dump().find("container"), std::string::npos) << t.dump();
  }
  auto expected = SandboxTools::tool_names();
  std::sort(names.begin(), names.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(names, expected);

  // Cell 1's value went back to the model; the instructions then showed the new variable and file.
  EXPECT_NE(tool_message(request_messages(server, 1), "call_csv").find("result: 55"),
            std::string::npos);
  std::string first = system_text(request_messages(server, 0));
  EXPECT_NE(first.find("You work in the sandbox " + options.sandbox_id), std::string::npos)
      << first;
  EXPECT_NE(first.find("The sandbox has no variables yet."), std::string::npos) << first;
  std::string second = system_text(request_messages(server, 1));
  EXPECT_NE(second.find("- total: int"), std::string::npos) << second;
  EXPECT_NE(second.find("1. /output/squares.csv"), std::string::npos) << second;

  // Malformed arguments and an unknown tool came back as retry prompts, and the run went on.
  std::string bad_json = tool_message(request_messages(server, 2), "call_bad_json");
  EXPECT_NE(bad_json.find("Fix the errors and try again"), std::string::npos) << bad_json;
  std::string unknown = tool_message(request_messages(server, 2), "call_unknown");
  EXPECT_NE(unknown.find("run_shell"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("execute_python"), std::string::npos)
      << "names the tools that exist: " << unknown;

  // The failing cell's traceback was fed back; the fixed cell's output too.
  std::string raised = tool_message(request_messages(server, 3), "call_raise");
  EXPECT_NE(raised.find("Traceback"), std::string::npos) << raised;
  EXPECT_NE(raised.find("ValueError: total 55 is odd"), std::string::npos) << raised;
  EXPECT_NE(raised.find("check(total)"), std::string::npos) << raised;
  EXPECT_NE(
      tool_message(request_messages(server, 4), "call_fixed").find("sum of squares 1..5 = 55"),
      std::string::npos);
}

TEST_F(CodeActAgentTest, ACellsOutputComesAsToolOutputEventsWhileItRuns) {
  FakeProviderServer server;
  server.enqueue(json_response(python_call("call_live",
                                           "import sys, time\n"
                                           "for i in range(3):\n"
                                           "    print(f'tick {i}')\n"
                                           "    time.sleep(0.7)\n"
                                           "print('careful', file=sys.stderr)\n"
                                           "'done'")));
  server.enqueue(json_response(text_answer("Ticked three times.")));
  struct Seen {
    std::string kind;
    agent::AgentEvent event;
    std::chrono::steady_clock::time_point at;
  };
  std::vector<Seen> seen;
  CodeActRunOptions options;
  options.sandbox_id = new_sandbox("itest-live");
  options.on_event = [&](const agent::AgentEvent& e) {
    seen.push_back({agent::event_kind(e), e, std::chrono::steady_clock::now()});
  };
  SimpleAgent agent;
  auto result = agent.run_direct("Tick.", builder(server), manager_, options);
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ(result->output.message, "Ticked three times.");

  auto at = [&](const std::string& kind) {
    return std::find_if(seen.begin(), seen.end(), [&](const Seen& s) { return s.kind == kind; });
  };
  auto call = at("tool_call");
  auto result_event = at("tool_result");
  ASSERT_NE(call, seen.end());
  ASSERT_NE(result_event, seen.end());
  std::string out, err;
  std::vector<std::chrono::steady_clock::time_point> ticks;
  for (auto it = seen.begin(); it != seen.end(); ++it) {
    if (it->kind != "tool_output") continue;
    EXPECT_GT(it, call) << "output after the call";
    EXPECT_LT(it, result_event) << "output before the result";
    const auto& o = std::get<agent::ToolOutputEvent>(it->event);
    EXPECT_EQ(o.tool_call_id, "call_live");
    EXPECT_EQ(o.run_step, 1);
    (o.stream == "stdout" ? out : err) += o.text;
    if (o.stream == "stdout") ticks.push_back(it->at);
  }
  EXPECT_EQ(out, "tick 0\ntick 1\ntick 2\n");
  EXPECT_EQ(err, "careful\n");
  // Each tick came as it was printed, not all at the end: the first one well before the result.
  ASSERT_FALSE(ticks.empty());
  EXPECT_GE(result_event->at - ticks.front(), std::chrono::milliseconds(1500));
  // The model read the whole output in the result.
  EXPECT_NE(tool_message(request_messages(server, 1), "call_live").find("tick 2"),
            std::string::npos);
}

TEST_F(CodeActAgentTest, UsageLimitEndsTheRunWithAClearErrorAndRemovesTheContainer) {
  FakeProviderServer server;
  server.enqueue(json_response(python_call("call_1", "x = 1")));
  server.enqueue(json_response(python_call("call_2", "x += 1")));
  server.enqueue(json_response(python_call("call_3", "x += 1")));

  CodeActRunOptions options;
  options.sandbox_id = new_sandbox("itest-limit");
  agent::UsageLimits limits;
  limits.request_limit = 2;
  options.usage_limits = limits;
  std::vector<std::string> progress;
  options.on_progress = [&](const std::string& line) { progress.push_back(line); };
  SimpleAgent agent;
  auto result = agent.run_direct("count forever", builder(server), manager_, options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code(), core::Code::kResourceExhausted) << result.error().message();
  EXPECT_NE(result.error().message().find("request_limit"), std::string::npos)
      << result.error().message();
  EXPECT_EQ(server.request_count(), 2u);

  auto info = manager_->info(options.sandbox_id);
  EXPECT_TRUE(!info.ok() || info->status == "missing")
      << "the container is removed after a failed run";
  auto volumes = manager_->list_volumes();
  ASSERT_TRUE(volumes.ok());
  bool kept = false;
  for (const auto& v : *volumes)
    kept = kept || v.name == sandbox::SandboxManager::volume_name(options.sandbox_id);
  EXPECT_TRUE(kept) << "the volume is kept unless asked";
  ASSERT_FALSE(progress.empty());
  EXPECT_NE(progress.back().find("removed"), std::string::npos) << progress.back();
}

// An agent whose cells may call a C++ host function through the SandboxFunctions' bridge.
class AddingAgent final : public CodeActAgent {
 public:
  AddingAgent() : CodeActAgent("simple_agent") {}
  std::vector<functions::HostFunction> host_functions() const override {
    return {functions::host_function("add", {"a", "b"}, "Adds two integers.",
                                     [](int a, int b) { return a + b; })};
  }
};

TEST_F(CodeActAgentTest, CellsCallHostFunctionsAndTheModelSeesTheirSignatures) {
  FakeProviderServer server;
  server.enqueue(json_response(python_call("call_add", "add(2, b=3) * 10")));
  server.enqueue(json_response(text_answer("50")));
  CodeActRunOptions options;
  options.sandbox_id = new_sandbox("itest-host");
  AddingAgent agent;
  auto result = agent.run_direct("add 2 and 3, times ten", builder(server), manager_, options);
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ(result->output.message, "50");
  EXPECT_NE(tool_message(request_messages(server, 1), "call_add").find("result: 50"),
            std::string::npos)
      << tool_message(request_messages(server, 1), "call_add");
  std::string instructions = system_text(request_messages(server, 0));
  EXPECT_NE(instructions.find("def add(a: int, b: int) -> int"), std::string::npos) << instructions;
}

TEST_F(CodeActAgentTest, NoModelConfiguredSaysWhatToSet) {
  AgentBuilder b;
  b.env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  auto name = resolve_model_name(b);
  ASSERT_FALSE(name.ok());
  EXPECT_EQ(name.error().code(), core::Code::kFailedPrecondition);
  EXPECT_NE(name.error().message().find("OPENAI_API_KEY"), std::string::npos)
      << name.error().message();
  b.env = [](const std::string& var) -> std::optional<std::string> {
    return var == "OPENAI_API_KEY" ? std::optional<std::string>("sk-test") : std::nullopt;
  };
  EXPECT_EQ(resolve_model_name(b).value_or(""), "openai:gpt-4.1");
}

class SandboxToolsTest : public CodeActAgentTest {};

agent::ToolResult call(SandboxTools& tools, const std::string& name, Json args,
                       const std::string& call_id, int step = 1) {
  agent::RunContext ctx;
  ctx.run_id = "run-1";
  ctx.run_step = step;
  ctx.tool_name = name;
  ctx.tool_call_id = call_id;
  agent::RunLoop loop;
  ctx.executor = &loop;
  return loop.run(tools.call_tool(agent::ToolCall{name, std::move(args), call_id}, ctx));
}

std::string text_of(const agent::ToolResult& r) {
  if (!r.ok()) return "error: " + r.error().message();
  if (const auto* ret = std::get_if<agent::ToolReturn>(&*r))
    return ret->text.value_or(ret->content.dump());
  return "retry: " + std::get<agent::ModelRetry>(*r).message;
}

TEST_F(SandboxToolsTest, RetriedBashCallNeverRunsTheScriptTwice) {
  std::string id = new_sandbox("itest-bash");
  ASSERT_TRUE(manager_->start(sandbox::SandboxOptions{.id = id}).ok());
  SandboxToolsOptions o;
  o.sandbox_id = id;
  SandboxTools tools(manager_, o);
  Json script{{"script", "echo ran >> runs.log; wc -l < runs.log"}};
  std::string once = text_of(call(tools, "execute_bash", script, "b1"));
  EXPECT_NE(once.find("exit code 0"), std::string::npos) << once;
  EXPECT_NE(once.find("1\n"), std::string::npos) << once;
  // The same call again (a durable retry): the recorded result, the script not run again.
  std::string again = text_of(call(tools, "execute_bash", script, "b1"));
  EXPECT_NE(again.find("already ran"), std::string::npos) << again;
  auto log = manager_->read_file(id, "/output/runs.log");
  ASSERT_TRUE(log.ok()) << log.error().message();
  EXPECT_EQ(*log, "ran\n");
  // Another call runs.
  EXPECT_NE(text_of(call(tools, "execute_bash", script, "b2")).find("2\n"), std::string::npos);
}

TEST_F(SandboxToolsTest, RetriedCallNeverReappliesACellAndTimeoutIsAResult) {
  std::string id = new_sandbox("itest-tools");
  ASSERT_TRUE(manager_->start(sandbox::SandboxOptions{.id = id}).ok());
  SandboxToolsOptions o;
  o.sandbox_id = id;
  o.max_output_bytes = 200;
  SandboxTools tools(manager_, o);

  EXPECT_NE(text_of(call(tools, "execute_python", {{"code", "n = 0"}}, "c1")).find("ran in"),
            std::string::npos);
  std::string once = text_of(call(tools, "execute_python", {{"code", "n += 1\nn"}}, "c2"));
  EXPECT_NE(once.find("result: 1"), std::string::npos) << once;
  // The same call again (a durable retry): the recorded result, nothing re-applied.
  std::string again = text_of(call(tools, "execute_python", {{"code", "n += 1\nn"}}, "c2"));
  EXPECT_NE(again.find("already ran"), std::string::npos) << again;
  EXPECT_NE(again.find("result: 1"), std::string::npos) << again;
  // The same tool_call_id at another step is another call.
  EXPECT_NE(
      text_of(call(tools, "execute_python", {{"code", "n += 1\nn"}}, "c2", 2)).find("result: 2"),
      std::string::npos);

  // Long output is cut, and the cut is reported.
  std::string loud = text_of(call(tools, "execute_python", {{"code", "print('x' * 5000)"}}, "c3"));
  EXPECT_NE(loud.find("bytes omitted"), std::string::npos) << loud;
  EXPECT_LT(loud.size(), 1500u);

  // A timeout is the tool's result, not an error.
  auto slow = call(tools, "execute_python",
                   {{"code", "import time\ntime.sleep(30)"}, {"timeout", 1}}, "c4");
  ASSERT_TRUE(slow.ok()) << slow.error().message();
  ASSERT_TRUE(std::holds_alternative<agent::ToolReturn>(*slow));
  EXPECT_NE(text_of(slow).find("timed out after 1 s"), std::string::npos) << text_of(slow);

  // The other tools, confined to this sandbox.
  EXPECT_NE(text_of(call(tools, "write_file",
                         {{"path", "/output/notes/a.txt"}, {"content", "hello"}}, "c5"))
                .find("wrote 5 bytes"),
            std::string::npos);
  EXPECT_EQ(text_of(call(tools, "read_file", {{"path", "/output/notes/a.txt"}}, "c6")), "hello");
  EXPECT_NE(text_of(call(tools, "list_files", Json::object(), "c7"))
                .find("/output/notes/a.txt (5 bytes)"),
            std::string::npos);
  EXPECT_NE(text_of(call(tools, "list_state_variables", Json::object(), "c8")).find("n: int"),
            std::string::npos);
  EXPECT_NE(text_of(call(tools, "read_state_variable", {{"variable_name", "n"}}, "c9")).find("= 2"),
            std::string::npos);
  EXPECT_NE(text_of(call(tools, "execute_bash", {{"script", "echo hi; exit 3"}}, "c10"))
                .find("exit code 3"),
            std::string::npos);
  EXPECT_EQ(text_of(call(tools, "read_file", {{"path", "/output/missing.txt"}}, "c11"))
                .rfind("retry: ", 0),
            0u);
  EXPECT_EQ(text_of(call(tools, "execute_python", {{"code", 1}}, "c12")).rfind("retry: ", 0), 0u);
  EXPECT_NE(text_of(call(tools, "clear_python_state", Json::object(), "c13")).find("cleared"),
            std::string::npos);
  EXPECT_EQ(text_of(call(tools, "list_state_variables", Json::object(), "c14")), "no variables");
}

TEST_F(SandboxToolsTest, SeedTemplatesRenderWithLiveSandboxVariables) {
  std::string id = new_sandbox("itest-prompt");
  ASSERT_TRUE(manager_->start(sandbox::SandboxOptions{.id = id}).ok());
  ASSERT_TRUE(
      manager_->execute(id, sandbox::ExecuteRequest{.code = "x = 1\ndf = {'a': 1}\n"}).ok());
  ASSERT_TRUE(manager_->write_file(id, "/output/a.txt", "hi").ok());

  // The seed README's two templates, unchanged.
  auto book = agent::PromptBook::parse(R"(simple_agent:
  system_prompt: "You are a Python coding assistant with access to a sandboxed execution environment."
  instructions: |
    You have access to a Docker container (ID: {{ container_id }}) with these packages: {{ python_packages }}.
    Use the execute_python tool to run code and solve the user's task.
data_analysis_agent:
  system_prompt: "You are a data analysis assistant with code execution capabilities."
  instructions: |
    You have access to a Docker sandbox (container: {{ container_id }}).

    Installed packages: {{ python_packages }}
    Current variables: {{ sandbox_variable_names }}
    Files available: {{ sandbox_files }}

    {% if tools_as_func %}
    ## External Tools Available
    {% for func in tools_as_func %}
    {{ func }}
    {% endfor %}
    {% endif %}
    Solve the user's task using the available tools and packages.
)");
  ASSERT_TRUE(book.ok()) << book.error().message();
  auto vars = sandbox_prompt_variables(*manager_, id, nullptr);
  ASSERT_TRUE(vars.ok()) << vars.error().message();
  auto simple = book->render_instructions("simple_agent", vars->to_json());
  ASSERT_TRUE(simple.ok()) << simple.error().message();
  EXPECT_EQ(*simple, "You have access to a Docker container (ID: " + id +
                         ") with these packages: [].\nUse the execute_python tool to run code and "
                         "solve the user's task.");
  auto analysis = book->render_instructions("data_analysis_agent", vars->to_json());
  ASSERT_TRUE(analysis.ok()) << analysis.error().message();
  EXPECT_NE(analysis->find("Current variables: {'df': 'dict', 'x': 'int'}"), std::string::npos)
      << *analysis;
  EXPECT_NE(analysis->find("Files available: ['/output/a.txt']"), std::string::npos) << *analysis;
  EXPECT_EQ(analysis->find("External Tools"), std::string::npos)
      << "tools_as_func is empty without functions";

  // Through the InstructionsFn the agent evaluates per request.
  auto prompt = book->get("data_analysis_agent");
  ASSERT_TRUE(prompt.ok());
  auto fn = sandbox_instructions(*prompt, manager_, id, nullptr);
  agent::RunLoop loop;
  agent::RunContext ctx;
  ctx.executor = &loop;
  auto rendered = loop.run(fn(ctx));
  ASSERT_TRUE(rendered.ok()) << rendered.error().message();
  EXPECT_EQ(*rendered, *analysis);
}

}  // namespace
}  // namespace codeact::codeact
