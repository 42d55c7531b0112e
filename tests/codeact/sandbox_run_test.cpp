// The one sandbox lifecycle (SandboxRun), against the in-memory backend: what becomes of the
// sandbox after a success, a failure, a cancel or a failed start, which files count as produced,
// and that direct mode runs exactly these steps.
#include "codeact/codeact/sandbox_run.hpp"

#include <gtest/gtest.h>

#include "codeact/codeact/codeact_agent.hpp"
#include "fake_sandbox_backend.hpp"
#include "scripted_agent.hpp"

namespace codeact::codeact {
namespace {

using core::Json;
using testing::FakeSandboxBackend;
using testing::RecordingModel;
using testing::ScriptedAgent;

// Steps on the fake backend with a scripted agent, recording what ran.
class FakeSteps final : public RunSteps {
 public:
  explicit FakeSteps(std::shared_ptr<FakeSandboxBackend> backend,
                     std::shared_ptr<agent::Agent> agent = nullptr)
      : backend_(std::move(backend)), agent_(std::move(agent)) {}
  std::vector<std::string> log;
  core::Status prepare_result;

  agent::Task<core::Result<SandboxStarted>> start_sandbox(const SandboxPlan& plan) override {
    log.push_back("start");
    co_return codeact::start_sandbox(*backend_, plan);
  }
  agent::Task<core::Result<std::vector<sandbox::FileEntry>>> list_output(
      const std::string& id) override {
    log.push_back("files");
    co_return backend_->list_files(id, "/output");
  }
  agent::Task<core::Status> finish_sandbox(const std::string& id, SandboxEnd end,
                                           bool remove_volume) override {
    log.push_back(std::string("finish:") + std::string(sandbox_end_name(end)));
    co_return end_sandbox(*backend_, id, end, remove_volume);
  }
  agent::Task<core::Result<PreparedAgent>> prepare_agent(const std::string&) override {
    log.push_back("prepare");
    if (!prepare_result.ok()) co_return prepare_result.error();
    PreparedAgent p;
    p.agent = agent_;
    p.model_name = "function:scripted";
    co_return p;
  }

 private:
  std::shared_ptr<FakeSandboxBackend> backend_;
  std::shared_ptr<agent::Agent> agent_;
};

std::shared_ptr<agent::Agent> answering(const std::string& answer) {
  auto model = std::make_shared<llm::FunctionModel>(
      [answer](const std::vector<llm::ModelMessage>&,
               const llm::AgentInfo&) -> core::Result<llm::ModelResponse> {
        llm::ModelResponse r;
        r.parts.push_back(llm::TextPart{answer});
        return r;
      });
  return std::make_shared<agent::Agent>(model, agent::AgentOptions{});
}

TaskRunOutcome run_once(RunSteps& steps, SandboxPlan plan, bool cancelled = false,
                        std::vector<SandboxRunEvent::Kind>* events = nullptr) {
  SandboxRun run(steps, std::move(plan), [events](const SandboxRunEvent& e) {
    if (events) events->push_back(e.kind);
  });
  agent::RunLoop loop;
  return loop.run(
      run_task_in_sandbox(run, "task", agent::RunOptions{}, [cancelled] { return cancelled; }));
}

TEST(SandboxPlanTest, TheEndOfARun) {
  SandboxPlan p;
  EXPECT_EQ(p.end(true), SandboxEnd::kStop);
  EXPECT_EQ(p.end(false), SandboxEnd::kRemove);
  p.remove_volume = true;
  EXPECT_EQ(p.end(true), SandboxEnd::kRemove)
      << "a success that removes the volume removes everything";
  p.keep_sandbox = true;
  EXPECT_EQ(p.end(true), SandboxEnd::kKeep);
  EXPECT_EQ(p.end(false), SandboxEnd::kKeep);
}

TEST(SandboxRunTest, ASuccessfulTaskStopsTheSandboxAndKeepsItsVolume) {
  auto backend = std::make_shared<FakeSandboxBackend>();
  FakeSteps steps(backend, answering("done"));
  std::vector<SandboxRunEvent::Kind> events;
  auto out = run_once(steps, SandboxPlan{.sandbox_id = "s1"}, false, &events);
  ASSERT_TRUE(out.run.ok()) << out.run.error().to_string();
  EXPECT_EQ(out.run->output_text(), "done");
  EXPECT_TRUE(out.opened);
  EXPECT_FALSE(out.cancelled);
  EXPECT_EQ(out.model_name, "function:scripted");
  EXPECT_EQ(steps.log,
            (std::vector<std::string>{"start", "prepare", "files", "files", "finish:stop"}));
  using K = SandboxRunEvent::Kind;
  EXPECT_EQ(events,
            (std::vector<K>{K::kStarting, K::kStarted, K::kFiles, K::kClosing, K::kClosed}));
  EXPECT_TRUE(backend->exists("s1"));
  EXPECT_FALSE(backend->with("s1", [](auto& s) { return s.running; }));
}

TEST(SandboxRunTest, AFailedStartRemovesTheContainerAndNothingElseRuns) {
  auto backend = std::make_shared<FakeSandboxBackend>();
  backend->fail_next("start", core::failed_precondition("installing rich failed"));
  backend->fail_next("remove", core::unavailable("Docker went away"));
  FakeSteps steps(backend, answering("never"));
  auto out = run_once(steps, SandboxPlan{.sandbox_id = "s1"});
  ASSERT_FALSE(out.run.ok());
  EXPECT_FALSE(out.opened);
  EXPECT_EQ(out.run.error().message(),
            "starting sandbox \"s1\": installing rich failed (and cleaning up the sandbox failed: "
            "Docker went away)");
  EXPECT_EQ(steps.log, (std::vector<std::string>{"start", "finish:remove"}));
}

TEST(SandboxRunTest, AFailedPrepareOrRunAndACancelRemoveTheContainer) {
  auto backend = std::make_shared<FakeSandboxBackend>();
  FakeSteps failing(backend, answering("x"));
  failing.prepare_result = core::not_found("no agent \"nobody\"");
  auto prepared = run_once(failing, SandboxPlan{.sandbox_id = "s1"});
  ASSERT_FALSE(prepared.run.ok());
  EXPECT_TRUE(prepared.opened);
  EXPECT_EQ(failing.log, (std::vector<std::string>{"start", "prepare", "finish:remove"}));
  EXPECT_TRUE(backend->exists("s1")) << "the volume is kept";

  FakeSteps cancelled(backend, answering("done"));
  auto out = run_once(cancelled, SandboxPlan{.sandbox_id = "s1"}, /*cancelled=*/true);
  ASSERT_TRUE(out.run.ok()) << "the agent finished, but a cancel was asked for";
  EXPECT_TRUE(out.cancelled);
  EXPECT_EQ(cancelled.log.back(), "finish:remove");

  FakeSteps listing(backend, answering("done"));
  backend->fail_next("list_files", core::unavailable("kernel down"));
  auto files = run_once(listing, SandboxPlan{.sandbox_id = "s1", .remove_volume = true});
  ASSERT_FALSE(files.run.ok());
  EXPECT_EQ(files.run.error().message(), "listing the files of sandbox \"s1\": kernel down");
  EXPECT_EQ(listing.log.back(), "finish:remove");
  EXPECT_FALSE(backend->exists("s1")) << "remove_volume removes the volume too";
}

TEST(SandboxRunTest, ProducedFilesAreTheNewAndTheChanged) {
  std::vector<sandbox::FileEntry> before{
      {"/output/a", 1, 10}, {"/output/b", 2, 20}, {"/output/c", 3, 30}};
  std::vector<sandbox::FileEntry> after{
      {"/output/a", 1, 10}, {"/output/b", 5, 20}, {"/output/c", 3, 31}, {"/output/d", 1, 40}};
  EXPECT_EQ(produced_files(before, after),
            (std::vector<std::string>{"/output/b", "/output/c", "/output/d"}));
  EXPECT_TRUE(produced_files(after, after).empty());
}

TEST(SandboxRunTest, EndingASandboxAlreadyGoneIsNoError) {
  FakeSandboxBackend backend;
  EXPECT_TRUE(end_sandbox(backend, "gone", SandboxEnd::kStop, false).ok());
  EXPECT_TRUE(end_sandbox(backend, "gone", SandboxEnd::kRemove, true).ok());
  backend.fail_next("stop", core::unavailable("Docker went away"));
  ASSERT_TRUE(backend.start(sandbox::SandboxOptions{.id = "s1"}).ok());
  EXPECT_EQ(end_sandbox(backend, "s1", SandboxEnd::kStop, false).error().code(),
            core::Code::kUnavailable);
  EXPECT_TRUE(end_sandbox(backend, "s1", SandboxEnd::kKeep, true).ok());
  EXPECT_TRUE(backend.with("s1", [](auto& s) { return s.running; }));
}

TEST(StartSandbox, AForkedPlanForksOnlyWhenTheSandboxIsNewOrHasNoCheckpoint) {
  FakeSandboxBackend backend;
  ASSERT_TRUE(backend.start(sandbox::SandboxOptions{.id = "src"}).ok());
  backend.with("src", [](auto& s) { s.variables["x"] = {"int", "1", 1}; });
  ASSERT_TRUE(backend.execute("src", sandbox::ExecuteRequest{.code = "x = 1"}).ok());
  backend.with("src", [](auto& s) { s.variables["x"] = {"int", "2", 2}; });
  ASSERT_TRUE(backend.execute("src", sandbox::ExecuteRequest{.code = "x = 2"}).ok());
  SandboxPlan plan;
  plan.sandbox_id = "child";
  plan.fork_from = SandboxFork{"src", 1};
  auto started = start_sandbox(backend, plan);
  ASSERT_TRUE(started.ok()) << started.error().message();
  EXPECT_FALSE(started->resumed);
  EXPECT_EQ(backend.calls_of("fork").size(), 1u);
  EXPECT_EQ(backend.with("child", [](auto& s) { return s.variables.at("x").repr; }), "1");
  // Started again (a later run of the chat): resumed as it is, not forked again.
  backend.with("child", [](auto& s) { s.variables["x"] = {"int", "5", 5}; });
  ASSERT_TRUE(backend.execute("child", sandbox::ExecuteRequest{.code = "x = 5"}).ok());
  auto again = start_sandbox(backend, plan);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->resumed);
  EXPECT_EQ(backend.calls_of("fork").size(), 1u);
  EXPECT_EQ(backend.with("child", [](auto& s) { return s.variables.at("x").repr; }), "5");
  // A fork of a checkpoint that does not exist is the start's error.
  plan.sandbox_id = "other";
  plan.fork_from = SandboxFork{"src", 9};
  EXPECT_EQ(start_sandbox(backend, plan).error().code(), core::Code::kNotFound);
}

TEST(RunDirect, RunsTheSameStepsInThisProcessAndSaysSo) {
  auto backend = std::make_shared<FakeSandboxBackend>();
  auto model = std::make_shared<RecordingModel>(
      std::vector<llm::ModelResponse>{RecordingModel::text("hello")});
  ScriptedAgent agent("simple_agent", model);
  AgentBuilder b;
  auto book =
      agent::PromptBook::parse("simple_agent:\n  instructions: \"Sandbox {{ container_id }}\"\n");
  ASSERT_TRUE(book.ok());
  b.prompts = std::make_shared<const agent::PromptBook>(std::move(*book));
  CodeActRunOptions options;
  options.sandbox_id = "d1";
  std::vector<std::string> progress;
  options.on_progress = [&progress](const std::string& line) { progress.push_back(line); };
  auto result = agent.run_direct("say hello", b, backend, options);
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  EXPECT_EQ(result->output.message, "hello");
  EXPECT_EQ(result->model_name, "function:scripted");
  EXPECT_EQ(model->requests().at(0).instructions, "Sandbox d1");
  EXPECT_EQ(progress, (std::vector<std::string>{
                          "starting sandbox d1 (no network)", "sandbox d1 started",
                          "sandbox d1 stopped (its volume workflow-d1 keeps the state)"}));
}

}  // namespace
}  // namespace codeact::codeact
