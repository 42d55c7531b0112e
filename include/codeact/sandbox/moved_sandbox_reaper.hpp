// MovedSandboxReaper: while it lives, a thread removes this engine's containers whose sandbox was
// placed on another host (SandboxManager::reap_moved) every `interval`, so a host that was cut off
// and came back leaves none behind. Their kernels already stopped committing (the ownership
// epochs of shared_storage.hpp); this removes what is left. Does nothing without
// CODEACT_SHARED_DIR. Each removal is logged.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "codeact/sandbox/sandbox_manager.hpp"

namespace codeact::sandbox {

class MovedSandboxReaper {
 public:
  MovedSandboxReaper(std::shared_ptr<SandboxManager> manager,
                     std::chrono::milliseconds interval = std::chrono::seconds(5));
  ~MovedSandboxReaper();
  MovedSandboxReaper(const MovedSandboxReaper&) = delete;
  MovedSandboxReaper& operator=(const MovedSandboxReaper&) = delete;

 private:
  void loop();

  std::shared_ptr<SandboxManager> manager_;
  std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace codeact::sandbox
