#include <mutex>

#include "codeact/core/log.hpp"
#include "codeact/temporal/activity.hpp"
#include "codec.hpp"
#include "service_connection.hpp"

namespace codeact::temporal {

struct ActivityContext::Heartbeats {
  std::shared_ptr<internal::ServiceConnection> conn;
  std::mutex mu;
  std::chrono::steady_clock::time_point last_sent{};  // GUARDED_BY(mu)
  std::optional<Args> last_details;                   // GUARDED_BY(mu)

  // Records the heartbeat with the server.
  enum class Answer { kGoOn, kCancelRequested, kUnknownAttempt };
  Answer send(const ActivityInfo& info, const Args& details);
};

ActivityContext::ActivityContext(ActivityInfo info, Args heartbeat_details,
                                 std::shared_ptr<internal::ServiceConnection> conn)
    : info_(std::move(info)),
      heartbeat_details_(std::move(heartbeat_details)),
      heartbeats_(std::make_unique<Heartbeats>()) {
  heartbeats_->conn = std::move(conn);
}

ActivityContext::~ActivityContext() = default;

void ActivityContext::heartbeat(Args details) {
  std::chrono::milliseconds interval(30000);
  if (info_.heartbeat_timeout.count() > 0)
    interval = std::min(interval, std::chrono::milliseconds(info_.heartbeat_timeout.count() / 2));
  bool send = false;
  {
    std::lock_guard<std::mutex> lock(heartbeats_->mu);
    auto now = std::chrono::steady_clock::now();
    heartbeats_->last_details = details;
    if (now - heartbeats_->last_sent >= interval) {
      heartbeats_->last_sent = now;
      send = true;
    }
  }
  if (!send) return;
  switch (heartbeats_->send(info_, details)) {
    case Heartbeats::Answer::kGoOn:
      break;
    case Heartbeats::Answer::kCancelRequested:
      server_cancelled_.store(true);
      cancelled_.store(true);
      break;
    case Heartbeats::Answer::kUnknownAttempt:
      cancelled_.store(true);
      break;
  }
}

std::optional<Args> ActivityContext::last_details() const {
  std::lock_guard<std::mutex> lock(heartbeats_->mu);
  return heartbeats_->last_details;
}

ActivityContext::Heartbeats::Answer ActivityContext::Heartbeats::send(const ActivityInfo& info,
                                                                      const Args& details) {
  if (!conn) return Answer::kGoOn;
  internal::wsv1::RecordActivityTaskHeartbeatRequest req;
  req.set_namespace_(conn->ns());
  req.set_task_token(info.task_token);
  req.set_identity(conn->identity());
  if (!details.empty()) internal::encode_payloads(details, req.mutable_details());
  auto r = conn->call(&internal::wsv1::WorkflowService::Stub::RecordActivityTaskHeartbeat, req,
                      "heartbeat of activity " + info.activity_type + " id " + info.activity_id);
  if (!r.ok()) {
    core::log().debug("{}", r.error().to_string());
    // NotFound: the server no longer knows this attempt (timed out, cancelled, completed).
    return r.error().code() == core::Code::kNotFound ? Answer::kUnknownAttempt : Answer::kGoOn;
  }
  return r->cancel_requested() ? Answer::kCancelRequested : Answer::kGoOn;
}

}  // namespace codeact::temporal
