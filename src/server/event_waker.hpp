// An EventStream that keeps no events, only wakes a handler waiting for a certain one.
//
// POST /chat waits for its turn's answer through the session's EventHub feed (the one upstream
// per session) instead of polling the workflow itself: subscribe an EventWaker
// (EventHub::subscribe_live), ask the workflow, and ask again each time wait() says an event
// that `wakes` picks arrived. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>

#include "codeact/server/events.hpp"
#include "codeact/server/http.hpp"

namespace codeact::server {

class EventWaker : public EventStream {
 public:
  // `wakes` sees each event (type and data; the id is left empty) on the thread that sends it,
  // with the feed's lock held: it must be quick and must not call into the hub.
  explicit EventWaker(std::function<bool(const SseEvent&)> wakes) : wakes_(std::move(wakes)) {}

  // Reads the events of `chunk` (SseEvent::wire() text, one or more events; comments are
  // skipped) and notes whether `wakes` picked one. False once closed.
  bool send(std::string chunk) override;
  void close() override;
  bool closed() const override;

  // Until an event that `wakes` picked arrived since the last wait(), the stream closed, or
  // `until`. True when such an event arrived (the flag is then cleared); false on a timeout or a
  // close.
  bool wait(std::chrono::steady_clock::time_point until);

 private:
  const std::function<bool(const SseEvent&)> wakes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;   // GUARDED_BY(mu_)
  bool closed_ = false;  // GUARDED_BY(mu_)
};

}  // namespace codeact::server
