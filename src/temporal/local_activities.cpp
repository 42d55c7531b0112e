#include "local_activities.hpp"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

namespace codeact::temporal::internal {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

struct LocalActivities::Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<LocalActivityMarker> done;                          // GUARDED_BY(mu)
  std::map<int64_t, std::shared_ptr<ActivityContext>> attempts;  // running, GUARDED_BY(mu)
  std::set<int64_t> running;                                     // GUARDED_BY(mu)
  std::set<int64_t> cancelled;                                   // GUARDED_BY(mu)

  bool is_cancelled(int64_t seq) {
    std::lock_guard<std::mutex> lock(mu);
    return cancelled.count(seq) > 0;
  }
  // Waits `d`, or less when `seq` is cancelled meanwhile.
  void sleep(int64_t seq, milliseconds d) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, d, [&] { return cancelled.count(seq) > 0; });
  }
};

namespace {

// The outcome of one attempt: a value or a failure.
using AttemptOutcome = Outcome<Json>;

bool retryable(const Failure& f, const std::optional<RetryPolicy>& policy) {
  if (f.non_retryable) return false;
  if (!policy) return true;
  const auto& types = policy->non_retryable_error_types;
  return std::find(types.begin(), types.end(), f.type) == types.end();
}

// Runs `fn` once on a thread of its own and waits for it until `timeout` (0: no limit) or until
// `ctx` is cancelled; a late attempt is asked to cancel and left to finish alone.
AttemptOutcome run_attempt(const ActivityFunction& fn, std::shared_ptr<ActivityContext> ctx,
                           const Args& args, milliseconds timeout) {
  struct Slot {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<AttemptOutcome> outcome;
  };
  auto slot = std::make_shared<Slot>();
  std::thread([slot, fn, ctx, args] {
    std::optional<AttemptOutcome> out;
    try {
      auto r = fn(*ctx, args);
      if (r.ok()) {
        out.emplace(std::move(r).value());
      } else if (r.error().code() == core::Code::kCancelled && ctx->cancelled()) {
        out.emplace(Failure::cancelled(r.error().message()));
      } else {
        out.emplace(Failure::from_error(r.error()));
      }
    } catch (const ApplicationError& ex) {
      out.emplace(ex.failure());
    } catch (const std::exception& ex) {
      out.emplace(Failure::application("Exception", ex.what()));
    } catch (...) {
      out.emplace(Failure::application("Exception", "non-standard exception"));
    }
    std::lock_guard<std::mutex> lock(slot->mu);
    slot->outcome = std::move(out);
    slot->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(slot->mu);
  const auto deadline =
      timeout.count() > 0 ? steady_clock::now() + timeout : steady_clock::time_point::max();
  while (!slot->outcome) {
    if (ctx->cancelled()) return Failure::cancelled("local activity cancelled");
    if (steady_clock::now() >= deadline) {
      ctx->request_cancel();
      Failure f;
      f.kind = FailureKind::kTimeout;
      f.code = core::Code::kDeadlineExceeded;
      f.timeout_type = "StartToClose";
      f.message = "local activity " + ctx->info().activity_type + " timed out after " +
                  std::to_string(timeout.count()) + " ms (start-to-close)";
      return f;
    }
    slot->cv.wait_until(lock, std::min(deadline, steady_clock::now() + milliseconds(50)));
  }
  return std::move(*slot->outcome);
}

}  // namespace

LocalActivities::LocalActivities(ActivityInfo base)
    : shared_(std::make_shared<Shared>()), base_(std::move(base)) {}

LocalActivities::~LocalActivities() { cancel_all(); }

milliseconds LocalActivities::backoff(const std::optional<RetryPolicy>& policy, int attempt) {
  RetryPolicy p = policy.value_or(RetryPolicy{});
  const milliseconds initial =
      p.initial_interval.count() > 0 ? p.initial_interval : milliseconds(1000);
  const milliseconds cap =
      p.maximum_interval.count() > 0 ? p.maximum_interval : milliseconds(initial.count() * 100);
  const double coefficient = p.backoff_coefficient >= 1 ? p.backoff_coefficient : 2.0;
  const double wait = initial.count() * std::pow(coefficient, std::max(0, attempt - 1));
  if (!std::isfinite(wait) || wait >= static_cast<double>(cap.count())) return cap;
  return milliseconds(static_cast<int64_t>(wait));
}

void LocalActivities::start(LocalActivityRequest request, const ActivityFunction* fn) {
  auto shared = shared_;
  {
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->running.insert(request.seq);
  }
  ActivityInfo info = base_;
  info.activity_id = std::to_string(request.seq);
  info.activity_type = request.name;
  info.start_to_close_timeout = request.options.start_to_close_timeout;
  info.local = true;
  std::optional<ActivityFunction> function;
  if (fn) function = *fn;
  std::thread([shared, request = std::move(request), info = std::move(info), function] {
    const auto first = steady_clock::now();
    const auto& o = request.options;
    LocalActivityMarker out;
    out.seq = request.seq;
    for (int attempt = 1;; ++attempt) {
      out.attempt = attempt;
      if (!function) {
        out.failure =
            Failure::application("NotFound",
                                 "local activity type '" + info.activity_type +
                                     "' is not registered on task queue '" + info.task_queue + "'",
                                 true);
        break;
      }
      ActivityInfo this_attempt = info;
      this_attempt.attempt = attempt;
      auto ctx = std::make_shared<ActivityContext>(this_attempt, Args{}, nullptr);
      {
        std::lock_guard<std::mutex> lock(shared->mu);
        if (shared->cancelled.count(request.seq)) return;
        shared->attempts[request.seq] = ctx;
      }
      milliseconds timeout = o.start_to_close_timeout;
      if (o.schedule_to_close_timeout.count() > 0) {
        auto left = o.schedule_to_close_timeout -
                    std::chrono::duration_cast<milliseconds>(steady_clock::now() - first);
        timeout = timeout.count() > 0 ? std::min(timeout, left) : left;
        timeout = std::max(timeout, milliseconds(1));
      }
      AttemptOutcome r = run_attempt(*function, ctx, request.args, timeout);
      {
        std::lock_guard<std::mutex> lock(shared->mu);
        shared->attempts.erase(request.seq);
      }
      if (shared->is_cancelled(request.seq)) return;
      if (r.ok()) {
        out.result = std::move(r).value();
        break;
      }
      Failure f = r.failure();
      const int max = o.retry_policy ? o.retry_policy->maximum_attempts : 0;
      if (!retryable(f, o.retry_policy) || (max > 0 && attempt >= max)) {
        out.failure = std::move(f);
        break;
      }
      const milliseconds wait = backoff(o.retry_policy, attempt);
      if (o.schedule_to_close_timeout.count() > 0 &&
          steady_clock::now() + wait - first >= o.schedule_to_close_timeout) {
        out.failure = std::move(f);
        break;
      }
      if (wait > o.local_retry_threshold) {  // not waited for here
        out.failure = std::move(f);
        out.backoff = wait;
        break;
      }
      shared->sleep(request.seq, wait);
      if (shared->is_cancelled(request.seq)) return;
    }
    out.complete_time = std::chrono::system_clock::now();
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->running.erase(request.seq);
    if (shared->cancelled.count(request.seq)) return;
    shared->done.push_back(std::move(out));
    shared->cv.notify_all();
  }).detach();
}

std::optional<LocalActivityMarker> LocalActivities::next(steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(shared_->mu);
  shared_->cv.wait_until(lock, deadline, [&] { return !shared_->done.empty(); });
  if (shared_->done.empty()) return std::nullopt;
  LocalActivityMarker m = std::move(shared_->done.front());
  shared_->done.pop_front();
  return m;
}

void LocalActivities::cancel(int64_t seq) {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->cancelled.insert(seq);
  shared_->running.erase(seq);
  if (auto a = shared_->attempts.find(seq); a != shared_->attempts.end())
    a->second->request_cancel();
  std::erase_if(shared_->done, [&](const LocalActivityMarker& m) { return m.seq == seq; });
  shared_->cv.notify_all();
}

void LocalActivities::cancel_all() {
  for (int64_t seq : running()) cancel(seq);
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->done.clear();
}

std::vector<int64_t> LocalActivities::running() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  std::vector<int64_t> out(shared_->running.begin(), shared_->running.end());
  for (const auto& m : shared_->done) out.push_back(m.seq);
  return out;
}

}  // namespace codeact::temporal::internal
