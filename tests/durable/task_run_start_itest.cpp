// `codeact run --workflow-id ID` against a real dev server (TaskRunStarter, task_run_start.hpp):
// the same task again follows the run that did it, never does it twice, even when that run
// completes between the look and the start; another task, or a run that ended otherwise, is
// replaced by a new run. The task workflow here is a stand-in of the test's own, registered
// under CodeActTaskWorkflow's name: it completes when signalled "finish".
#include <gtest/gtest.h>

#include <thread>

#include "codeact/durable/task_run_start.hpp"
#include "codeact/durable/workflows.hpp"
#include "codeact/temporal/worker.hpp"
#include "dev_server.hpp"

namespace codeact::durable {
namespace {

using namespace std::chrono_literals;
using temporal::testing::DevServer;
using temporal::testing::unique_name;

temporal::Task<core::Json> finish_when_told(temporal::WorkflowContext& ctx, temporal::Args) {
  bool finish = false;
  ctx.set_signal_handler("finish", [&](const temporal::Args&) { finish = true; });
  co_await ctx.wait_condition([&] { return finish; });
  co_return core::Json{{"output", "done"}};
}

TaskInput task(const std::string& text) {
  TaskInput in;
  in.task = text;
  return in;
}

class TaskRunStartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_.emplace(DevServer::client());
    temporal::WorkerOptions o;
    o.task_queue = unique_name("runs");
    worker_ = std::make_unique<temporal::Worker>(*client_, o);
    worker_->register_workflow(kTaskWorkflow, finish_when_told);
    ASSERT_TRUE(worker_->start().ok());
    options_.id = unique_name("task");
    options_.task_queue = o.task_queue;
  }
  void TearDown() override { worker_->shutdown(5s); }

  // Signals the run and waits for its result.
  void finish(const std::string& run_id) {
    ASSERT_TRUE(client_->signal_workflow(options_.id, run_id, "finish").ok());
    auto r = client_->get_result(options_.id, run_id);
    ASSERT_TRUE(r.ok());
  }

  std::optional<temporal::Client> client_;
  std::unique_ptr<temporal::Worker> worker_;
  temporal::StartWorkflowOptions options_;
};

TEST(TaskStartStep, OnlyARunThatCompletedTheSameInputIsFollowedAndARunningOneIsNeverReplaced) {
  const TaskInput in = task("sum the numbers");
  EXPECT_EQ(next_task_start_step(std::nullopt, in), TaskStartStep::kStartUnlessClosed);
  temporal::WorkflowDescription d;
  d.workflow_type = kTaskWorkflow;
  d.memo = core::Json{{kTaskInputMemo, in.to_json()}};
  d.status = "Running";
  EXPECT_EQ(next_task_start_step(d, in), TaskStartStep::kStartUnlessClosed)
      << "a running run may complete before the start: that start must not replace it";
  d.status = "Completed";
  EXPECT_EQ(next_task_start_step(d, in), TaskStartStep::kFollowCompleted);
  EXPECT_EQ(next_task_start_step(d, task("another task")), TaskStartStep::kStartReplacingClosed);
  for (const char* ended : {"Failed", "Canceled", "Terminated", "TimedOut"}) {
    d.status = ended;
    EXPECT_EQ(next_task_start_step(d, in), TaskStartStep::kStartReplacingClosed) << ended;
  }
  d.status = "Completed";
  d.workflow_type = kChatWorkflow;
  EXPECT_EQ(next_task_start_step(d, in), TaskStartStep::kStartReplacingClosed);
}

TEST_F(TaskRunStartTest, ARunThatCompletesBetweenTheLookAndTheStartIsFollowedNotDoneAgain) {
  const TaskInput in = task("sum the numbers");
  auto first = start_or_follow(*client_, in, options_);
  ASSERT_TRUE(first.ok()) << first.error().message();
  ASSERT_TRUE(first->run.started);

  // The command again, killed-and-restarted style: its look sees the run running ...
  TaskRunStarter again(*client_, in, options_);
  auto step = again.look();
  ASSERT_TRUE(step.ok());
  EXPECT_EQ(*step, TaskStartStep::kStartUnlessClosed);
  // ... the run completes before its start ...
  finish(first->run.run_id);
  // ... so the start is refused, and the next look follows the completed run.
  auto refused = again.take(*step);
  ASSERT_FALSE(refused.ok()) << "started run " << refused->run.run_id << ": the task done twice";
  EXPECT_EQ(refused.error().code(), core::Code::kAlreadyExists) << refused.error().message();
  auto followed = start_or_follow(*client_, in, options_);
  ASSERT_TRUE(followed.ok()) << followed.error().message();
  EXPECT_TRUE(followed->completed_before);
  EXPECT_FALSE(followed->run.started);
  EXPECT_EQ(followed->run.run_id, first->run.run_id);
}

TEST_F(TaskRunStartTest, TheSameTaskJoinsItsRunningRunAndAnotherTaskReplacesACompletedOne) {
  auto first = start_or_follow(*client_, task("a"), options_);
  ASSERT_TRUE(first.ok()) << first.error().message();
  auto joined = start_or_follow(*client_, task("a"), options_);
  ASSERT_TRUE(joined.ok()) << joined.error().message();
  EXPECT_FALSE(joined->run.started);
  EXPECT_EQ(joined->run.run_id, first->run.run_id);
  finish(first->run.run_id);

  auto other = start_or_follow(*client_, task("b"), options_);
  ASSERT_TRUE(other.ok()) << other.error().message();
  EXPECT_TRUE(other->run.started);
  EXPECT_NE(other->run.run_id, first->run.run_id);
  finish(other->run.run_id);
}

}  // namespace
}  // namespace codeact::durable
