// LiveOutput: a process-local publish/subscribe hub for what a tool call prints while it runs in
// durable mode (a cell's stdout and stderr before its result).
//
// Why a hub and not the workflow: the call runs in a codeact.tool_call activity on a worker, and
// the workflow only learns its result when the activity completes; putting output into workflow
// state would put it into the replayed history. So the activity publishes the output here, keyed
// by the workflow id, and a subscriber in the same process (the HTTP server that hosts the
// worker) gets it as it comes. Nothing of it is durable: a subscriber sees what is published
// while it is subscribed (no replay for late subscribers, nothing kept for workflows nobody
// watches); the whole output is in the call's result when it ends.
//
// Publishing never waits for a subscriber: publish() only queues (under a short lock) and one
// delivery thread of the hub calls the callbacks, one chunk at a time, taking the subscribers with
// chunks queued in turn. What waits for one subscriber is bounded (LiveOutputOptions::
// max_queued_bytes, besides the chunk its callback has); a chunk that does not fit is dropped for
// that subscriber (dropped() counts them), which it notices as a gap in the offsets. A slow
// callback delays the chunks of other subscribers, never a cell: a callback should hand the chunk
// on (to its own queue) and return.
//
// Offsets, and what a subscriber does with them (LiveOutputCursor does it): every chunk says at
// which byte of its stream it starts, counted per (run_id, run_step, tool_call_id, stream) — the
// call's execution id (codeact::SandboxTools::execution_id) and the stream — from 0 in each
// attempt of the activity. A retried activity whose cell runs again sends its output again from
// 0, so a subscriber keeps how many bytes of each call's stream it has and shows only the bytes
// past them; a chunk starting past them follows a gap (dropped chunks).
//
// Ordering: each subscriber gets the chunks of its workflow in the order publish() was called
// (so each stream of a call in offset order), one callback at a time, on the hub's thread.
//
// Thread-safety: every method may be called from any thread, a callback included (a callback may
// publish, subscribe or end its own subscription). REQUIRES: the hub is not destroyed from one
// of its callbacks.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "codeact/agent/toolset.hpp"

namespace codeact::durable {

// A piece of a running call's output.
struct LiveChunk {
  std::string workflow_id;  // the workflow the call works for (what subscribers ask for)
  std::string run_id;       // agent::RunContext::run_id: "<workflow id>/<first run id>[/<turn>]"
  int run_step = 0;
  std::string tool_call_id;
  std::string stream;  // "stdout" | "stderr"
  std::string text;    // the next piece of the stream, as the kernel sent it (not cut into lines)
  int64_t offset = 0;  // bytes of this call's stream published before `text` in this attempt
  bool operator==(const LiveChunk&) const = default;
};

struct LiveOutputOptions {
  // Text bytes that may wait for one subscriber; a chunk that would go past it is dropped for
  // that subscriber. Default 1 MiB (a cell streams at most about 3x SandboxToolsOptions::
  // max_output_bytes per stream).
  int64_t max_queued_bytes = int64_t{1} << 20;
};

class LiveOutput {
  struct Hub;  // the shared state and the delivery thread (live_output.cpp)

 public:
  using Callback = std::function<void(const LiveChunk&)>;

  // One subscriber's registration; ends when destroyed or reset(). Move-only. May outlive the
  // hub (it then does nothing).
  class Subscription {
   public:
    Subscription() = default;
    Subscription(Subscription&& other) noexcept;
    Subscription& operator=(Subscription&& other) noexcept;
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    ~Subscription() { reset(); }

    // Ends it: once reset() returns the callback is not running and is never called again
    // (called from the callback itself, the callback finishes its current chunk and gets no
    // more). Chunks still queued for it are dropped. Idempotent.
    void reset();
    // True until reset().
    explicit operator bool() const { return id_ != 0; }

   private:
    friend class LiveOutput;
    Subscription(std::weak_ptr<Hub> hub, uint64_t id) : hub_(std::move(hub)), id_(id) {}
    std::weak_ptr<Hub> hub_;
    uint64_t id_ = 0;
  };

  explicit LiveOutput(LiveOutputOptions options = {});
  // Stops the delivery thread (after the callback running, if any); queued chunks are dropped.
  ~LiveOutput();
  LiveOutput(const LiveOutput&) = delete;
  LiveOutput& operator=(const LiveOutput&) = delete;

  // `callback` gets every chunk published for `workflow_id` from now until the subscription
  // ends. Several subscribers of one workflow each get every chunk. REQUIRES: callback is set.
  // An exception escaping it is caught and logged (the subscription goes on).
  [[nodiscard]] Subscription subscribe(std::string workflow_id, Callback callback);

  // Queues `chunk` for the subscribers of chunk.workflow_id; returns at once (none: dropped).
  void publish(LiveChunk chunk);

  // The output sink of one call (RunContext::on_output) for an activity working for
  // `workflow_id`: publishes each piece as a chunk of `ctx`'s run_id, run_step and tool_call_id,
  // with its offset counted from 0 per stream. Keeps the hub alive while it is kept.
  agent::ToolOutputSink call_sink(std::string workflow_id, const agent::RunContext& ctx);

  // Chunks dropped so far because a subscriber was too slow (its queue was full).
  int64_t dropped() const;

 private:
  std::shared_ptr<Hub> hub_;
};

// What a subscriber keeps to show each byte of a call's stream once (see the offsets above):
// unseen() gives the part of a chunk's text past what it has had of that stream. Not
// thread-safe (one per subscriber, used from its callback). Keeps a counter per call and stream.
class LiveOutputCursor {
 public:
  // "" for a repeat (a retried activity sending again what was shown); the tail past what was
  // had for an overlap; the whole text after a gap (chunks dropped: the result has them).
  std::string unseen(const LiveChunk& chunk);

 private:
  using Key = std::tuple<std::string, int, std::string, std::string>;  // run, step, call, stream
  std::map<Key, int64_t> seen_;  // bytes had of each call's stream
};

}  // namespace codeact::durable
