// Task<T>: the small C++20 coroutine type the agent loop is written in, and the executors that
// drive it.
//
// Why coroutines: the loop is written once and runs in two modes (DESIGN.md §1). In *direct* mode
// a RunLoop drives it on the calling thread and blocking work (a tool body) is offloaded to a
// thread; in *durable* mode a Temporal workflow's single-threaded deterministic executor drives the
// same coroutine and the model request / tool calls are awaitables that schedule activities. The
// loop only ever `co_await`s Tasks, so it never blocks and never touches threads itself.
//
// Contract:
//   - A Task is lazy: nothing runs until it is awaited (or handed to RunLoop::run / start()).
//   - A Task is awaited at most once; it owns its coroutine frame (move-only).
//   - An exception escaping a coroutine is rethrown at the co_await (code in codeact returns
//     errors as Result values; exceptions only come from user code, which the loop catches).
//   - when_all() starts every task before waiting, so tasks that suspend run concurrently; it
//     resumes the awaiting coroutine on whichever executor thread finished the last task.
//   - Leaf awaitables must resume their coroutine through Executor::post (never inline on a
//     foreign thread), so all coroutine code runs on the executor's thread. offload() does this.
//
// Thread-safety: Executor::post is thread-safe; everything else is used from the executor thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <coroutine>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace codeact::agent {

template <typename T>
class Task;

namespace task_internal {

struct FinalAwaiter {
  bool await_ready() const noexcept { return false; }
  template <typename Promise>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> h) const noexcept {
    auto continuation = h.promise().continuation;
    return continuation ? continuation : std::noop_coroutine();
  }
  void await_resume() const noexcept {}
};

struct PromiseBase {
  std::coroutine_handle<> continuation;
  std::exception_ptr exception;
  std::suspend_always initial_suspend() const noexcept { return {}; }
  FinalAwaiter final_suspend() const noexcept { return {}; }
  void unhandled_exception() noexcept { exception = std::current_exception(); }
};

template <typename T>
struct Promise : PromiseBase {
  std::optional<T> value;
  Task<T> get_return_object() noexcept;
  template <typename U>
  void return_value(U&& v) {
    value.emplace(std::forward<U>(v));
  }
  T take() {
    if (exception) std::rethrow_exception(exception);
    return std::move(*value);
  }
};

template <>
struct Promise<void> : PromiseBase {
  Task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void take() {
    if (exception) std::rethrow_exception(exception);
  }
};

}  // namespace task_internal

template <typename T>
class [[nodiscard]] Task {
 public:
  using promise_type = task_internal::Promise<T>;
  using value_type = T;

  Task() = default;
  explicit Task(std::coroutine_handle<promise_type> h) : h_(h) {}
  Task(Task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  Task& operator=(Task&& o) noexcept {
    if (this != &o) {
      if (h_) h_.destroy();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() {
    if (h_) h_.destroy();
  }

  bool valid() const { return static_cast<bool>(h_); }
  bool done() const { return h_ && h_.done(); }

  // Awaiting a Task runs it; the awaiting coroutine continues when it finishes.
  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
    h_.promise().continuation = awaiting;
    return h_;
  }
  T await_resume() { return h_.promise().take(); }

  // For drivers: start without a continuation / read the result once done().
  void start() { h_.resume(); }
  T result() { return h_.promise().take(); }

 private:
  std::coroutine_handle<promise_type> h_;
};

namespace task_internal {
template <typename T>
Task<T> Promise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<Promise<T>>::from_promise(*this));
}
inline Task<void> Promise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<Promise<void>>::from_promise(*this));
}

// A coroutine that starts eagerly and frees itself when done; used to fan out when_all.
struct Detached {
  struct promise_type {
    Detached get_return_object() noexcept { return {}; }
    std::suspend_never initial_suspend() const noexcept { return {}; }
    std::suspend_never final_suspend() const noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }  // children catch everything
  };
};

template <typename T>
struct WhenAllState {
  explicit WhenAllState(size_t n) : remaining(n + 1), results(n), errors(n) {}
  std::atomic<size_t> remaining;
  std::coroutine_handle<> parent;
  std::vector<std::optional<T>> results;
  std::vector<std::exception_ptr> errors;
};

template <typename T>
Detached run_child(Task<T> task, std::shared_ptr<WhenAllState<T>> state, size_t index) {
  try {
    state->results[index].emplace(co_await task);
  } catch (...) {
    state->errors[index] = std::current_exception();
  }
  if (state->remaining.fetch_sub(1) == 1) state->parent.resume();
}

template <typename T>
struct WhenAllAwaiter {
  std::vector<Task<T>> tasks;
  std::shared_ptr<WhenAllState<T>> state;

  bool await_ready() const noexcept { return tasks.empty(); }
  bool await_suspend(std::coroutine_handle<> parent) {
    state->parent = parent;
    for (size_t i = 0; i < tasks.size(); ++i) run_child(std::move(tasks[i]), state, i);
    return state->remaining.fetch_sub(1) != 1;  // false: all finished inline, continue now
  }
  std::vector<T> await_resume() {
    std::vector<T> out;
    if (!state) return out;
    for (auto& e : state->errors) {
      if (e) std::rethrow_exception(e);
    }
    out.reserve(state->results.size());
    for (auto& r : state->results) out.push_back(std::move(*r));
    return out;
  }
};

}  // namespace task_internal

// Runs all tasks concurrently and returns their results in the given order.
template <typename T>
Task<std::vector<T>> when_all(std::vector<Task<T>> tasks) {
  // A named awaiter: g++ 12 mishandles non-trivial temporaries inside co_await expressions.
  task_internal::WhenAllAwaiter<T> awaiter{std::move(tasks),
                                           std::make_shared<task_internal::WhenAllState<T>>(0)};
  awaiter.state = std::make_shared<task_internal::WhenAllState<T>>(awaiter.tasks.size());
  std::vector<T> results = co_await awaiter;
  co_return results;
}

// Where suspended coroutines are resumed. The direct mode's RunLoop and a workflow's
// deterministic executor implement it.
class Executor {
 public:
  virtual ~Executor() = default;
  // Schedules `h` to be resumed on the executor's thread. Thread-safe.
  virtual void post(std::coroutine_handle<> h) = 0;
};

// Direct mode: drives a Task to completion on the calling thread, resuming coroutines that
// leaf awaitables post from other threads.
class RunLoop final : public Executor {
 public:
  void post(std::coroutine_handle<> h) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_.push_back(h);
    }
    cv_.notify_one();
  }

  // Runs `task` until it finishes and returns its result (rethrowing an escaped exception).
  template <typename T>
  T run(Task<T> task) {
    std::exception_ptr error;
    bool finished = false;
    if constexpr (std::is_void_v<T>) {
      Task<void> d = drive_void(task, error, finished);
      pump(d, finished);
      if (error) std::rethrow_exception(error);
    } else {
      std::optional<T> out;
      Task<void> d = drive(task, out, error, finished);
      pump(d, finished);
      if (error) std::rethrow_exception(error);
      return std::move(*out);
    }
  }

 private:
  template <typename T>
  static Task<void> drive(Task<T>& task, std::optional<T>& out, std::exception_ptr& error, bool& finished) {
    try {
      out.emplace(co_await task);
    } catch (...) {
      error = std::current_exception();
    }
    finished = true;
  }
  static Task<void> drive_void(Task<void>& task, std::exception_ptr& error, bool& finished) {
    try {
      co_await task;
    } catch (...) {
      error = std::current_exception();
    }
    finished = true;
  }
  // Starts the driver and resumes posted coroutines until it has finished. `finished` is only
  // written on this thread (coroutines resume here), so it needs no lock.
  void pump(Task<void>& driver, const bool& finished) {
    driver.start();
    while (!finished) {
      std::coroutine_handle<> h;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !ready_.empty(); });
        h = ready_.front();
        ready_.pop_front();
      }
      h.resume();
    }
  }

 public:

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::coroutine_handle<>> ready_;  // GUARDED_BY(mu_)
};

// Runs `fn` (a blocking function returning R) on a new thread and resumes the awaiting coroutine
// through `executor` when it returns. With a null executor `fn` runs inline (e.g. inside an
// activity, where there is nothing else to overlap with).
template <typename F>
auto offload(Executor* executor, F fn) -> Task<std::invoke_result_t<F>> {
  using R = std::invoke_result_t<F>;
  if (executor == nullptr) co_return fn();
  struct Awaiter {
    Executor* executor;
    F* fn;
    std::optional<R> result;
    std::exception_ptr error;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
      std::thread([this, h] {
        try {
          result.emplace((*fn)());
        } catch (...) {
          error = std::current_exception();
        }
        executor->post(h);
      }).detach();
    }
    R await_resume() {
      if (error) std::rethrow_exception(error);
      return std::move(*result);
    }
  };
  Awaiter awaiter{executor, &fn, std::nullopt, nullptr};
  R result = co_await awaiter;
  co_return result;
}

}  // namespace codeact::agent
