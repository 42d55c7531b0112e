#include "event_waker.hpp"

#include <string_view>

#include "codeact/core/strings.hpp"

namespace codeact::server {

bool EventWaker::send(std::string chunk) {
  if (closed()) return false;
  bool hit = false;
  SseEvent e;
  // An event is its lines up to an empty one; wire() writes the event line before the data.
  for (const std::string& line : core::split(chunk, '\n')) {
    if (hit) break;
    const std::string_view l(line);
    if (l.substr(0, 7) == "event: ") {
      e = SseEvent{"", std::string(l.substr(7)), Json::object()};
    } else if (l.substr(0, 6) == "data: " && !e.type.empty()) {
      auto data = Json::parse(l.substr(6), nullptr, false);
      if (!data.is_discarded()) e.data = std::move(data);
      hit = wakes_(e);
      e = SseEvent{};
    }
  }
  std::lock_guard lock(mu_);
  if (closed_) return false;
  if (hit) {
    woken_ = true;
    cv_.notify_all();
  }
  return true;
}

void EventWaker::close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

bool EventWaker::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

bool EventWaker::wait(std::chrono::steady_clock::time_point until) {
  std::unique_lock lock(mu_);
  cv_.wait_until(lock, until, [this] { return woken_ || closed_; });
  const bool woken = woken_;
  woken_ = false;
  return woken;
}

}  // namespace codeact::server
