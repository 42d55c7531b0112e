#include "codeact/core/clock.hpp"

#include <algorithm>
#include <thread>

namespace codeact::core {

namespace {

class RealClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point steady_now() override {
    return std::chrono::steady_clock::now();
  }
  std::chrono::system_clock::time_point system_now() override {
    return std::chrono::system_clock::now();
  }
  bool sleep_for(std::chrono::milliseconds duration, const CancelToken* cancel) override {
    // Polled rather than woken: CancelToken is a bare flag, set from any thread.
    constexpr std::chrono::milliseconds kPoll{20};
    const auto deadline = std::chrono::steady_clock::now() + duration;
    while (true) {
      if (cancel != nullptr && cancel->cancelled()) return false;
      auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return true;
      std::this_thread::sleep_for(
          std::min<std::chrono::steady_clock::duration>(deadline - now, kPoll));
    }
  }
};

}  // namespace

Clock& real_clock() {
  static RealClock clock;
  return clock;
}

}  // namespace codeact::core
