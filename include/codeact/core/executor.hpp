// Executor: where suspended Tasks (core/task.hpp) are resumed; RunLoop, the executor that
// drives a Task to completion on the calling thread; offload(), the awaitable that runs
// blocking work on a thread of its own and resumes the awaiter through an Executor.
//
// Leaf awaitables must resume their coroutine through Executor::post (never inline on a foreign
// thread), so all coroutine code runs on the executor's thread; offload() does this. The agent
// loop's direct mode is a RunLoop with tools offloaded; a Temporal workflow has its own
// deterministic executor and never offloads.
//
// Thread-safety: Executor::post is thread-safe; RunLoop::run is called by one thread at a time,
// which is the thread every coroutine it drives runs on.
#pragma once

#include <condition_variable>
#include <coroutine>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "codeact/core/task.hpp"

namespace codeact::core {

class Executor {
 public:
  virtual ~Executor() = default;
  // Schedules `h` to be resumed on the executor's thread. Thread-safe.
  virtual void post(std::coroutine_handle<> h) = 0;
};

// Drives a Task to completion on the calling thread, resuming coroutines that leaf awaitables
// post from other threads.
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
  static Task<void> drive(Task<T>& task, std::optional<T>& out, std::exception_ptr& error,
                          bool& finished) {
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

}  // namespace codeact::core
