// CancelToken: a flag one thread sets and others poll. Long operations (HTTP requests, process
// waits, kernel calls) accept a `const CancelToken*` (null = not cancellable) and return a
// Cancelled error soon after it is set. Thread-safe.
#pragma once

#include <atomic>

namespace codeact::core {

class CancelToken {
 public:
  void cancel() { cancelled_.store(true, std::memory_order_release); }
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  void reset() { cancelled_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> cancelled_{false};
};

}  // namespace codeact::core
