// Clock: where code that waits or measures elapsed time reads the time, so a test can replace real
// waiting with a clock it moves by hand (leveldb's Env does the same for its clock).
//
// Code that needs a clock takes a `Clock*` or `std::shared_ptr<Clock>`; null means
// core::real_clock(). Implementations are thread-safe. The fake for tests is
// tests/support/manual_clock.hpp.
#pragma once

#include <chrono>

#include "codeact/core/cancel.hpp"

namespace codeact::core {

class Clock {
 public:
  virtual ~Clock() = default;

  // Monotonic time, for deadlines and elapsed time.
  virtual std::chrono::steady_clock::time_point steady_now() = 0;
  // Wall-clock time, for comparing with dates others send (an HTTP Retry-After date).
  virtual std::chrono::system_clock::time_point system_now() = 0;
  // Waits `duration` (nothing when it is zero or negative). Returns false as soon as `cancel`
  // (may be null) is set, true when the whole duration passed.
  virtual bool sleep_for(std::chrono::milliseconds duration, const CancelToken* cancel) = 0;
};

// The process-wide clock on std::chrono::steady_clock / system_clock; sleep_for notices a
// cancellation within about 20 ms.
Clock& real_clock();

// `clock` when non-null, real_clock() otherwise.
inline Clock& clock_or_real(Clock* clock) { return clock != nullptr ? *clock : real_clock(); }

}  // namespace codeact::core
