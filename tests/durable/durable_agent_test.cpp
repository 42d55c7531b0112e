// The workflow side of the durable agent without a server or Docker: the durable wrappers
// (DurableModel, DurableToolset, ActivityRunSteps) reach the worker's activities in-process
// (in_process_caller.hpp), which serve the ONE binding of the agent against the in-memory sandbox
// backend. What a user would notice: the agent's own model answers (not the worker's default),
// the model is told the same things as in direct mode, the sandbox goes through the same steps,
// tool calls reach the toolset they name, a cancel stops before the next model request.
#include "codeact/durable/durable_agent.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <set>

#include "../support/fake_sandbox_backend.hpp"
#include "../support/scripted_agent.hpp"
#include "codeact/durable/activities.hpp"
#include "codeact/temporal/failure.hpp"
#include "in_process_caller.hpp"

namespace codeact::durable {
namespace {

using ::codeact::testing::FakeSandboxBackend;
using ::codeact::testing::RecordingModel;
using ::codeact::testing::ScriptedAgent;
using testing::InProcessCaller;

codeact::AgentBuilder test_builder() {
  codeact::AgentBuilder b;
  auto book = agent::PromptBook::parse(R"(simple_agent:
  system_prompt: "You work in sandbox {{ container_id }}."
  instructions: "Variables: {% for n in sandbox_variable_names %}{{ n }} {% endfor %}files: {{ sandbox_files | join(', ') }}"
)");
  EXPECT_TRUE(book.ok()) << book.error().to_string();
  b.prompts = std::make_shared<const agent::PromptBook>(std::move(*book));
  b.env = [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
  return b;
}

// A sandbox whose cell `x = 6 * 7` defines x and writes /output/answer.txt.
std::shared_ptr<FakeSandboxBackend> scripted_sandbox() {
  auto backend = std::make_shared<FakeSandboxBackend>();
  backend->on_execute = [](FakeSandboxBackend::Sandbox& s, const sandbox::ExecuteRequest& req) {
    sandbox::ExecuteResult r;
    r.ok = true;
    if (req.code.find("x = 6 * 7") != std::string::npos) {
      s.variables["x"] = {"int", "42", 42};
      s.files["/output/answer.txt"] = {"42\n", 5000};
      r.result = "42";
      r.files = {"/output/answer.txt"};
    }
    return core::Result<sandbox::ExecuteResult>(r);
  };
  return backend;
}

std::vector<llm::ModelResponse> two_turns() {
  return {RecordingModel::python_call("call_1", "x = 6 * 7\nx"), RecordingModel::text("It is 42.")};
}

// The durable run of one task, in-process.
struct DurableRun {
  std::shared_ptr<FakeSandboxBackend> backend = scripted_sandbox();
  std::shared_ptr<WorkerEnv> env = std::make_shared<WorkerEnv>();
  std::unique_ptr<CodeActActivities> activities;
  std::unique_ptr<InProcessCaller> caller;

  explicit DurableRun(std::shared_ptr<codeact::CodeActAgent> agent) {
    env->builder = test_builder();
    env->backend = backend;
    env->agents[agent->name()] = std::move(agent);
    activities = std::make_unique<CodeActActivities>(env);
    caller = std::make_unique<InProcessCaller>(*activities);
  }

  codeact::TaskRunOutcome run(const std::string& agent_name, const std::string& task) {
    AgentTarget target;
    target.agent = agent_name;
    ActivityRunSteps steps(*caller, target, ActivityPolicies{});
    codeact::SandboxPlan plan;
    plan.sandbox_id = "s1";
    codeact::SandboxRun run(steps, plan);
    agent::RunOptions ro;
    ro.run_id = "wf-1/run-1";
    ro.deps = Json{{"sandbox_id", "s1"}};
    agent::RunLoop loop;
    return loop.run(codeact::run_task_in_sandbox(run, task, ro, [this] { return caller->cancel; }));
  }
};

TEST(DurableAgent, RunsTheAgentsOwnModelThroughTheSameSandboxSteps) {
  auto model = std::make_shared<RecordingModel>(two_turns());
  DurableRun d(std::make_shared<ScriptedAgent>("simple_agent", model));
  codeact::TaskRunOutcome out = d.run("simple_agent", "What is 6 times 7?");
  ASSERT_TRUE(out.run.ok()) << out.run.error().to_string();
  EXPECT_EQ(out.run->output_text(), "It is 42.");
  EXPECT_EQ(out.files, std::vector<std::string>{"/output/answer.txt"});
  EXPECT_EQ(out.model_name, "function:scripted") << "the name of the model the agent's hook gave";
  EXPECT_TRUE(out.closed.ok());
  // The activities of a task run, in the order the recorded histories have them.
  EXPECT_EQ(
      d.caller->scheduled,
      (std::vector<std::string>{kSandboxStartActivity, kAgentPrepareActivity, kSandboxFilesActivity,
                                kModelRequestActivity, kToolCallActivity, kModelRequestActivity,
                                kSandboxFilesActivity, kSandboxFinishActivity}));
  // The agent's model answered both requests; the instructions were rendered on the worker from
  // the sandbox as it was at each request.
  auto requests = model->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].instructions, "Variables: files: ");
  EXPECT_EQ(requests[1].instructions, "Variables: x files: /output/answer.txt");
  EXPECT_NE(requests[0].messages.dump().find("You work in sandbox s1."), std::string::npos);
  // The cell ran once, with the call's execution id; the sandbox was stopped at the end.
  auto cells = d.backend->calls_of("execute");
  ASSERT_EQ(cells.size(), 1u);
  EXPECT_EQ(cells[0].args["execution_id"], "wf-1/run-1/1/call_1");
  EXPECT_FALSE(d.backend->with("s1", [](auto& s) { return s.running; }));
  // The recorded conversation has the instructions the model was told.
  EXPECT_EQ(std::get<llm::ModelRequest>(out.run->messages[2]).instructions,
            "Variables: x files: /output/answer.txt");
}

TEST(DurableAgent, TellsTheModelExactlyWhatDirectModeTellsIt) {
  auto direct_model = std::make_shared<RecordingModel>(two_turns());
  ScriptedAgent direct_agent("simple_agent", direct_model);
  codeact::CodeActRunOptions options;
  options.sandbox_id = "s1";
  options.run_id = "wf-1/run-1";
  auto direct =
      direct_agent.run_direct("What is 6 times 7?", test_builder(), scripted_sandbox(), options);
  ASSERT_TRUE(direct.ok()) << direct.error().to_string();

  auto durable_model = std::make_shared<RecordingModel>(two_turns());
  DurableRun d(std::make_shared<ScriptedAgent>("simple_agent", durable_model));
  codeact::TaskRunOutcome durable = d.run("simple_agent", "What is 6 times 7?");
  ASSERT_TRUE(durable.run.ok()) << durable.run.error().to_string();

  auto a = direct_model->requests();
  auto b = durable_model->requests();
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i].messages, a[i].messages) << "request " << i;
    EXPECT_EQ(b[i].params, a[i].params) << "request " << i << ": the tools and output offered";
    EXPECT_EQ(b[i].settings, a[i].settings) << "request " << i;
    EXPECT_EQ(b[i].instructions, a[i].instructions) << "request " << i;
  }
  EXPECT_EQ(durable.run->output_text(), direct->output.message);
  EXPECT_EQ(durable.files, direct->output.file_paths);
  EXPECT_EQ(durable.model_name, direct->model_name);
}

// An agent with a toolset of its own besides the sandbox's.
class MathAgent final : public ScriptedAgent {
 public:
  using ScriptedAgent::ScriptedAgent;
  std::vector<std::shared_ptr<agent::Toolset>> toolsets(
      const codeact::AgentBuilder&) const override {
    std::vector<agent::Tool> tools{agent::Tool::from_schema(
        "add", "Adds two integers.",
        Json{{"type", "object"},
             {"properties", {{"a", {{"type", "integer"}}}, {"b", {{"type", "integer"}}}}},
             {"required", {"a", "b"}}},
        [](const Json& args, const agent::RunContext&) -> agent::ToolResult {
          return agent::ToolOutcome{
              agent::ToolReturn{args["a"].get<int>() + args["b"].get<int>(), std::nullopt}};
        })};
    return {std::make_shared<agent::FunctionToolset>(std::move(tools), "math")};
  }
};

TEST(DurableToolsetTest, CallsReachTheToolsetTheyNameById) {
  auto model = std::make_shared<RecordingModel>(std::vector<llm::ModelResponse>{
      RecordingModel::tool_call("c1", "add", Json{{"a", 2}, {"b", 3}}), RecordingModel::text("5")});
  DurableRun d(std::make_shared<MathAgent>("simple_agent", model));
  codeact::TaskRunOutcome out = d.run("simple_agent", "2 + 3?");
  ASSERT_TRUE(out.run.ok()) << out.run.error().to_string();
  EXPECT_EQ(out.run->output_text(), "5");
  // Both toolsets were offered; the call went to "math" on the worker.
  const auto requests = model->requests();
  ASSERT_EQ(requests.size(), 2u);
  std::vector<std::string> offered;
  for (const auto& t : requests[0].params["function_tools"]) offered.push_back(t["name"]);
  EXPECT_NE(std::find(offered.begin(), offered.end(), "add"), offered.end());
  EXPECT_NE(std::find(offered.begin(), offered.end(), "execute_python"), offered.end());
  Json call_input;
  for (size_t i = 0; i < d.caller->scheduled.size(); ++i) {
    if (d.caller->scheduled[i] == kToolCallActivity) call_input = d.caller->inputs[i];
  }
  EXPECT_EQ(call_input["toolset"], "math");
  EXPECT_NE(requests[1].messages.dump().find("\"content\":5"), std::string::npos)
      << requests[1].messages.dump();
}

// A toolset that gains a tool after it was first listed, and whose tools note whether they were
// given the conversation: what durable mode promises a toolset (durable_agent.hpp).
struct ShiftyState {
  int listed = 0;
  std::vector<bool> had_messages;
};
class ShiftyToolset final : public agent::Toolset {
 public:
  explicit ShiftyToolset(std::shared_ptr<ShiftyState> state) : state_(std::move(state)) {
    auto tool = [this](const std::string& name) {
      return agent::Tool::from_schema(
          name, "Notes the call.", Json{{"type", "object"}, {"properties", Json::object()}},
          [this](const Json&, const agent::RunContext& ctx) -> agent::ToolResult {
            state_->had_messages.push_back(ctx.messages != nullptr);
            return agent::ToolOutcome{agent::ToolReturn{"noted", std::nullopt}};
          });
    };
    first_ =
        std::make_shared<agent::FunctionToolset>(std::vector<agent::Tool>{tool("tick")}, "shifty");
    later_ = std::make_shared<agent::FunctionToolset>(
        std::vector<agent::Tool>{tool("tick"), tool("tock")}, "shifty");
  }
  std::string id() const override { return "shifty"; }
  agent::Task<core::Result<std::vector<agent::ToolInfo>>> get_tools(
      const agent::RunContext& ctx) override {
    return ++state_->listed == 1 ? first_->get_tools(ctx) : later_->get_tools(ctx);
  }
  agent::Task<agent::ToolResult> call_tool(const agent::ToolCall& call,
                                           const agent::RunContext& ctx) override {
    return later_->call_tool(call, ctx);
  }

 private:
  std::shared_ptr<ShiftyState> state_;
  std::shared_ptr<agent::FunctionToolset> first_, later_;
};
class ShiftyAgent final : public ScriptedAgent {
 public:
  ShiftyAgent(std::shared_ptr<RecordingModel> model, std::shared_ptr<ShiftyState> state)
      : ScriptedAgent("simple_agent", std::move(model)), state_(std::move(state)) {}
  std::vector<std::shared_ptr<agent::Toolset>> toolsets(
      const codeact::AgentBuilder&) const override {
    return {std::make_shared<ShiftyToolset>(state_)};
  }

 private:
  std::shared_ptr<ShiftyState> state_;
};

TEST(DurableToolsetTest, ToolsAreListedOncePerRunAndACallGetsNoConversation) {
  auto state = std::make_shared<ShiftyState>();
  auto model = std::make_shared<RecordingModel>(std::vector<llm::ModelResponse>{
      RecordingModel::tool_call("c1", "tick", Json::object()),
      RecordingModel::tool_call("c2", "tock", Json::object()), RecordingModel::text("done")});
  DurableRun d(std::make_shared<ShiftyAgent>(model, state));
  codeact::TaskRunOutcome out = d.run("simple_agent", "tick, then tock");
  ASSERT_TRUE(out.run.ok()) << out.run.error().to_string();
  EXPECT_EQ(std::count(d.caller->scheduled.begin(), d.caller->scheduled.end(),
                       std::string(kAgentPrepareActivity)),
            1);
  // "tock", which the toolset only had after its first listing, was never offered: the call
  // went back to the model, and no activity ran it.
  const auto requests = model->requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const auto& r : requests) {
    EXPECT_EQ(r.params.dump().find("\"tock\""), std::string::npos) << r.params.dump();
  }
  EXPECT_NE(requests[2].messages.dump().find("Unknown tool name: 'tock'"), std::string::npos)
      << requests[2].messages.dump();
  EXPECT_EQ(std::count(d.caller->scheduled.begin(), d.caller->scheduled.end(),
                       std::string(kToolCallActivity)),
            1);
  // The one call ran on the worker without the conversation.
  EXPECT_EQ(state->had_messages, std::vector<bool>{false});
}

class ClashingAgent final : public ScriptedAgent {
 public:
  using ScriptedAgent::ScriptedAgent;
  std::vector<std::shared_ptr<agent::Toolset>> toolsets(
      const codeact::AgentBuilder&) const override {
    return {std::make_shared<agent::FunctionToolset>(std::vector<agent::Tool>{}, "sandbox")};
  }
};

TEST(DurableToolsetTest, ToolsetsWithOneIdCannotBeBoundAndAnUnknownIdIsNotFound) {
  auto model = std::make_shared<RecordingModel>(two_turns());
  DurableRun clash(std::make_shared<ClashingAgent>("simple_agent", model));
  AgentPrepareInput in;
  in.target.agent = "simple_agent";
  in.target.bind.sandbox_id = "s1";
  auto prepared = clash.activities->agent_prepare(in);
  ASSERT_FALSE(prepared.ok());
  EXPECT_EQ(prepared.error().code(), core::Code::kInvalidArgument);
  EXPECT_NE(prepared.error().message().find("two toolsets have the id \"sandbox\""),
            std::string::npos);

  DurableRun d(std::make_shared<ScriptedAgent>("simple_agent", model));
  ASSERT_TRUE(d.backend->start(sandbox::SandboxOptions{.id = "s1"}).ok());
  ToolCallInput call;
  call.target = in.target;
  call.toolset = "web";
  call.call = agent::ToolCall{"search", Json::object(), "c1"};
  auto r = d.activities->tool_call(call);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kNotFound);
  EXPECT_NE(r.error().message().find("no toolset \"web\""), std::string::npos)
      << r.error().message();
}

TEST(DurableModelTest, ACancelStopsBeforeTheNextModelRequestAndRemovesTheContainer) {
  auto model = std::make_shared<RecordingModel>(two_turns());
  DurableRun d(std::make_shared<ScriptedAgent>("simple_agent", model));
  d.caller->cancel = true;
  codeact::TaskRunOutcome out = d.run("simple_agent", "anything");
  ASSERT_FALSE(out.run.ok());
  EXPECT_EQ(out.run.error().code(), core::Code::kCancelled);
  EXPECT_TRUE(out.cancelled);
  EXPECT_TRUE(model->requests().empty());
  EXPECT_EQ(d.caller->scheduled,
            (std::vector<std::string>{kSandboxStartActivity, kAgentPrepareActivity,
                                      kSandboxFilesActivity, kSandboxFinishActivity}));
  EXPECT_EQ(d.caller->inputs.back()["mode"], "remove");
}

TEST(DurableActivitiesTest, AMalformedPayloadIsANonRetryableFailureNamingTheKey) {
  auto model = std::make_shared<RecordingModel>(two_turns());
  DurableRun d(std::make_shared<ScriptedAgent>("simple_agent", model));
  auto r = d.activities->call(kToolCallActivity, Json{{"agent", "simple_agent"},
                                                      {"sandbox_id", "s1"},
                                                      {"toolz", "sandbox"},
                                                      {"call", {{"tool_name", "list_files"}}},
                                                      {"ctx", Json::object()}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kInvalidArgument);
  EXPECT_NE(r.error().message().find("unknown key \"toolz\""), std::string::npos)
      << r.error().message();
  EXPECT_TRUE(temporal::Failure::from_error(r.error()).non_retryable)
      << "Temporal does not retry it";

  auto wrong_type =
      d.activities->call(kSandboxStartActivity, Json{{"sandbox_id", "s1"}, {"network", "yes"}});
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.error().message().find("\"network\" must be true or false, got \"yes\""),
            std::string::npos)
      << wrong_type.error().message();
  EXPECT_FALSE(d.backend->exists("s1")) << "nothing ran";

  auto missing = d.activities->call(kSandboxFinishActivity, Json{{"sandbox_id", "s1"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("\"mode\" is required"), std::string::npos)
      << missing.error().message();
}

TEST(DurableActivitiesTest, ASandboxStartedForAWorkflowThatEndedMeanwhileIsRemoved) {
  auto model = std::make_shared<RecordingModel>(two_turns());
  DurableRun d(std::make_shared<ScriptedAgent>("simple_agent", model));
  std::set<std::string> ended = {"wf-deleted"};
  std::vector<std::string> asked;
  d.env->workflow_ended = [&](const std::string& id) {
    asked.push_back(id);
    return ended.count(id) > 0;
  };

  auto live = d.activities->call(kSandboxStartActivity, Json{{"sandbox_id", "s1"}}, "wf-live");
  ASSERT_TRUE(live.ok()) << live.error().to_string();
  EXPECT_TRUE(d.backend->with("s1", [](auto& s) { return s.running; })) << "its workflow runs";

  auto orphan = d.activities->call(kSandboxStartActivity, Json{{"sandbox_id", "s2"}}, "wf-deleted");
  ASSERT_FALSE(orphan.ok());
  EXPECT_EQ(orphan.error().code(), core::Code::kFailedPrecondition);
  EXPECT_NE(orphan.error().message().find("ended while its sandbox started"), std::string::npos)
      << orphan.error().message();
  ASSERT_TRUE(d.backend->exists("s2")) << "the volume is kept";
  EXPECT_FALSE(d.backend->with("s2", [](auto& s) { return s.running; }))
      << "no container is left running for a workflow that is gone";
  EXPECT_EQ(asked, (std::vector<std::string>{"wf-live", "wf-deleted"}));

  // A start that fails part-way leaves a container (here: an earlier attempt's, its kernel not
  // up); once the workflow is gone, the failing retry removes it rather than leave it running.
  ASSERT_TRUE(
      d.activities->call(kSandboxStartActivity, Json{{"sandbox_id", "s3"}}, "wf-gone").ok());
  ended.insert("wf-gone");
  d.backend->fail_next("start", core::unavailable("the kernel did not come up"), "s3");
  auto failed = d.activities->call(kSandboxStartActivity, Json{{"sandbox_id", "s3"}}, "wf-gone");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code(), core::Code::kFailedPrecondition)
      << "not retried: " << failed.error().to_string();
  EXPECT_NE(failed.error().message().find("the kernel did not come up"), std::string::npos)
      << failed.error().message();
  EXPECT_FALSE(d.backend->with("s3", [](auto& s) { return s.running; }))
      << "the failed start's container is not left running";
}

TEST(DurableActivitiesTest, DockerTroubleIsRetriedAndTheModelsMistakesGoBackToIt) {
  auto model = std::make_shared<RecordingModel>(two_turns());
  DurableRun d(std::make_shared<ScriptedAgent>("simple_agent", model));
  ASSERT_TRUE(d.backend->start(sandbox::SandboxOptions{.id = "s1"}).ok());
  ToolCallInput call;
  call.target.agent = "simple_agent";
  call.target.bind.sandbox_id = "s1";
  call.call = agent::ToolCall{"read_file", Json{{"path", "/output/none.txt"}}, "c1"};
  auto missing = d.activities->tool_call(call);
  ASSERT_TRUE(missing.ok()) << missing.error().to_string();
  ASSERT_TRUE(missing->ok());
  EXPECT_TRUE(std::holds_alternative<agent::ModelRetry>(**missing))
      << "the model may pick another file";
  d.backend->fail_next("read_file", core::unavailable("Docker did not answer"));
  auto down = d.activities->tool_call(call);
  ASSERT_FALSE(down.ok()) << "an activity failure, which Temporal retries";
  EXPECT_EQ(down.error().code(), core::Code::kUnavailable);
}

TEST(DurableActivitiesTest, ToolCallPublishesACellsOutputUnderItsWorkflowWhileTheCellRuns) {
  auto model = std::make_shared<RecordingModel>(two_turns());
  DurableRun d(std::make_shared<ScriptedAgent>("simple_agent", model));
  d.env->live_output = std::make_shared<LiveOutput>();
  std::mutex mu;
  std::condition_variable cv;
  std::vector<LiveChunk> seen;
  auto sub = d.env->live_output->subscribe("wf-1", [&](const LiveChunk& c) {
    std::lock_guard lock(mu);
    seen.push_back(c);
    cv.notify_all();
  });
  // The cell prints a line, then goes on only once the subscriber has had it (or 5 s passed).
  bool seen_while_running = false;
  d.backend->on_execute = [&](FakeSandboxBackend::Sandbox&, const sandbox::ExecuteRequest& req) {
    EXPECT_TRUE(req.on_output) << "the activity asks for live output";
    if (req.on_output) req.on_output("stdout", "working\n");
    std::unique_lock lock(mu);
    seen_while_running = cv.wait_for(lock, std::chrono::seconds(5), [&] { return !seen.empty(); });
    sandbox::ExecuteResult r;
    r.ok = true;
    r.stdout_text = "working\n";
    return core::Result<sandbox::ExecuteResult>(r);
  };
  ASSERT_TRUE(d.backend->start(sandbox::SandboxOptions{.id = "s1"}).ok());
  ToolCallInput call;
  call.target.agent = "simple_agent";
  call.target.bind.sandbox_id = "s1";
  call.call = agent::ToolCall{"execute_python", Json{{"code", "print('working')"}}, "call_1"};
  call.ctx.run_id = "wf-1/run-1";
  call.ctx.run_step = 1;
  call.ctx.tool_call_id = "call_1";
  auto r = d.activities->call(kToolCallActivity, call.to_json(), "wf-1");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_TRUE(seen_while_running) << "the subscriber had the line before the cell ended";
  std::lock_guard lock(mu);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], (LiveChunk{"wf-1", "wf-1/run-1", 1, "call_1", "stdout", "working\n", 0}));

  // Without a workflow id (or without a hub) nothing is published and the kernel is not asked
  // to stream.
  d.backend->on_execute = [&](FakeSandboxBackend::Sandbox&, const sandbox::ExecuteRequest& req) {
    EXPECT_FALSE(req.on_output);
    return core::Result<sandbox::ExecuteResult>(sandbox::ExecuteResult{.ok = true});
  };
  call.call.tool_call_id = call.ctx.tool_call_id = "call_2";
  ASSERT_TRUE(d.activities->tool_call(call).ok());
}

TEST(DurableActivitiesTest, AModelRequestForASandboxOfAnotherHostIsRefusedBeforeTheModelIsAsked) {
  auto model = std::make_shared<RecordingModel>(two_turns());
  DurableRun d(std::make_shared<ScriptedAgent>("simple_agent", model));
  d.env->host_id = "h1";
  codeact::SandboxPlan plan;
  plan.sandbox_id = "s1";
  ASSERT_TRUE(d.activities->sandbox_start(SandboxStartInput{plan}).ok());
  ModelRequestInput in;
  in.target.agent = "simple_agent";
  in.target.bind.sandbox_id = "s1";
  in.messages = {llm::ModelRequest::user_prompt("What is 6 times 7?")};
  in.sandbox_host = "h2";
  try {
    (void)d.activities->call(kModelRequestActivity, in.to_json());
    ADD_FAILURE() << "a worker of h1 rendered instructions of a sandbox on h2";
  } catch (const temporal::ApplicationError& e) {
    EXPECT_EQ(e.failure().type, kSandboxElsewhereType);
    EXPECT_TRUE(e.failure().non_retryable);
    EXPECT_NE(e.failure().message.find("\"h2\""), std::string::npos) << e.failure().message;
  }
  EXPECT_TRUE(model->requests().empty());
  // On its own host it is answered.
  in.sandbox_host = "h1";
  auto answered = d.activities->call(kModelRequestActivity, in.to_json());
  ASSERT_TRUE(answered.ok()) << answered.error().to_string();
  EXPECT_EQ(model->requests().size(), 1u);
}

}  // namespace
}  // namespace codeact::durable
