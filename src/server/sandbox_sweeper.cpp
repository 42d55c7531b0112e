#include "sandbox_sweeper.hpp"

#include <algorithm>

#include "codeact/core/json.hpp"
#include "codeact/core/log.hpp"
#include "private_file.hpp"

namespace codeact::server {

SandboxSweeper::Delays SandboxSweeper::default_delays() {
  using std::chrono::seconds;
  return {seconds(5), seconds(30), seconds(120)};
}

namespace {

using SystemClock = std::chrono::system_clock;

int64_t unix_millis(SystemClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

}  // namespace

SandboxSweeper::SandboxSweeper(std::shared_ptr<sandbox::SandboxBackend> sandboxes, Delays after,
                               std::string journal)
    : sandboxes_(std::move(sandboxes)), after_(std::move(after)), journal_(std::move(journal)) {
  load_journal();
  thread_ = std::thread([this] { loop(); });
}

void SandboxSweeper::load_journal() {
  if (journal_.empty()) return;
  auto j = read_state_file(journal_);
  if (!j.ok() && j.error().code() == core::Code::kNotFound) return;  // none yet
  if (!j.ok() || !j->is_array()) {
    core::log().warn("server: ignoring the sandbox sweeps in {} ({})", journal_,
                     j.ok() ? "not a JSON list" : j.error().message());
    return;
  }
  // A time past the longest delay from now (a clock set back, a file edited) is due then.
  const int64_t latest =
      unix_millis(SystemClock::now()) +
      (after_.empty() ? 0 : std::max_element(after_.begin(), after_.end())->count());
  for (const auto& r : *j) {
    const std::string id = core::json_string(r, "id");
    if (id.empty()) continue;
    const int64_t at = std::clamp<int64_t>(core::json_int(r, "at"), 0, latest);
    pending_.push_back(
        {SystemClock::time_point(std::chrono::milliseconds(at)), id, core::json_bool(r, "volume")});
  }
}

void SandboxSweeper::save_journal_locked() const {
  if (journal_.empty()) return;
  core::Json j = core::Json::array();
  for (const auto& r : pending_)
    j.push_back({{"id", r.id}, {"volume", r.volume}, {"at", unix_millis(r.at)}});
  auto written = write_private_file(journal_, j.dump());
  if (!written.ok())
    core::log().warn("server: {}; the sandbox sweeps due are not kept across a restart",
                     written.error().message());
}

SandboxSweeper::~SandboxSweeper() { stop(); }

void SandboxSweeper::sweep_later(const std::string& id, bool volume) {
  const auto now = SystemClock::now();
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    for (auto d : after_) pending_.push_back({now + d, id, volume});
    save_journal_locked();
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
    const auto wait = next->at - SystemClock::now();
    if (wait > SystemClock::duration::zero()) {
      // Woken early by a new removal or stop(); a wall clock that jumps is read again then.
      cv_.wait_for(lock, std::min<SystemClock::duration>(wait, std::chrono::seconds(5)));
      continue;
    }
    Removal due = *next;
    // Done, then struck from the journal: a server that dies in between does it again.
    lock.unlock();
    auto s = sandboxes_->remove(due.id, due.volume);
    if (s.ok())
      core::log().info("removed sandbox {} again: it was created after its workflow was deleted",
                       due.id);
    else if (s.error().code() != core::Code::kNotFound)
      core::log().warn("removing deleted sandbox {} again failed: {}", due.id,
                       s.error().to_string());
    lock.lock();
    auto done = std::find_if(pending_.begin(), pending_.end(), [&](const Removal& r) {
      return r.at == due.at && r.id == due.id && r.volume == due.volume;
    });
    if (done != pending_.end()) {  // not if stop() dropped it meanwhile
      pending_.erase(done);
      save_journal_locked();
    }
  }
}

}  // namespace codeact::server
