// ManualClock: a core::Clock for unit tests whose time moves only when told. sleep_for returns at
// once, moves the clock by the duration asked and records it, so a test asserts a retry schedule
// (each wait, the total) without waiting. advance() stands in for time spent elsewhere (a slow
// response). on_sleep, when set, runs before each sleep is applied (a test cancels from there).
//
// Thread-safe (one mutex); on_sleep runs without it held.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <vector>

#include "codeact/core/clock.hpp"

namespace codeact::testing {

class ManualClock final : public core::Clock {
 public:
  // The wall-clock time system_now() starts from. Default: 2025-01-01T00:00:00Z.
  explicit ManualClock(std::chrono::system_clock::time_point system_start =
                           std::chrono::system_clock::from_time_t(1735689600))
      : system_start_(system_start) {}

  std::chrono::steady_clock::time_point steady_now() override {
    std::lock_guard lock(mutex_);
    return std::chrono::steady_clock::time_point{} + elapsed_;
  }
  std::chrono::system_clock::time_point system_now() override {
    std::lock_guard lock(mutex_);
    return system_start_ + elapsed_;
  }
  bool sleep_for(std::chrono::milliseconds duration, const core::CancelToken* cancel) override {
    if (on_sleep) on_sleep(duration);
    std::lock_guard lock(mutex_);
    if (cancel != nullptr && cancel->cancelled()) return false;
    sleeps_.push_back(duration);
    if (duration.count() > 0) elapsed_ += duration;
    return true;
  }

  void advance(std::chrono::milliseconds duration) {
    std::lock_guard lock(mutex_);
    elapsed_ += duration;
  }
  // Every sleep_for that ran to its end, in order.
  std::vector<std::chrono::milliseconds> sleeps() const {
    std::lock_guard lock(mutex_);
    return sleeps_;
  }
  // Time moved since construction (sleeps and advance()).
  std::chrono::milliseconds elapsed() const {
    std::lock_guard lock(mutex_);
    return elapsed_;
  }

  std::function<void(std::chrono::milliseconds)> on_sleep;

 private:
  mutable std::mutex mutex_;
  std::chrono::system_clock::time_point system_start_;
  std::chrono::milliseconds elapsed_{0};           // guarded by mutex_
  std::vector<std::chrono::milliseconds> sleeps_;  // guarded by mutex_
};

}  // namespace codeact::testing
