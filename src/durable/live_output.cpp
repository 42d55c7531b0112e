// The live-output hub: per-subscriber queues under one mutex, one delivery thread that takes
// them in turn (one chunk at a time), and the offset counting of a call's sink.
#include "codeact/durable/live_output.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "codeact/core/log.hpp"

namespace codeact::durable {

struct LiveOutput::Hub {
  struct Subscriber {
    uint64_t id = 0;
    std::string workflow_id;
    Callback callback;
    // The rest is GUARDED_BY(mu) of the hub.
    std::deque<LiveChunk> queue;
    int64_t queued_bytes = 0;
    bool ready = false;    // in `ready_list`
    bool active = true;    // false once its subscription ended
    bool running = false;  // the delivery thread is in its callback
  };

  explicit Hub(LiveOutputOptions o) : options(o) {}

  const LiveOutputOptions options;
  std::mutex mu;
  std::condition_variable wake;       // the delivery thread: something is ready, or stop
  std::condition_variable delivered;  // an unsubscriber: a callback returned
  bool stopping = false;              // GUARDED_BY(mu)
  uint64_t next_id = 1;               // GUARDED_BY(mu)
  int64_t dropped = 0;                // GUARDED_BY(mu)
  // GUARDED_BY(mu): the active subscribers by workflow id, and those with chunks queued in turn.
  std::unordered_map<std::string, std::vector<std::shared_ptr<Subscriber>>> by_workflow;
  std::deque<std::shared_ptr<Subscriber>> ready_list;
  std::thread thread;  // set once, by LiveOutput's constructor

  // Delivers one chunk at a time, taking subscribers in turn: one with much queued does not hold
  // back the others' next chunk.
  void run() {
    std::unique_lock lock(mu);
    while (true) {
      wake.wait(lock, [this] { return stopping || !ready_list.empty(); });
      if (stopping) return;
      std::shared_ptr<Subscriber> s = std::move(ready_list.front());
      ready_list.pop_front();
      s->ready = false;
      if (!s->active || s->queue.empty()) continue;
      LiveChunk chunk = std::move(s->queue.front());
      s->queue.pop_front();
      s->queued_bytes -= static_cast<int64_t>(chunk.text.size());
      s->running = true;
      lock.unlock();
      try {
        s->callback(chunk);
      } catch (const std::exception& e) {
        core::log().warn("live output of workflow \"{}\": a subscriber's callback threw: {}",
                         s->workflow_id, e.what());
      } catch (...) {
        core::log().warn("live output of workflow \"{}\": a subscriber's callback threw",
                         s->workflow_id);
      }
      lock.lock();
      s->running = false;
      delivered.notify_all();
      if (s->active && !s->queue.empty() && !s->ready) {
        s->ready = true;
        ready_list.push_back(std::move(s));
      }
    }
  }

  void publish(LiveChunk chunk) {
    bool woke = false;
    {
      std::lock_guard lock(mu);
      if (stopping) return;
      auto it = by_workflow.find(chunk.workflow_id);
      if (it == by_workflow.end()) return;
      const auto size = static_cast<int64_t>(chunk.text.size());
      for (const auto& s : it->second) {
        if (s->queued_bytes + size > options.max_queued_bytes) {
          ++dropped;
          continue;
        }
        s->queue.push_back(chunk);
        s->queued_bytes += size;
        if (!s->ready) {
          s->ready = true;
          ready_list.push_back(s);
          woke = true;
        }
      }
    }
    if (woke) wake.notify_one();
  }

  void unsubscribe(uint64_t id) {
    std::unique_lock lock(mu);
    std::shared_ptr<Subscriber> s;
    for (auto it = by_workflow.begin(); it != by_workflow.end(); ++it) {
      auto& subs = it->second;
      auto found =
          std::find_if(subs.begin(), subs.end(), [&](const auto& x) { return x->id == id; });
      if (found == subs.end()) continue;
      s = *found;
      subs.erase(found);
      if (subs.empty()) by_workflow.erase(it);
      break;
    }
    if (!s) return;
    s->active = false;
    s->queue.clear();
    s->queued_bytes = 0;
    // From its own callback it cannot wait for the callback to return; it gets no more chunks.
    if (std::this_thread::get_id() == thread.get_id()) return;
    delivered.wait(lock, [&] { return !s->running; });
  }

  void stop() {
    {
      std::lock_guard lock(mu);
      stopping = true;
      by_workflow.clear();
      ready_list.clear();
    }
    wake.notify_all();
    if (thread.joinable()) thread.join();
    delivered.notify_all();
  }
};

LiveOutput::LiveOutput(LiveOutputOptions options) : hub_(std::make_shared<Hub>(options)) {
  hub_->thread = std::thread([hub = hub_.get()] { hub->run(); });
}

LiveOutput::~LiveOutput() { hub_->stop(); }

LiveOutput::Subscription LiveOutput::subscribe(std::string workflow_id, Callback callback) {
  auto s = std::make_shared<Hub::Subscriber>();
  s->workflow_id = workflow_id;
  s->callback = std::move(callback);
  std::lock_guard lock(hub_->mu);
  if (hub_->stopping) return Subscription();
  s->id = hub_->next_id++;
  hub_->by_workflow[std::move(workflow_id)].push_back(s);
  return Subscription(hub_, s->id);
}

void LiveOutput::publish(LiveChunk chunk) { hub_->publish(std::move(chunk)); }

agent::ToolOutputSink LiveOutput::call_sink(std::string workflow_id, const agent::RunContext& ctx) {
  struct Call {
    std::mutex mu;  // one piece at a time, so the offsets follow the order of publishing
    std::map<std::string, int64_t> sent;  // GUARDED_BY(mu): bytes per stream
  };
  LiveChunk base;
  base.workflow_id = std::move(workflow_id);
  base.run_id = ctx.run_id;
  base.run_step = ctx.run_step;
  base.tool_call_id = ctx.tool_call_id;
  return [hub = hub_, base = std::move(base), call = std::make_shared<Call>()](
             const std::string& stream, const std::string& text) {
    if (text.empty()) return;
    LiveChunk chunk = base;
    chunk.stream = stream;
    chunk.text = text;
    std::lock_guard lock(call->mu);
    int64_t& sent = call->sent[stream];
    chunk.offset = sent;
    sent += static_cast<int64_t>(text.size());
    hub->publish(std::move(chunk));
  };
}

int64_t LiveOutput::dropped() const {
  std::lock_guard lock(hub_->mu);
  return hub_->dropped;
}

LiveOutput::Subscription::Subscription(Subscription&& other) noexcept
    : hub_(std::move(other.hub_)), id_(other.id_) {
  other.id_ = 0;
}

LiveOutput::Subscription& LiveOutput::Subscription::operator=(Subscription&& other) noexcept {
  if (this != &other) {
    reset();
    hub_ = std::move(other.hub_);
    id_ = other.id_;
    other.id_ = 0;
  }
  return *this;
}

void LiveOutput::Subscription::reset() {
  if (id_ == 0) return;
  if (auto hub = hub_.lock()) hub->unsubscribe(id_);
  hub_.reset();
  id_ = 0;
}

std::string LiveOutputCursor::unseen(const LiveChunk& chunk) {
  int64_t& had = seen_[Key{chunk.run_id, chunk.run_step, chunk.tool_call_id, chunk.stream}];
  const int64_t end = chunk.offset + static_cast<int64_t>(chunk.text.size());
  if (end <= had) return "";
  const int64_t from = chunk.offset < had ? had - chunk.offset : 0;
  had = end;
  return chunk.text.substr(static_cast<size_t>(from));
}

}  // namespace codeact::durable
