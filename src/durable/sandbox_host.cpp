// SandboxHost: the routing of a run's activities to its sandbox's host (sandbox_host.hpp).
#include "codeact/durable/sandbox_host.hpp"

#include <fmt/format.h>

#include "codeact/durable/activities.hpp"

namespace codeact::durable {

std::string host_task_queue(std::string_view task_queue, std::string_view host) {
  return fmt::format("{}@{}", task_queue, host);
}

SandboxHost::SandboxHost(std::string task_queue, std::string host,
                         std::chrono::milliseconds timeout, bool shared)
    : task_queue_(std::move(task_queue)),
      host_(std::move(host)),
      timeout_(timeout),
      shared_(shared) {}

ActivityRoute SandboxHost::route() const {
  if (host_.empty()) return {};
  return {host_task_queue(task_queue_, host_), timeout_};
}

void SandboxHost::learn(std::string_view activity, const core::Json& result) {
  if (activity != kSandboxStartActivity) return;
  std::string host = core::json_string(result, "host");
  if (host.empty()) return;
  host_ = std::move(host);
  shared_ = result.is_object() && result.value("shared", false);
  if (moved_from_.empty()) return;
  if (moved_from_ == host_) {
    moved_from_.clear();
    return;
  }
  move_note_ = fmt::format(
      "[The sandbox moved from host \"{}\" to host \"{}\": \"{}\" stopped answering (none of "
      "its workers took {} within {} s). Its variables and files are those of its last committed "
      "cell (cell {}) on the shared storage; what a cell did after that on \"{}\" is gone, and "
      "processes it started are not running. Check the state before relying on it.]\n",
      moved_from_, host_, moved_from_, moved_after_,
      std::chrono::duration<double>(timeout_).count(), core::json_int(result, "cell"), moved_from_);
  moved_from_.clear();
}

bool SandboxHost::can_move() const { return shared_ && timeout_.count() > 0 && !host_.empty(); }

void SandboxHost::move_failed() {
  if (host_.empty()) host_ = moved_from_;
  moved_from_.clear();
}

void SandboxHost::move_away(std::string_view activity) {
  moved_from_ = host_;
  moved_after_ = std::string(activity);
  host_.clear();
}

core::Error SandboxHost::lost(std::string_view activity) const {
  if (shared_) {
    return core::Error(
        core::Code::kUnavailable,
        fmt::format("the sandbox's host \"{}\" is lost: no worker of it took {} from task queue "
                    "{} within {} s, and the sandbox was moved to another host as many times as "
                    "a run allows for one step; its state is on the shared storage, so running "
                    "the same command again goes on from its last committed cell",
                    host_, activity, host_task_queue(task_queue_, host_),
                    std::chrono::duration<double>(timeout_).count()));
  }
  return core::Error(
      core::Code::kUnavailable,
      fmt::format("the sandbox's host \"{}\" is lost: no worker of it took {} from task queue {} "
                  "within {} s (its workers are stopped, or cut off from Temporal). The "
                  "sandbox's state is on that host's local volume, so the run cannot move to "
                  "another host (that needs shared storage, docs/deploy.md). When the host is "
                  "back, a run pinned to it (`codeact run --host {}`, the same sandbox id) goes "
                  "on from the sandbox's last committed cell",
                  host_, activity, host_task_queue(task_queue_, host_),
                  std::chrono::duration<double>(timeout_).count(), host_));
}

}  // namespace codeact::durable
