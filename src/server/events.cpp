#include "codeact/server/events.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <set>

#include "codeact/core/json_reader.hpp"
#include "codeact/core/log.hpp"
#include "codeact/core/strings.hpp"
#include "codeact/durable/payloads.hpp"
#include "codeact/durable/workflows.hpp"
#include "codeact/llm/messages.hpp"

namespace codeact::server {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kBetweenSub = 1000;  // sub of the first event that is not a progress event
constexpr auto kDescribeEvery = std::chrono::seconds(2);
// A watcher's progress query that failed is asked again after these, doubling in between.
constexpr auto kRetryFirst = std::chrono::milliseconds(25);
constexpr auto kRetryLast = std::chrono::milliseconds(1000);
// A closed run's rest is asked this many times (poll) before its remaining events are given up.
constexpr int kTailTries = 8;

bool is_image(const std::string& path) {
  for (const char* ext : {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp"}) {
    const std::string e(ext);
    if (path.size() > e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0)
      return true;
  }
  return false;
}

SseEvent ev(std::string type, Json data) { return SseEvent{"", std::move(type), std::move(data)}; }

// Status of a closed workflow as the API names it.
std::string closed_status(const std::string& temporal_status) {
  if (temporal_status == "Completed") return "completed";
  if (temporal_status == "Failed") return "failed";
  if (temporal_status == "Canceled") return "cancelled";
  if (temporal_status == "Terminated") return "terminated";
  if (temporal_status == "TimedOut") return "timed_out";
  return core::trim(temporal_status);
}

}  // namespace

std::string SseEvent::wire() const {
  return fmt::format("id: {}\nevent: {}\ndata: {}\n\n", id, type, core::dump_json(data));
}

std::optional<EventPosition> parse_event_id(const std::string& id) {
  auto parts = core::split(id, '.');
  if (parts.size() != 3 || parts[0].empty()) return std::nullopt;
  try {
    size_t a = 0, b = 0;
    EventPosition p{parts[0], std::stoll(parts[1], &a), std::stoll(parts[2], &b)};
    if (a != parts[1].size() || b != parts[2].size()) return std::nullopt;
    return p;
  } catch (...) {
    return std::nullopt;
  }
}

std::vector<SseEvent> translate_progress_event(const Json& e, TranslateState& state) {
  const std::string kind = core::json_string(e, "event_kind");
  const int64_t step = core::json_int(e, "run_step");
  std::vector<SseEvent> out;
  if (kind == "user_message") {
    out.push_back(ev("user_message", {{"text", core::json_string(e, "task")},
                                      {"turn", core::json_int(e, "turn")}}));
  } else if (kind == "model_request_start") {
    out.push_back(ev("step", {{"step", step}}));
  } else if (kind == "model_response") {
    auto r = llm::response_from_json(e.value("response", Json::object()));
    if (!r.ok()) return out;
    if (std::string text = r->text(); !text.empty())
      out.push_back(ev("text", {{"step", step}, {"text", text}}));
    if (r->usage.total_tokens() > 0) {
      out.push_back(ev("usage", {{"step", step},
                                 {"input_tokens", r->usage.input_tokens},
                                 {"output_tokens", r->usage.output_tokens}}));
    }
  } else if (kind == "tool_call") {
    auto p = llm::response_part_from_json(e.value("part", Json::object()));
    if (!p.ok()) return out;
    const auto* call = std::get_if<llm::ToolCallPart>(&*p);
    if (call == nullptr) return out;
    state.tool_names[call->tool_call_id] = call->tool_name;
    const Json& args = call->args;
    auto code_of = [&](const char* key) {
      return args.is_object() && args.contains(key) && args[key].is_string()
                 ? std::optional<std::string>(args[key].get<std::string>())
                 : std::nullopt;
    };
    std::optional<std::string> code;
    std::string language;
    if (call->tool_name == "execute_python") {
      code = code_of("code");
      language = "python";
    } else if (call->tool_name == "execute_bash") {
      code = code_of("script");
      language = "bash";
    }
    if (code) {
      out.push_back(ev("cell", {{"step", step},
                                {"tool_call_id", call->tool_call_id},
                                {"language", language},
                                {"code", *code}}));
    } else {
      out.push_back(
          ev("tool_call", {{"step", step},
                           {"tool_call_id", call->tool_call_id},
                           {"tool_name", call->tool_name},
                           {"args", call->args_valid() ? call->args : Json(call->args_raw)}}));
    }
  } else if (kind == "tool_result") {
    auto p = llm::request_part_from_json(e.value("part", Json::object()));
    if (!p.ok()) return out;
    if (const auto* ret = std::get_if<llm::ToolReturnPart>(&*p)) {
      const bool cell = ret->tool_name == "execute_python" || ret->tool_name == "execute_bash";
      const Json& c = ret->metadata.is_object() ? ret->metadata : ret->content;
      bool ok = true;
      Json files = Json::array();
      Json images = Json::array();
      if (c.is_object()) {
        if (c.contains("ok") && c["ok"].is_boolean()) ok = c["ok"].get<bool>();
        if (c.contains("exit_code") && c["exit_code"].is_number_integer())
          ok = c["exit_code"].get<int64_t>() == 0;
        if (c.contains("files") && c["files"].is_array()) {
          for (const auto& f : c["files"]) {
            if (!f.is_string()) continue;
            files.push_back(f);
            if (is_image(f.get<std::string>())) images.push_back(f);
          }
        }
      }
      Json data{{"tool_call_id", ret->tool_call_id}, {"ok", ok}, {"text", ret->content_text()}};
      if (cell) {
        data["files"] = files;
        data["images"] = images;
        if (int64_t n = core::json_int(c, "checkpoint"); n > 0) data["checkpoint"] = n;
        if (c.contains("duration_ms") && c["duration_ms"].is_number_integer() &&
            c["duration_ms"].get<int64_t>() >= 0)
          data["duration_ms"] = c["duration_ms"];
        out.push_back(ev("cell_result", std::move(data)));
      } else {
        data["tool_name"] = ret->tool_name;
        out.push_back(ev("tool_result", std::move(data)));
      }
    } else if (const auto* retry = std::get_if<llm::RetryPromptPart>(&*p)) {
      out.push_back(ev("retry", {{"tool_call_id", retry->tool_call_id}, {"text", retry->content}}));
    }
  } else if (kind == "final_result") {
    Json output = e.value("output", Json());
    out.push_back(ev("final", {{"text", output.is_string() ? output.get<std::string>()
                                                           : core::dump_json(output)}}));
  } else if (kind == "sandbox") {
    Json data{{"sandbox_id", core::json_string(e, "sandbox_id")},
              {"resumed", core::json_bool(e, "resumed")}};
    if (e.contains("host")) data["host"] = core::json_string(e, "host");
    out.push_back(ev("sandbox", std::move(data)));
  } else if (kind == "files") {
    Json files = e.value("files", Json::array());
    out.push_back(ev("files", {{"files", files.is_array() ? files : Json::array()}}));
  } else if (kind == "cancelled") {
    out.push_back(
        ev("status", {{"status", "cancelled"}, {"message", core::json_string(e, "message")}}));
  } else if (kind == "turn_cancelled") {
    out.push_back(ev("turn_cancelled", {{"turn", core::json_int(e, "turn")},
                                        {"message", core::json_string(e, "message")}}));
  } else if (kind == "run_failed" || kind == "turn_failed") {
    out.push_back(ev("error", {{"message", core::json_string(e, "error")}}));
  } else if (kind == "message_rejected") {
    out.push_back(
        ev("error", {{"message", "a message was rejected: " + core::json_string(e, "error")}}));
  }
  return out;
}

bool may_end_turn(const SseEvent& e, int64_t turn) {
  if (e.type == "status") return core::json_string(e.data, "status") != "running";
  if (e.type == "user_message") return core::json_int(e.data, "turn") > turn;
  return e.type == "final" || e.type == "files" || e.type == "error" ||
         e.type == "turn_cancelled" || e.type == "end";
}

// ---------------------------------------------------------------------------------------------

struct EventHub::Feed {
  struct Run {
    std::string run_id;
    std::string tag;
    std::vector<std::pair<EventPosition, SseEvent>> events;
    int64_t next = 0;     // progress events seen
    int64_t between = 0;  // in-between events so far
    TranslateState translate;
  };
  std::string workflow_id;
  FeedKind kind;
  std::mutex poll_mu;  // one poll at a time (the poller's and a first subscriber's)
  std::mutex mu;       // the rest
  std::vector<Run> runs;
  std::vector<std::shared_ptr<EventStream>> subscribers;
  std::string status;
  bool closed = false;  // the workflow run is closed
  bool ended = false;   // a run's stream sent `end`
  bool saw_final = false;
  bool saw_error = false;
  Clock::time_point last_watched = Clock::now();
  Clock::time_point next_describe{};
  bool watching = false;        // a watcher long-polls the workflow's history
  bool earlier_loaded = false;  // a session's earlier runs are in `runs` (load_earlier_runs)
  int tail_failures = 0;        // the closed run's rest, asked in vain so far (poll)

  Run& current() {
    if (runs.empty()) runs.push_back(Run{});
    return runs.back();
  }
  // REQUIRES: mu held.
  void append(Run& run, EventPosition pos, SseEvent e) {
    pos.run = run.tag;
    e.id = fmt::format("{}.{}.{}", pos.run, pos.index, pos.sub);
    if (e.type == "final") saw_final = true;
    if (e.type == "error") saw_error = true;
    const std::string wire = e.wire();
    run.events.emplace_back(pos, std::move(e));
    for (auto& s : subscribers) s->send(wire);
  }
  // REQUIRES: mu held. A run that starts now, after the ones known.
  Run& start_run(const std::string& run_id) {
    Run run;
    run.run_id = run_id;
    run.tag = run_id.substr(0, std::min<size_t>(8, run_id.size()));
    runs.push_back(std::move(run));
    return runs.back();
  }
  // REQUIRES: mu held. The run's next progress events, as the page's events.
  void take(Run& run, const std::vector<Json>& progress) {
    for (const auto& e : progress) {
      const int64_t index = run.next++;
      int64_t sub = 0;
      for (auto& out : translate_progress_event(e, run.translate))
        append(run, EventPosition{"", index, sub++}, std::move(out));
    }
  }
  void append_between(SseEvent e) {
    Run& run = current();
    append(run, EventPosition{"", run.next - 1, kBetweenSub + run.between++}, std::move(e));
  }
  void set_status(const std::string& s, const std::string& message = "") {
    if (s.empty() || s == status) return;
    status = s;
    Json data{{"status", s}};
    if (!message.empty()) data["message"] = message;
    append_between(ev("status", std::move(data)));
  }
  void end_run_stream() {
    if (kind != FeedKind::kRun || ended) return;
    ended = true;
    append_between(ev("end", {{"status", status}}));
    for (auto& s : subscribers) s->close();
    subscribers.clear();
  }
  void prune() {
    std::erase_if(subscribers, [](const auto& s) { return s->closed(); });
    if (!subscribers.empty()) last_watched = Clock::now();
  }
};

EventHub::EventHub(temporal::Client& client, std::shared_ptr<durable::LiveOutput> live,
                   EventHubOptions options)
    : client_(client), live_(std::move(live)), options_(options) {
  poller_ = std::thread([this] { poll_loop(); });
}

EventHub::~EventHub() { stop(); }

std::shared_ptr<EventHub::Feed> EventHub::feed_of(const std::string& workflow_id, FeedKind kind) {
  std::lock_guard lock(mu_);
  auto& f = feeds_[workflow_id];
  if (!f) {
    f = std::make_shared<Feed>();
    f->workflow_id = workflow_id;
    f->kind = kind;
  }
  return f;
}

void EventHub::subscribe(const std::string& workflow_id, FeedKind kind,
                         std::shared_ptr<EventStream> stream, const std::string& last_event_id) {
  auto feed = feed_of(workflow_id, kind);
  bool fresh = false, load_earlier = false;
  {
    std::lock_guard lock(feed->mu);
    fresh = feed->runs.empty();
    load_earlier = kind == FeedKind::kSession && !feed->earlier_loaded;
  }
  if (load_earlier) load_earlier_runs(*feed);
  if (fresh) poll(*feed);  // the first subscriber gets what there is at once
  add_subscriber(feed, std::move(stream), parse_event_id(last_event_id), true);
}

void EventHub::subscribe_live(const std::string& workflow_id, FeedKind kind,
                              std::shared_ptr<EventStream> stream) {
  auto feed = feed_of(workflow_id, kind);
  bool fresh = false;
  {
    std::lock_guard lock(feed->mu);
    fresh = feed->runs.empty();
  }
  if (fresh) poll(*feed);  // where "now" is
  add_subscriber(feed, std::move(stream), std::nullopt, false);
}

void EventHub::add_subscriber(const std::shared_ptr<Feed>& feed,
                              std::shared_ptr<EventStream> stream,
                              std::optional<EventPosition> after, bool replay) {
  bool start_watcher = false;
  {
    std::lock_guard lock(feed->mu);
    size_t first_run = replay ? 0 : feed->runs.size();
    if (replay && after) {
      for (size_t i = 0; i < feed->runs.size(); ++i)
        if (feed->runs[i].tag == after->run) first_run = i;
      if (first_run < feed->runs.size() && feed->runs[first_run].tag != after->run) after.reset();
    }
    for (size_t i = first_run; i < feed->runs.size(); ++i) {
      for (const auto& [pos, e] : feed->runs[i].events) {
        if (after && i == first_run && !(*after < pos)) continue;
        stream->send(e.wire());
      }
    }
    if (feed->ended) {
      stream->close();
      return;
    }
    feed->subscribers.push_back(std::move(stream));
    feed->last_watched = Clock::now();
    start_watcher = !feed->watching;
    feed->watching = true;
  }
  // (The hub's lock is never taken while a feed's is held: the poller takes them the other way.)
  if (start_watcher) {
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::lock_guard hub(mu_);
    if (stopping_) return;
    watchers_.push_back({std::thread([this, feed, done] {
                           watch(feed);
                           done->store(true);
                         }),
                         done});
  }
  cv_.notify_all();
}

void EventHub::watch(std::shared_ptr<Feed> feed) {
  // A running cell's output, from the worker in this process; ended (no lock held) on return.
  durable::LiveOutput::Subscription live;
  if (live_) {
    auto cursor = std::make_shared<durable::LiveOutputCursor>();
    const std::string id = feed->workflow_id;
    live = live_->subscribe(id, [this, id, cursor](const durable::LiveChunk& c) {
      std::string text = cursor->unseen(c);
      if (text.empty()) return;
      publish(id, "cell_output",
              Json{{"tool_call_id", c.tool_call_id}, {"stream", c.stream}, {"text", text}});
    });
  }
  std::string token;
  // True when the watcher should stop: nobody watched the feed for a while, or its run's stream
  // ended. Clears `watching` in the same breath, so a subscriber arriving now starts a new watcher.
  auto idle = [&] {
    std::lock_guard lock(feed->mu);
    const bool unwatched =
        feed->subscribers.empty() && Clock::now() - feed->last_watched > std::chrono::seconds(5);
    if (unwatched || feed->ended) feed->watching = false;
    return !feed->watching;
  };
  auto nap = [&](std::chrono::milliseconds d) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, d, [&] { return stopping_; });
    return !stopping_;
  };
  // A workflow task completed and its progress is not read yet: the query is asked again, sooner
  // than the next history event, when it fails (a busy workflow refuses queries beyond its
  // consistent-query buffer).
  bool unread = false;
  auto backoff = kRetryFirst;
  std::string followed_run;  // the run whose history `token` pages through
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    if (idle()) return;
    if (unread) {
      if (poll(*feed)) {
        unread = false;
        backoff = kRetryFirst;
      } else {
        if (!nap(backoff)) return;
        backoff = std::min(backoff * 2, kRetryLast);
      }
      continue;
    }
    if (token.empty()) {  // a run followed from its beginning: which one, by name
      auto d = client_.describe_workflow(feed->workflow_id);
      if (!d.ok()) {
        if (!nap(std::chrono::milliseconds(500))) return;
        continue;
      }
      followed_run = d->run_id;
    }
    auto w =
        client_.wait_for_history_events(feed->workflow_id, followed_run, token, options_.long_poll);
    if (!w.ok()) {
      token.clear();
      if (!nap(std::chrono::milliseconds(500))) return;
      continue;
    }
    if (w->workflow_tasks_completed > 0 || w->closed) unread = !poll(*feed);
    if (!w->closed) {
      token = w->next_page_token;
      continue;
    }
    // The run closed: follow the next one from its beginning once it starts. A continue-as-new
    // starts it in the same breath; a session started again, later.
    token.clear();
    unread = false;
    while (true) {
      auto d = client_.describe_workflow(feed->workflow_id);
      if (d.ok() && d->run_id != followed_run) break;
      if (!nap(std::chrono::seconds(1)) || idle()) return;
    }
  }
}

void EventHub::publish(const std::string& workflow_id, const std::string& type, Json data) {
  std::shared_ptr<Feed> feed;
  {
    std::lock_guard lock(mu_);
    auto it = feeds_.find(workflow_id);
    if (it == feeds_.end()) return;
    feed = it->second;
  }
  std::lock_guard lock(feed->mu);
  if (feed->subscribers.empty() || feed->ended) return;
  feed->append_between(ev(type, std::move(data)));
}

void EventHub::load_earlier_runs(Feed& feed) {
  std::lock_guard serial(feed.poll_mu);
  std::set<std::string> known;
  {
    std::lock_guard lock(feed.mu);
    if (feed.earlier_loaded) return;  // another subscriber was quicker
    for (const auto& run : feed.runs) known.insert(run.run_id);
  }
  auto current = client_.describe_workflow(feed.workflow_id);
  if (!current.ok()) return;
  auto listed = client_.list_workflows(fmt::format("WorkflowId = '{}'", feed.workflow_id), 1000);
  if (!listed.ok()) return;
  std::vector<temporal::WorkflowExecutionInfo> earlier;
  for (auto& e : listed->executions)
    if (e.run_id != current->run_id && !known.count(e.run_id) && !e.close_time.empty() &&
        e.start_time <= current->start_time)
      earlier.push_back(std::move(e));
  std::sort(earlier.begin(), earlier.end(),
            [](const auto& a, const auto& b) { return a.start_time < b.start_time; });
  // Read into a feed of their own (nobody subscribed: nothing is sent), then put before the runs
  // this feed knows (a subscribe_live() may have started it on the current run).
  Feed loaded;
  for (const auto& e : earlier) {
    // A closed run answers its queries from a replay on a worker: the run's whole progress.
    auto r = client_.query_workflow(feed.workflow_id, e.run_id, durable::kProgressQuery,
                                    temporal::Args{Json{{"since", 0}}});
    if (!r.ok()) continue;
    auto reply = durable::ProgressReply::from_json(*r);
    if (!reply.ok()) continue;
    loaded.take(loaded.start_run(e.run_id), reply->events);
  }
  std::lock_guard lock(feed.mu);
  feed.runs.insert(feed.runs.begin(), std::make_move_iterator(loaded.runs.begin()),
                   std::make_move_iterator(loaded.runs.end()));
  feed.earlier_loaded = true;
}

bool EventHub::poll(Feed& feed) {
  std::lock_guard serial(feed.poll_mu);
  int64_t since = 0;
  std::string run_id;
  {
    std::lock_guard lock(feed.mu);
    if (feed.ended) return true;
    if (!feed.runs.empty()) {
      since = feed.runs.back().next;
      run_id = feed.runs.back().run_id;
    }
  }
  auto r = client_.query_workflow(feed.workflow_id, "", durable::kProgressQuery,
                                  temporal::Args{Json{{"since", since}}});
  std::optional<durable::ProgressReply> reply;
  if (r.ok()) {
    auto p = durable::ProgressReply::from_json(*r);
    if (p.ok()) reply = std::move(*p);
  }
  std::optional<durable::ProgressReply> rest;  // of the run the feed followed, which closed
  if (reply && !run_id.empty() && reply->run_id != run_id && since > 0) {
    // A new run (continue-as-new, or a session started again). What the closed run did after
    // the feed last read it (a continue-as-new's last task: the turn's files, its status) is
    // asked of that run (a worker replays it to answer); the new run's events start at 0.
    auto tail = client_.query_workflow(feed.workflow_id, run_id, durable::kProgressQuery,
                                       temporal::Args{Json{{"since", since}}});
    if (tail.ok()) {
      auto p = durable::ProgressReply::from_json(*tail);
      if (p.ok()) rest = std::move(*p);
    }
    if (!rest) {
      // Behind until the closed run answers (the watcher asks again, backing off); after
      // kTailTries failures its rest is given up, so the new run is not held up for good.
      std::lock_guard lock(feed.mu);
      if (++feed.tail_failures < kTailTries) return false;
      core::log().warn(
          "server: events of run {} of {} after #{} are lost: the closed run did not "
          "answer its progress query ({})",
          run_id, feed.workflow_id, since,
          tail.ok() ? "a malformed reply" : tail.error().message());
    }
    {
      std::lock_guard lock(feed.mu);
      feed.tail_failures = 0;
    }
    auto again = client_.query_workflow(feed.workflow_id, reply->run_id, durable::kProgressQuery,
                                        temporal::Args{Json{{"since", 0}}});
    reply.reset();
    if (again.ok()) {
      auto p = durable::ProgressReply::from_json(*again);
      if (p.ok()) reply = std::move(*p);
    }
  }
  std::lock_guard lock(feed.mu);
  if (rest && !feed.runs.empty() && feed.runs.back().run_id == run_id)
    feed.take(feed.runs.back(), rest->events);
  if (reply) {
    if (feed.runs.empty() || feed.runs.back().run_id != reply->run_id) {
      feed.start_run(reply->run_id);
      feed.closed = false;
      feed.saw_final = feed.saw_error = false;
    }
    feed.take(feed.runs.back(), reply->events);
    feed.set_status(reply->status);
    const bool terminal =
        reply->status == "completed" || reply->status == "failed" || reply->status == "cancelled";
    if (feed.kind == FeedKind::kRun && terminal) feed.end_run_stream();
    if (feed.kind == FeedKind::kRun || !terminal) {
      if (Clock::now() < feed.next_describe) return true;
    }
  } else if (Clock::now() < feed.next_describe) {
    return false;
  }
  // Now and then (and whenever the query fails): is the workflow still running?
  feed.next_describe = Clock::now() + kDescribeEvery;
  const std::string id = feed.workflow_id;
  feed.mu.unlock();
  auto d = client_.describe_workflow(id);
  std::optional<temporal::Outcome<Json>> result;
  if (d.ok() && d->status != "Running" && d->status != "ContinuedAsNew" &&
      feed.kind == FeedKind::kRun) {
    result.emplace(client_.get_result(id, d->run_id, std::chrono::seconds(2), false));
  }
  feed.mu.lock();
  if (!d.ok() || d->status == "Running" || d->status == "ContinuedAsNew") return reply.has_value();
  if (feed.closed && feed.kind == FeedKind::kSession) return true;
  feed.closed = true;
  if (result && result->ok() && !feed.saw_final) {
    auto out = durable::TaskOutput::from_json(result->value());
    if (out.ok()) feed.append_between(ev("final", {{"text", out->output}}));
  } else if (result && !result->ok() && !feed.saw_error &&
             result->failure().kind != temporal::FailureKind::kCanceled) {
    feed.append_between(ev("error", {{"message", result->failure().root_cause().message}}));
  }
  feed.set_status(closed_status(d->status));
  feed.end_run_stream();
  return true;
}

void EventHub::poll_loop() {
  auto last_keepalive = Clock::now();
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, options_.poll_interval);
    if (stopping_) break;
    std::vector<std::shared_ptr<Feed>> watched;
    const auto now = Clock::now();
    const bool keepalive = now - last_keepalive >= options_.keepalive;
    if (keepalive) last_keepalive = now;
    for (auto it = feeds_.begin(); it != feeds_.end();) {
      auto& f = it->second;
      bool drop = false;
      {
        std::lock_guard fl(f->mu);
        f->prune();
        if (keepalive)
          for (auto& s : f->subscribers) s->send(": keepalive\n\n");
        if (!f->subscribers.empty()) {
          if (!f->watching) watched.push_back(f);
        } else if (now - f->last_watched > options_.idle_feed) {
          drop = true;
        }
      }
      it = drop ? feeds_.erase(it) : std::next(it);
    }
    // Watchers that ended are joined here.
    for (auto it = watchers_.begin(); it != watchers_.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = watchers_.erase(it);
      } else {
        ++it;
      }
    }
    lock.unlock();
    for (auto& f : watched) poll(*f);
    lock.lock();
  }
}

void EventHub::stop() {
  std::vector<std::shared_ptr<Feed>> feeds;
  {
    std::lock_guard lock(mu_);
    if (stopping_ && !poller_.joinable()) return;
    stopping_ = true;
    for (auto& [id, f] : feeds_) feeds.push_back(f);
  }
  cv_.notify_all();
  if (poller_.joinable()) poller_.join();
  std::vector<Watcher> watchers;
  {
    std::lock_guard lock(mu_);
    watchers.swap(watchers_);
  }
  for (auto& w : watchers) w.thread.join();
  for (auto& f : feeds) {
    std::lock_guard lock(f->mu);
    for (auto& s : f->subscribers) {
      s->send("event: shutdown\ndata: {}\n\n");
      s->close();
    }
    f->subscribers.clear();
  }
}

size_t EventHub::feeds() const {
  std::lock_guard lock(mu_);
  return feeds_.size();
}

size_t EventHub::subscribers() const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, f] : feeds_) {
    std::lock_guard fl(f->mu);
    n += f->subscribers.size();
  }
  return n;
}

}  // namespace codeact::server
