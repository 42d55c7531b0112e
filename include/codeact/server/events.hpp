// The event streams of runs and sessions (docs/server.md, "Events"): the workflows' "progress"
// events turned into the page's events, with ids that make Last-Event-ID resume exact, and one
// upstream poll per workflow fanned out to every client watching it.
//
// Ids: "<run>.<index>.<sub>", where <run> is the first 8 characters of the workflow run's id,
// <index> the progress event's index in that run and <sub> the position among the events that
// progress event became (0, 1, ...). Events that are not in the workflow's progress (a status
// change, a cell's live output) come between two progress events: index = the last one seen,
// sub = 1000 + a counter. Progress events are the workflow's own, so their ids are the same after
// a server restart; the in-between events are kept while this process runs.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "codeact/core/json.hpp"
#include "codeact/durable/live_output.hpp"
#include "codeact/server/http.hpp"
#include "codeact/temporal/client.hpp"

namespace codeact::server {

struct SseEvent {
  std::string id;
  std::string type;  // docs/server.md's `event`
  Json data = Json::object();
  // "id: ...\nevent: ...\ndata: {...}\n\n" (the JSON has no newline).
  std::string wire() const;
};

// Where an event id points; parse_event_id gives nullopt for an id this server did not make.
struct EventPosition {
  std::string run;
  int64_t index = -1;
  int64_t sub = 0;
  bool operator<(const EventPosition& o) const {
    return index != o.index ? index < o.index : sub < o.sub;
  }
};
std::optional<EventPosition> parse_event_id(const std::string& id);

// Turns one progress event (durable::ProgressReply::events[i]) into the page's events. Events of
// no interest to the page give none. `state` carries what a later event needs from an earlier
// one. A cell's duration is the one its sandbox measured (the result's "duration_ms"); results
// recorded before they carried it have none.
struct TranslateState {
  std::map<std::string, std::string> tool_names;  // by tool_call_id
};
std::vector<SseEvent> translate_progress_event(const Json& event, TranslateState& state);

// Whether `e`, an event of a session's stream, may come from the workflow task that records
// turn `turn` (numbered from 1, as in `user_message`) in the session's answers, or from a later
// one: its final answer or its files, the session no longer running, a later message begun, a
// failure or a cancel. Turn-ending events come in this order: `final` (a task before the turn is
// recorded), then `files` and `status` in the task that records it.
// `kAnyTurn` stands for whichever turn is answered next.
inline constexpr int64_t kAnyTurn = 0;
bool may_end_turn(const SseEvent& e, int64_t turn);

enum class FeedKind { kRun, kSession };

struct EventHubOptions {
  // Each watched workflow's history is long-polled (a thread per watched workflow, none per
  // subscriber), and its progress queried as soon as a workflow task completed (asked again
  // after 25 ms, doubling up to 1 s, while the query fails). A thread wakes each poll_interval to
  // send the keepalives, drop idle feeds and query the watched workflows that have no watcher.
  std::chrono::milliseconds long_poll{3000};
  std::chrono::milliseconds poll_interval{1000};
  std::chrono::seconds keepalive{15};
  std::chrono::seconds idle_feed{60};  // a feed nobody watched this long is dropped
};

// The upstream of every event stream: one history long-poll per watched workflow, one poller
// thread for the rest; thread-safe.
class EventHub {
 public:
  // With `live` (the LiveOutput of a worker in this process), a watched workflow's running cells
  // send `cell_output` events as they print; without, cells show their output with the result.
  EventHub(temporal::Client& client, std::shared_ptr<durable::LiveOutput> live = nullptr,
           EventHubOptions options = {});
  ~EventHub();  // stop()

  // Sends `stream` every event of workflow `workflow_id` after `last_event_id` ("" = from the
  // first this process knows), then the events as they come. A run's stream ends after its
  // `end` event; a session's stays open.
  void subscribe(const std::string& workflow_id, FeedKind kind, std::shared_ptr<EventStream> stream,
                 const std::string& last_event_id);
  // Sends `stream` only the events that come from now on: none of those known, and a new
  // session feed does not read the session's earlier runs for it (a later subscribe() does).
  // For a handler in this process that waits for an event (POST /chat).
  void subscribe_live(const std::string& workflow_id, FeedKind kind,
                      std::shared_ptr<EventStream> stream);
  // An event that is not in the workflow's progress (a cell's live output), sent to the
  // workflow's watchers in order with its events. Dropped when nobody watches.
  void publish(const std::string& workflow_id, const std::string& type, Json data);
  // Sends `shutdown` to every stream, closes them and stops polling. Idempotent.
  void stop();
  size_t feeds() const;
  size_t subscribers() const;

 private:
  struct Feed;
  void poll_loop();
  // Reads the workflow's new progress events into the feed; when a new run has begun, first the
  // rest of the run it followed (asked of that closed run: false while it does not answer, a few
  // times, then that rest is given up and logged). Now and then (and when the query
  // fails) asks whether the workflow closed. False when the feed may be behind: the query failed
  // and the workflow is not known to be closed.
  bool poll(Feed& feed);
  // A new session feed starts with the events of the session's earlier runs (before a
  // continue-as-new, or before it was started again), oldest first, so a client resuming from
  // an event of one of them misses nothing. Runs whose query fails are left out.
  void load_earlier_runs(Feed& feed);
  // A feed's watcher: long-polls the history of the run it follows (named, not "the current
  // one") and polls after each completed workflow task; once the run closes, follows the next
  // run from its beginning as soon as one starts.
  void watch(std::shared_ptr<Feed> feed);
  // Adds `stream` to the feed, after sending it the known events after `after` (all: nullopt
  // and `replay`; none: !replay), and starts the feed's watcher if it has none.
  void add_subscriber(const std::shared_ptr<Feed>& feed, std::shared_ptr<EventStream> stream,
                      std::optional<EventPosition> after, bool replay);
  std::shared_ptr<Feed> feed_of(const std::string& workflow_id, FeedKind kind);

  temporal::Client& client_;
  std::shared_ptr<durable::LiveOutput> live_;
  EventHubOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::map<std::string, std::shared_ptr<Feed>> feeds_;
  struct Watcher {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<Watcher> watchers_;
  std::thread poller_;
};

}  // namespace codeact::server
