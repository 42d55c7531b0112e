// One agent, two modes, against the real things: a Temporal dev server, Docker sandboxes, an
// in-process worker. The same agent run with run_direct() and as a CodeActTaskWorkflow must tell
// its model the same things (messages, tools, instructions); an agent whose llm_model hook picks
// its own model must get that model when it runs durably (it used to get the worker's default).
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <random>

#include "../support/scripted_agent.hpp"
#include "codeact/codeact/codeact_agent.hpp"
#include "codeact/durable/live_output.hpp"
#include "codeact/durable/workflows.hpp"
#include "codeact/llm/model_factory.hpp"
#include "codeact/sandbox/docker_client.hpp"
#include "codeact/sandbox/image_builder.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"
#include "dev_server.hpp"
#include "openai_script.hpp"

namespace codeact::durable {
namespace {

using ::codeact::testing::RecordingModel;
using ::codeact::testing::ScriptedAgent;
using llm::testing::json_response;
using temporal::testing::DevServer;

std::string random_hex() {
  std::random_device rd;
  return fmt::format("{:08x}", rd());
}

class DurableModesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto docker = sandbox::DockerClient::create();
    ASSERT_TRUE(docker.ok()) << docker.error().to_string();
    ASSERT_TRUE(sandbox::ImageBuilder(*docker).ensure_image().ok());
    manager_ = std::make_shared<sandbox::SandboxManager>(*docker);
  }
  static void TearDownTestSuite() { manager_.reset(); }
  void TearDown() override {
    if (worker_) worker_->shutdown(std::chrono::seconds(5));
    for (const auto& id : sandboxes_) (void)manager_->remove(id, /*volume=*/true);
  }

  static codeact::AgentBuilder builder() {
    auto b =
        codeact::AgentBuilder::load(std::string(CODEACT_SOURCE_DIR) + "/config/agent_prompts.yml",
                                    std::string(CODEACT_SOURCE_DIR) + "/config/app_conf.yml");
    EXPECT_TRUE(b.ok()) << b.error().message();
    return std::move(*b);
  }

  // A worker for `agent` on a fresh task queue (publishing live output to `live`, when given).
  std::string start_worker(codeact::AgentBuilder b, std::shared_ptr<codeact::CodeActAgent> agent,
                           std::shared_ptr<LiveOutput> live = nullptr) {
    auto env = std::make_shared<WorkerEnv>();
    env->live_output = std::move(live);
    env->builder = std::move(b);
    env->backend = manager_;
    env->agents[agent->name()] = std::move(agent);
    const std::string queue = temporal::testing::unique_name("modes");
    worker_ = std::make_unique<temporal::Worker>(DevServer::client(),
                                                 temporal::WorkerOptions{.task_queue = queue});
    register_codeact(*worker_, env);
    EXPECT_TRUE(worker_->start().ok());
    return queue;
  }

  core::Result<TaskOutput> run_durably(const std::string& queue, const TaskInput& in,
                                       const std::string& workflow_id) {
    auto client = DevServer::client();
    temporal::StartWorkflowOptions so;
    so.id = workflow_id;
    so.task_queue = queue;
    auto started = client.start_workflow(kTaskWorkflow, temporal::Args{in.to_json()}, so);
    if (!started.ok()) return started.error();
    auto result = client.get_result(workflow_id, "", std::chrono::minutes(5));
    if (!result.ok()) return core::internal_error(result.failure().to_string());
    return TaskOutput::from_json(result.value());
  }

  std::string new_sandbox(const std::string& prefix) {
    sandboxes_.push_back(prefix + "-" + random_hex());
    return sandboxes_.back();
  }

  static std::shared_ptr<sandbox::SandboxManager> manager_;
  std::unique_ptr<temporal::Worker> worker_;
  std::vector<std::string> sandboxes_;
};
std::shared_ptr<sandbox::SandboxManager> DurableModesTest::manager_;

// An agent whose llm_model hook gives a model of its own, whatever the worker is configured with.
class OwnModelAgent final : public codeact::CodeActAgent {
 public:
  explicit OwnModelAgent(std::string base_url)
      : CodeActAgent("simple_agent"), base_url_(std::move(base_url)) {}
  core::Result<std::shared_ptr<llm::Model>> llm_model(
      const codeact::AgentBuilder& builder) const override {
    llm::ModelConfig config = builder.model_config;
    CODEACT_TRY(auto m, llm::make_model("openai-compatible:own-model@" + base_url_, config));
    return std::shared_ptr<llm::Model>(std::move(m));
  }

 private:
  std::string base_url_;
};

TEST_F(DurableModesTest, AgentOverridingLlmModelUsesItsModelWhenRunDurably) {
  llm::testing::FakeProviderServer worker_default;  // the model the worker is configured with
  llm::testing::FakeProviderServer own;             // the model the agent asks for
  own.enqueue(json_response(::codeact::testing::python_call("call_1", "print(6 * 7)")));
  own.enqueue(json_response(::codeact::testing::text_answer("42, from the agent's own model.")));
  codeact::AgentBuilder b = builder();
  b.model = "openai-compatible:default-model@" + worker_default.base_url("/v1");
  const std::string queue = start_worker(b, std::make_shared<OwnModelAgent>(own.base_url("/v1")));

  TaskInput in;
  in.task = "What is 6 times 7?";  // no model named: the agent decides
  in.sandbox_id = new_sandbox("own-model");
  auto out = run_durably(queue, in, in.sandbox_id);
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_EQ(out->output, "42, from the agent's own model.");
  EXPECT_EQ(own.request_count(), 2u);
  EXPECT_EQ(worker_default.request_count(), 0u) << "the worker's default model must not be asked";
  EXPECT_EQ(out->model, "openai-compatible:own-model");
  EXPECT_NE(::codeact::testing::tool_message(::codeact::testing::request_messages(own, 1), "call_1")
                .find("42"),
            std::string::npos);
}

TEST_F(DurableModesTest, SameAgentDirectAndDurableTellsItsModelTheSame) {
  auto turns = [] {
    return std::vector<llm::ModelResponse>{
        RecordingModel::python_call("call_1",
                                    "import json\nrows = [1, 2, 3]\nopen('/output/rows.json', "
                                    "'w').write(json.dumps(rows))\nsum(rows)"),
        RecordingModel::tool_call("call_2", "list_files", core::Json::object()),
        RecordingModel::text("The sum is 6; the rows are in /output/rows.json.")};
  };
  const std::string id = new_sandbox("modes");

  auto direct_model = std::make_shared<RecordingModel>(turns());
  ScriptedAgent direct_agent("simple_agent", direct_model);
  codeact::CodeActRunOptions options;
  options.sandbox_id = id;
  options.remove_volume = true;  // the durable run starts from the same empty sandbox
  auto direct =
      direct_agent.run_direct("Sum 1, 2, 3 and save the rows.", builder(), manager_, options);
  ASSERT_TRUE(direct.ok()) << direct.error().to_string();

  auto durable_model = std::make_shared<RecordingModel>(turns());
  const std::string queue =
      start_worker(builder(), std::make_shared<ScriptedAgent>("simple_agent", durable_model));
  TaskInput in;
  in.task = "Sum 1, 2, 3 and save the rows.";
  in.sandbox_id = id;
  auto durable = run_durably(queue, in, "modes-wf-" + random_hex());
  ASSERT_TRUE(durable.ok()) << durable.error().to_string();

  auto a = direct_model->requests();
  auto b = durable_model->requests();
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    // The cell's duration differs from run to run, and a part's metadata (never sent to a
    // provider) holds the mode's execution ids; everything else must not differ.
    auto steady = [](core::Json messages) {
      for (auto& m : messages)
        if (m.contains("parts"))
          for (auto& part : m["parts"]) part.erase("metadata");
      std::string text = messages.dump();
      for (size_t p = 0; (p = text.find(" ran in ", p)) != std::string::npos;) {
        size_t end = text.find(" ms", p);
        text.replace(p, end - p, " ran in N");
        p += 9;
      }
      return text;
    };
    EXPECT_EQ(steady(b[i].messages), steady(a[i].messages)) << "request " << i;
    EXPECT_EQ(b[i].params, a[i].params) << "request " << i << ": the tools and output offered";
    EXPECT_EQ(b[i].settings, a[i].settings) << "request " << i;
    EXPECT_EQ(b[i].instructions, a[i].instructions) << "request " << i;
  }
  EXPECT_NE(a[1].instructions.find("rows"), std::string::npos)
      << "instructions show the cell's variable: " << a[1].instructions;
  EXPECT_EQ(durable->output, direct->output.message);
  EXPECT_EQ(durable->files, direct->output.file_paths);
  EXPECT_EQ(durable->files, std::vector<std::string>{"/output/rows.json"});
  EXPECT_EQ(durable->model, direct->model_name);
}

TEST_F(DurableModesTest, ASubscriberInTheWorkersProcessSeesACellsOutputWhileItRuns) {
  auto model = std::make_shared<RecordingModel>(std::vector<llm::ModelResponse>{
      RecordingModel::python_call("call_1",
                                  "import sys, time\n"
                                  "for i in range(3):\n"
                                  "    print(f'tick {i}')\n"
                                  "    time.sleep(0.7)\n"
                                  "print('careful', file=sys.stderr)"),
      RecordingModel::text("Ticked three times.")});
  auto live = std::make_shared<LiveOutput>();
  const std::string queue =
      start_worker(builder(), std::make_shared<ScriptedAgent>("simple_agent", model), live);
  const std::string workflow_id = "live-wf-" + random_hex();
  struct Arrived {
    LiveChunk chunk;
    std::chrono::steady_clock::time_point at;
  };
  std::mutex mu;
  std::vector<Arrived> arrived;
  auto sub = live->subscribe(workflow_id, [&](const LiveChunk& c) {
    std::lock_guard lock(mu);
    arrived.push_back({c, std::chrono::steady_clock::now()});
  });
  auto other = live->subscribe("another-workflow", [](const LiveChunk& c) {
    ADD_FAILURE() << "a chunk of another workflow: " << c.text;
  });

  TaskInput in;
  in.task = "Tick.";
  in.sandbox_id = new_sandbox("live");
  auto out = run_durably(queue, in, workflow_id);
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  EXPECT_EQ(out->output, "Ticked three times.");

  std::lock_guard lock(mu);
  ASSERT_FALSE(arrived.empty()) << "no live output reached the subscriber";
  LiveOutputCursor cursor;
  std::string stdout_text, stderr_text;
  for (const auto& a : arrived) {
    EXPECT_EQ(a.chunk.workflow_id, workflow_id);
    EXPECT_EQ(a.chunk.run_id.rfind(workflow_id + "/", 0), 0u) << a.chunk.run_id;
    EXPECT_EQ(a.chunk.run_step, 1);
    EXPECT_EQ(a.chunk.tool_call_id, "call_1");
    (a.chunk.stream == "stdout" ? stdout_text : stderr_text) += cursor.unseen(a.chunk);
  }
  EXPECT_EQ(stdout_text, "tick 0\ntick 1\ntick 2\n");
  EXPECT_EQ(stderr_text, "careful\n");
  // The first tick came while the cell still slept: well before the last piece (so before the
  // activity completed), not all at its end.
  EXPECT_GE(arrived.back().at - arrived.front().at, std::chrono::milliseconds(1000));
  // The model read the whole output in the result, as without a subscriber.
  auto requests = model->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_NE(requests[1].messages.dump().find("tick 2"), std::string::npos);
}

}  // namespace
}  // namespace codeact::durable
