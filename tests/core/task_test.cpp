// The one coroutine type (core/task.hpp) and its executors (core/executor.hpp).
#include "codeact/core/task.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "codeact/core/executor.hpp"

using namespace codeact::core;

namespace {

Task<int> add(std::vector<std::string>& log, int a, int b) {
  log.push_back("add " + std::to_string(a) + "+" + std::to_string(b));
  co_return a + b;
}

Task<int> sum_of_three(std::vector<std::string>& log) {
  int x = co_await add(log, 1, 2);
  int y = co_await add(log, x, 3);
  co_return y;
}

Task<int> fails() {
  throw std::runtime_error("boom in a helper");
  co_return 0;
}

Task<std::string> catches_a_helpers_exception() {
  try {
    co_await fails();
  } catch (const std::runtime_error& e) {
    co_return std::string("caught: ") + e.what();
  }
  co_return "not thrown";
}

}  // namespace

TEST(Task, IsLazyAndRunsNestedTasksInOrderWhenDriven) {
  std::vector<std::string> log;
  Task<int> task = sum_of_three(log);
  EXPECT_TRUE(log.empty()) << "nothing runs before the task is started";
  EXPECT_FALSE(task.done());
  task.start();  // no task suspends on anything external: it finishes inline
  ASSERT_TRUE(task.done());
  EXPECT_EQ(task.result(), 6);
  EXPECT_EQ(log, (std::vector<std::string>{"add 1+2", "add 3+3"}));
}

TEST(Task, AnExceptionReachesTheAwaiterAndTheDriver) {
  Task<std::string> caught = catches_a_helpers_exception();
  caught.start();
  EXPECT_EQ(caught.result(), "caught: boom in a helper");

  Task<int> failing = fails();
  failing.handle().resume();  // the way an executor starts a task it queued
  ASSERT_TRUE(failing.done());
  EXPECT_THROW((void)failing.result(), std::runtime_error);
}

TEST(Task, DestroyingAnUnfinishedTaskFreesItsFrame) {
  auto alive = std::make_shared<int>(0);
  std::weak_ptr<int> watch = alive;
  {
    auto holds = [](std::shared_ptr<int> p) -> Task<int> { co_return *p; };
    Task<int> never_started = holds(std::move(alive));
    EXPECT_FALSE(watch.expired());
  }
  EXPECT_TRUE(watch.expired());
}

TEST(RunLoop, WhenAllRunsOffloadedWorkConcurrentlyAndKeepsOrder) {
  RunLoop loop;
  const auto loop_thread = std::this_thread::get_id();
  auto job = [](Executor* ex, int i) -> Task<std::pair<int, std::thread::id>> {
    // Later jobs finish first, so order of results is not order of completion.
    co_return co_await offload(ex, [i] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200 - i * 50));
      return std::make_pair(i * 10, std::this_thread::get_id());
    });
  };
  std::vector<Task<std::pair<int, std::thread::id>>> tasks;
  for (int i = 0; i < 4; ++i) tasks.push_back(job(&loop, i));
  auto start = std::chrono::steady_clock::now();
  auto results = loop.run(when_all(std::move(tasks)));
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(results.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(results[i].first, static_cast<int>(i) * 10);
    EXPECT_NE(results[i].second, loop_thread) << "offloaded work runs on a thread of its own";
  }
  EXPECT_LT(elapsed, std::chrono::milliseconds(450))
      << "the four sleeps (500 ms in all) overlapped";
}

TEST(RunLoop, RethrowsWhatEscapesTheTaskAndOffloadInlineWithoutAnExecutor) {
  RunLoop loop;
  EXPECT_THROW(loop.run(fails()), std::runtime_error);
  auto inline_job = []() -> Task<std::thread::id> {
    co_return co_await offload(nullptr, [] { return std::this_thread::get_id(); });
  };
  EXPECT_EQ(loop.run(inline_job()), std::this_thread::get_id());
  std::vector<Task<int>> none;
  EXPECT_TRUE(loop.run(when_all(std::move(none))).empty());
}
