#include "codeact/core/log.hpp"
#include "codeact/temporal/activity.hpp"
#include "codec.hpp"
#include "service_connection.hpp"

namespace codeact::temporal {

ActivityContext::ActivityContext(ActivityInfo info, Args heartbeat_details,
                                 std::shared_ptr<internal::ServiceConnection> conn)
    : info_(std::move(info)),
      heartbeat_details_(std::move(heartbeat_details)),
      conn_(std::move(conn)) {}

void ActivityContext::heartbeat(Args details) {
  std::chrono::milliseconds interval(30000);
  if (info_.heartbeat_timeout.count() > 0)
    interval =
        std::min(interval, std::chrono::milliseconds(info_.heartbeat_timeout.count() * 4 / 5));
  bool send = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = std::chrono::steady_clock::now();
    last_details_ = details;
    if (now - last_sent_ >= interval) {
      last_sent_ = now;
      send = true;
    }
  }
  if (send) send_heartbeat(details);
}

std::optional<Args> ActivityContext::last_details() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_details_;
}

void ActivityContext::send_heartbeat(const Args& details) {
  if (!conn_) return;
  internal::wsv1::RecordActivityTaskHeartbeatRequest req;
  req.set_namespace_(conn_->ns());
  req.set_task_token(info_.task_token);
  req.set_identity(conn_->identity());
  if (!details.empty()) internal::encode_payloads(details, req.mutable_details());
  auto r = conn_->call(&internal::wsv1::WorkflowService::Stub::RecordActivityTaskHeartbeat, req,
                       "heartbeat of activity " + info_.activity_type + " id " + info_.activity_id);
  if (!r.ok()) {
    // NotFound: the server no longer knows this attempt (timed out, cancelled, completed).
    if (r.error().code() == core::Code::kNotFound) cancelled_.store(true);
    core::log().debug("{}", r.error().to_string());
    return;
  }
  if (r->cancel_requested()) cancelled_.store(true);
}

}  // namespace codeact::temporal
