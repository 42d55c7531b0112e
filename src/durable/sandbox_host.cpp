// SandboxHost: the routing of a run's activities to its sandbox's host (sandbox_host.hpp).
#include "codeact/durable/sandbox_host.hpp"

#include <fmt/format.h>

#include "codeact/durable/activities.hpp"

namespace codeact::durable {

std::string host_task_queue(std::string_view task_queue, std::string_view host) {
  return fmt::format("{}@{}", task_queue, host);
}

SandboxHost::SandboxHost(std::string task_queue, std::string host,
                         std::chrono::milliseconds timeout)
    : task_queue_(std::move(task_queue)), host_(std::move(host)), timeout_(timeout) {}

ActivityRoute SandboxHost::route() const {
  if (host_.empty()) return {};
  return {host_task_queue(task_queue_, host_), timeout_};
}

void SandboxHost::learn(std::string_view activity, const core::Json& result) {
  if (activity != kSandboxStartActivity) return;
  std::string host = core::json_string(result, "host");
  if (!host.empty()) host_ = std::move(host);
}

core::Error SandboxHost::lost(std::string_view activity) const {
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
