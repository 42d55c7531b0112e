// The worker's reaper: stops the running sandboxes of codeact workflows that ended without
// running their cleanup (terminated or timed out: no workflow code runs then), volume kept.
// CodeActWorkerRunner starts one (WorkerRunnerOptions::reap_interval_seconds); internal to the
// durable layer (runner.cpp, tests/durable/reaper_itest.cpp).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "codeact/sandbox/sandbox_backend.hpp"
#include "codeact/temporal/client.hpp"

namespace codeact::durable::internal {

// What one pass did: the sandboxes it stopped, and what went wrong (listing the sandboxes,
// asking Temporal about a workflow, stopping a sandbox), each saying which sandbox.
struct ReapResult {
  std::vector<std::string> stopped;
  std::vector<std::string> problems;
};

// One pass: every running sandbox whose id is the id of a codeact workflow (task, chat, simple
// agent) that ended Terminated or TimedOut is stopped. A sandbox of no workflow, of another
// workflow type, or of a running or cleanly ended one is left alone.
ReapResult reap_orphaned_sandboxes(temporal::Client& client, sandbox::SandboxBackend& backend);

// A pass every `interval` on a thread of its own, each problem logged as a warning, until
// stop() or destruction. REQUIRES: `client` outlives this object. stop() is thread-safe and
// idempotent.
class Reaper {
 public:
  Reaper(temporal::Client& client, std::shared_ptr<sandbox::SandboxBackend> backend,
         std::chrono::milliseconds interval);
  ~Reaper();
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;
  void stop();

 private:
  temporal::Client& client_;
  std::shared_ptr<sandbox::SandboxBackend> backend_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // GUARDED_BY(mu_)
  std::mutex join_mu_;
  std::thread thread_;  // joined under join_mu_
};

}  // namespace codeact::durable::internal
