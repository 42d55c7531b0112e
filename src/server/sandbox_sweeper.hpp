// Removes a deleted workflow's sandbox again, a few times after the DELETE that removed it.
//
// DELETE /v1/{runs,sessions}/{id} terminates the workflow, then removes its sandbox. A
// codeact.sandbox_start activity that was running at that moment is not told: it goes on in its
// worker and can create the container after the DELETE removed it. The activity then sees that
// its workflow is gone and removes the container itself (WorkerEnv::workflow_ended), but keeps
// the volume, not knowing whether the DELETE asked for it to go. So the server removes the
// sandbox (with its volume when asked) again at each delay of `after` (counted from the DELETE).
// A removal that finds nothing is quiet; one that fails is logged. With a journal file, the
// removals still due outlive the server: a server started again on it does those that fell due
// while none ran at once, the others at their time. Without one, they are dropped when the
// server stops (a volume, if any, is left for `codeact sandbox rm`). One thread; thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "codeact/sandbox/sandbox_backend.hpp"

namespace codeact::server {

class SandboxSweeper {
 public:
  using Delays = std::vector<std::chrono::milliseconds>;
  static Delays default_delays();  // 5 s, 30 s, 2 min

  // `journal` ("" = none): the file that keeps the removals due, a JSON list
  // [{"id", "volume", "at": unix milliseconds}], mode 0600, rewritten at each change and read
  // here. An unreadable journal is logged and ignored.
  explicit SandboxSweeper(std::shared_ptr<sandbox::SandboxBackend> sandboxes,
                          Delays after = default_delays(), std::string journal = "");
  ~SandboxSweeper();  // stop()
  SandboxSweeper(const SandboxSweeper&) = delete;
  SandboxSweeper& operator=(const SandboxSweeper&) = delete;

  // Sandbox `id` (with its volume when `volume`) is removed again after each delay.
  void sweep_later(const std::string& id, bool volume);
  // Ends the thread; pending removals stay in the journal (dropped without one). Idempotent.
  void stop();
  size_t pending() const;

 private:
  struct Removal {
    std::chrono::system_clock::time_point at;  // wall time: it is kept across restarts
    std::string id;
    bool volume = false;
  };
  void loop();
  void load_journal();
  void save_journal_locked() const;

  std::shared_ptr<sandbox::SandboxBackend> sandboxes_;
  Delays after_;
  std::string journal_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Removal> pending_;  // GUARDED_BY(mu_)
  bool stopping_ = false;         // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace codeact::server
