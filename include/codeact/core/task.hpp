// Task<T>: the one C++20 coroutine type of codeact, and when_all() over Tasks.
//
// The agent loop and Temporal workflow code are both written in it, so a workflow awaits the
// agent loop (and any helper coroutine) directly: the agent loop is written once and runs in
// two modes (DESIGN.md §1). What drives a Task differs: in direct mode a RunLoop
// (core/executor.hpp) on the calling thread, in durable mode the workflow's deterministic
// single-threaded executor (temporal/workflow.hpp); a Task itself knows nothing of threads.
//
// Contract:
//   - A Task is lazy: nothing runs until it is awaited or a driver resumes handle().
//   - A Task is awaited at most once; it owns its coroutine frame (move-only) and destroys it
//     when destroyed, finished or not.
//   - Awaiting a Task runs it and resumes the awaiter when it finishes (symmetric transfer), so
//     code can be split into helper coroutines freely.
//   - An exception escaping a coroutine is rethrown at its co_await (or by result()).
//   - when_all() starts every task before waiting, so tasks that suspend run concurrently; it
//     resumes the awaiting coroutine on whichever thread finished the last task.
//
// Thread-safety: none of its own; a Task is used by one thread at a time (its driver's).
#pragma once

#include <atomic>
#include <coroutine>
#include <exception>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace codeact::core {

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

  // False for a default-constructed or moved-from Task.
  bool valid() const { return static_cast<bool>(h_); }
  bool done() const { return h_ && h_.done(); }

  // Awaiting a Task runs it; the awaiting coroutine continues when it finishes.
  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
    h_.promise().continuation = awaiting;
    return h_;
  }
  T await_resume() { return h_.promise().take(); }

  // For drivers, which start a Task without awaiting it: the coroutine to resume first (its
  // executor queues it), start() resumes it now; once done(), result() gives the value or
  // rethrows the exception. REQUIRES: valid(); result() at most once.
  std::coroutine_handle<> handle() const { return h_; }
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

// Runs all tasks concurrently and returns their results in the given order; the first
// exception (in that order) is rethrown once all have finished.
template <typename T>
Task<std::vector<T>> when_all(std::vector<Task<T>> tasks) {
  // A named awaiter: g++ 12 mishandles non-trivial temporaries inside co_await expressions.
  task_internal::WhenAllAwaiter<T> awaiter{std::move(tasks),
                                           std::make_shared<task_internal::WhenAllState<T>>(0)};
  awaiter.state = std::make_shared<task_internal::WhenAllState<T>>(awaiter.tasks.size());
  std::vector<T> results = co_await awaiter;
  co_return results;
}

}  // namespace codeact::core
