#include "codeact/sandbox/moved_sandbox_reaper.hpp"

#include "codeact/core/config.hpp"
#include "codeact/core/log.hpp"
#include "codeact/core/strings.hpp"
#include "codeact/sandbox/shared_storage.hpp"

namespace codeact::sandbox {

MovedSandboxReaper::MovedSandboxReaper(std::shared_ptr<SandboxManager> manager,
                                       std::chrono::milliseconds interval)
    : manager_(std::move(manager)), interval_(interval) {
  auto shared = shared_dir_from(core::getenv_string);
  if (!manager_ || !shared.ok() || !*shared) return;
  thread_ = std::thread([this] { loop(); });
}

MovedSandboxReaper::~MovedSandboxReaper() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MovedSandboxReaper::loop() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, interval_, [this] { return stopping_; })) {
    lock.unlock();
    auto reaped = manager_->reap_moved();
    if (!reaped.ok()) {
      core::log().warn("looking for sandboxes placed on another host: {}",
                       reaped.error().message());
    } else if (!reaped->empty()) {
      core::log().info("removed the containers of {} (placed on another host since)",
                       core::join(*reaped, ", "));
    }
    lock.lock();
  }
}

}  // namespace codeact::sandbox
