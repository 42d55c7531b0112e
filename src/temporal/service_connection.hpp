// The gRPC seam: one channel + WorkflowService stub for a namespace, and the call helper that
// adds credentials and deadlines and turns gRPC statuses into core::Error. Thread-safe.
//
// Outages of the server: the channel reconnects within kMaxReconnectBackoff once the server is
// back; the connection says once (a warning) when a server that answered stops answering and
// once when it answers again, however many calls fail in between (every poller, heartbeat and
// waiter using it); call_retrying() is for the calls worth waiting for. A server that never
// answered is only reported by report_unreachable() (pollers and waiters call it), so probing a
// server that is still starting says nothing.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "codeact/core/result.hpp"
#include "codeact/temporal/client.hpp"
#include "temporal/api/workflowservice/v1/service.grpc.pb.h"

namespace codeact::temporal::internal {

namespace wsv1 = ::temporal::api::workflowservice::v1;

core::Error error_from_grpc(const grpc::Status& status, std::string_view what);

// How soon after a server comes back the channel tries it again, at most.
inline constexpr std::chrono::milliseconds kMaxReconnectBackoff{2000};
// The waits between the attempts of call_retrying(): from the first, doubling up to the last.
inline constexpr std::chrono::milliseconds kFirstRetryWait{200};
inline constexpr std::chrono::milliseconds kLongestRetryWait{5000};

// The next wait of a backoff that starts at kFirstRetryWait and doubles up to kLongestRetryWait.
std::chrono::milliseconds next_retry_wait(std::chrono::milliseconds previous);

class ServiceConnection {
 public:
  static core::Result<std::shared_ptr<ServiceConnection>> create(ClientOptions options);

  const ClientOptions& options() const { return options_; }
  const std::string& ns() const { return options_.ns; }
  const std::string& identity() const { return options_.identity; }
  wsv1::WorkflowService::Stub& stub() { return *stub_; }
  grpc::Channel& channel() { return *channel_; }

  // Adds the API key and the deadline (0 = the default rpc timeout).
  void prepare(grpc::ClientContext& ctx,
               std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) const;

  // Calls `method` on the stub. `ctx` may be given by the caller (to cancel it from elsewhere);
  // it must be fresh and is prepared here.
  template <typename Req, typename Resp>
  core::Result<Resp> call(grpc::Status (wsv1::WorkflowService::Stub::*method)(grpc::ClientContext*,
                                                                              const Req&, Resp*),
                          const Req& request, std::string_view what,
                          std::chrono::milliseconds timeout = std::chrono::milliseconds(0),
                          grpc::ClientContext* ctx = nullptr) {
    grpc::ClientContext local;
    grpc::ClientContext* c = ctx ? ctx : &local;
    prepare(*c, timeout);
    Resp response;
    grpc::Status status = ((*stub_).*method)(c, request, &response);
    note_reachability(status);
    if (!status.ok()) return error_from_grpc(status, what);
    return response;
  }

  // call(), again while the server is unreachable (Unavailable), waiting with backoff, for at
  // most `patience` or until `give_up()` is true (checked between attempts); any other answer is
  // returned at once. For the results of work already done (a completed activity or workflow
  // task) and for waiters that have nothing else to do.
  template <typename Req, typename Resp>
  core::Result<Resp> call_retrying(
      grpc::Status (wsv1::WorkflowService::Stub::*method)(grpc::ClientContext*, const Req&, Resp*),
      const Req& request, std::string_view what, std::chrono::milliseconds patience,
      const std::function<bool()>& give_up = {},
      std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    std::chrono::milliseconds wait{0};
    for (;;) {
      auto r = call(method, request, what, timeout);
      if (r.ok() || r.error().code() != core::Code::kUnavailable) return r;
      wait = next_retry_wait(wait);
      if (!sleep_unless(wait, deadline, give_up)) return r;
    }
  }

  // For a caller that will keep retrying after `error` (Unavailable): says that the server does
  // not answer unless that was said already for this outage.
  void report_unreachable(const core::Error& error);

 private:
  enum class Reachability { kNotYetAnswered, kAnswering, kNotAnswering };
  // Says once when the server stops answering and once when it answers again.
  void note_reachability(const grpc::Status& status);
  // Moves to kNotAnswering from any other state, with a warning; nothing when already there.
  void enter_outage(std::string_view reason);
  // Sleeps `wait` (cut to `deadline`) in short steps; false when the deadline passed or
  // give_up() turned true, without sleeping further.
  static bool sleep_unless(std::chrono::milliseconds wait,
                           std::chrono::steady_clock::time_point deadline,
                           const std::function<bool()>& give_up);

  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<wsv1::WorkflowService::Stub> stub_;
  std::mutex outage_mu_;  // guards the two below
  Reachability reachability_ = Reachability::kNotYetAnswered;
  std::chrono::steady_clock::time_point outage_since_;
};

}  // namespace codeact::temporal::internal
