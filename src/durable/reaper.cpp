// The worker's reaper (reaper.hpp).
#include "reaper.hpp"

#include "codeact/core/log.hpp"
#include "codeact/durable/workflows.hpp"

namespace codeact::durable::internal {

ReapResult reap_orphaned_sandboxes(temporal::Client& client, sandbox::SandboxBackend& backend) {
  ReapResult out;
  auto sandboxes = backend.list();
  if (!sandboxes.ok()) {
    out.problems.push_back("listing the sandboxes failed: " + sandboxes.error().message());
    return out;
  }
  for (const auto& sb : *sandboxes) {
    if (!sb.running) continue;
    auto d = client.describe_workflow(sb.id);
    if (!d.ok()) {
      // No workflow of that id: a sandbox of someone else, nothing to do.
      if (d.error().code() != core::Code::kNotFound) {
        out.problems.push_back("sandbox \"" + sb.id + "\": asking Temporal about workflow \"" +
                               sb.id + "\" failed: " + d.error().message());
      }
      continue;
    }
    const bool ours = d->workflow_type == kTaskWorkflow || d->workflow_type == kChatWorkflow ||
                      d->workflow_type == kSimpleAgentWorkflow;
    // Completed, failed and cancelled runs cleaned up themselves (or kept the sandbox on purpose).
    if (!ours || (d->status != "Terminated" && d->status != "TimedOut")) continue;
    auto stopped = backend.stop(sb.id);
    if (!stopped.ok()) {
      out.problems.push_back(
          "sandbox \"" + sb.id + "\": its workflow ended " + d->status +
          " without cleaning up, and stopping it failed: " + stopped.error().message());
      continue;
    }
    core::log().info("stopped sandbox {}: its workflow ended {} without cleaning up (volume kept)",
                     sb.id, d->status);
    out.stopped.push_back(sb.id);
  }
  return out;
}

Reaper::Reaper(temporal::Client& client, std::shared_ptr<sandbox::SandboxBackend> backend,
               std::chrono::milliseconds interval)
    : client_(client), backend_(std::move(backend)) {
  thread_ = std::thread([this, interval] {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, interval, [this] { return stop_; })) {
      lock.unlock();
      for (const auto& problem : reap_orphaned_sandboxes(client_, *backend_).problems)
        core::log().warn("reaper: {}", problem);
      lock.lock();
    }
  });
}

Reaper::~Reaper() { stop(); }

void Reaper::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  std::lock_guard lock(join_mu_);  // two threads stopping at once join once
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

}  // namespace codeact::durable::internal
