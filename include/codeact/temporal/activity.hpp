// Activities: ordinary functions (Args -> Result<Json>) that do the workflow's I/O.
//
// An activity runs on a worker thread with an ActivityContext: its info, heartbeats (throttled;
// the last details are readable on the next attempt through heartbeat_details()) and
// cancellation, which the server reports in the answer to a heartbeat, so a cancellable
// activity must heartbeat. The server applies the retry policy. Returning an Error fails the
// attempt with an ApplicationFailure whose type is the error's code name, non-retryable when
// the code is not retryable (core::is_retryable); throwing ApplicationError gives full control
// of type, message, non_retryable and details. Other exceptions fail the attempt (retryable).
// Returning Cancelled after cancellation was requested reports the activity as cancelled.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "codeact/core/result.hpp"
#include "codeact/temporal/failure.hpp"
#include "codeact/temporal/payload.hpp"

namespace codeact::temporal {

namespace internal {
class ServiceConnection;
}

struct ActivityInfo {
  std::string activity_id;
  std::string activity_type;
  std::string workflow_id;
  std::string run_id;
  std::string workflow_type;
  std::string workflow_namespace;
  std::string task_queue;
  int attempt = 1;
  std::chrono::milliseconds heartbeat_timeout{0};
  std::chrono::milliseconds start_to_close_timeout{0};
  std::string task_token;  // opaque; "" for a local activity
  bool local = false;      // a local activity (run inside the workflow's task; no heartbeats)
};

// Thread-safe: heartbeat() and cancelled() may be called from any thread of the activity.
class ActivityContext {
 public:
  // Made by the Worker for each attempt; `conn` (null in tests: heartbeats go nowhere) is where
  // heartbeats are sent.
  ActivityContext(ActivityInfo info, Args heartbeat_details,
                  std::shared_ptr<internal::ServiceConnection> conn);
  ~ActivityContext();
  ActivityContext(const ActivityContext&) = delete;
  ActivityContext& operator=(const ActivityContext&) = delete;

  const ActivityInfo& info() const { return info_; }
  // Details recorded by the last heartbeat of a previous attempt (empty on the first).
  const Args& heartbeat_details() const { return heartbeat_details_; }
  // Records progress. Sent to the server at most once per throttle interval (half the heartbeat
  // timeout, at most 30 s: a caller beating every half second or so is never late, RPC time
  // included); a newer call's details replace unsent ones.
  void heartbeat(Args details = {});
  // True once the server asked to cancel this activity (seen through a heartbeat answer) or
  // the worker is shutting down past its deadline.
  bool cancelled() const { return cancelled_.load(); }
  void request_cancel() { cancelled_.store(true); }
  // True once the server asked to cancel this activity (its workflow cancelled it) — not when
  // the worker shuts down or the server no longer knows this attempt (it may be retried).
  bool cancel_requested_by_server() const { return server_cancelled_.load(); }
  // The details of the last heartbeat call (sent or not), for the failure report.
  std::optional<Args> last_details() const;

 private:
  struct Heartbeats;  // throttling state and the connection they go to

  ActivityInfo info_;
  Args heartbeat_details_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> server_cancelled_{false};
  std::unique_ptr<Heartbeats> heartbeats_;
};

using ActivityFunction = std::function<core::Result<Json>(ActivityContext&, const Args&)>;

}  // namespace codeact::temporal
