#include "sandbox_sweeper.hpp"

#include <algorithm>

#include "codeact/core/log.hpp"

namespace codeact::server {

SandboxSweeper::Delays SandboxSweeper::default_delays() {
  using std::chrono::seconds;
  return {seconds(5), seconds(30), seconds(120)};
}

SandboxSweeper::SandboxSweeper(std::shared_ptr<sandbox::SandboxBackend> sandboxes, Delays after)
    : sandboxes_(std::move(sandboxes)), after_(std::move(after)) {
  thread_ = std::thread([this] { loop(); });
}

SandboxSweeper::~SandboxSweeper() { stop(); }

void SandboxSweeper::sweep_later(const std::string& id, bool volume) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    for (auto d : after_) pending_.push_back({now + d, id, volume});
  }
  cv_.notify_all();
}

void SandboxSweeper::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    pending_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

size_t SandboxSweeper::pending() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}

void SandboxSweeper::loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (pending_.empty()) {
      cv_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
      continue;
    }
    auto next = std::min_element(pending_.begin(), pending_.end(),
                                 [](const auto& a, const auto& b) { return a.at < b.at; });
    if (next->at > std::chrono::steady_clock::now()) {
      cv_.wait_until(lock, next->at);
      continue;
    }
    Removal due = *next;
    pending_.erase(next);
    lock.unlock();
    auto s = sandboxes_->remove(due.id, due.volume);
    if (s.ok())
      core::log().info("removed sandbox {} again: it was created after its workflow was deleted",
                       due.id);
    else if (s.error().code() != core::Code::kNotFound)
      core::log().warn("removing deleted sandbox {} again failed: {}", due.id,
                       s.error().to_string());
    lock.lock();
  }
}

}  // namespace codeact::server
