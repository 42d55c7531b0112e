// The baselines of bench/server/sse_bench.py: chat workflows driven with the C++ Temporal client
// directly, no codeact server in between. Times are printed in seconds of CLOCK_MONOTONIC
// (Python's time.perf_counter on Linux, so the bench compares them with its own timestamps).
//
// One session, one message at a time: for each message it signals `send_user_task`, polls the
// `agent_output` query every 5 ms until the turn is answered, and prints one JSON line per turn,
// {"turn", "signalled", "answered"}:
//
//   server_bench_direct_chat --address HOST:PORT --workflow-id ID --message TEXT [--message ...]
//
// Many sessions at once (--burst N): N rounds; in each it signals "ping ID ROUND" to every
// session at once, then follows each one as the server's event feed does, without polling: it
// long-polls the session's history and asks the `progress` query after each completed workflow
// task, until that session's final answer is there. One JSON line per session and round,
// {"workflow_id", "turn", "answered"}:
//
//   server_bench_direct_chat --address HOST:PORT --burst N --workflow-id ID [--workflow-id ...]
//
// (N below 20: a chat continues as new after 20 turns, and --burst follows one run.)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "codeact/core/json.hpp"
#include "codeact/durable/workflows.hpp"
#include "codeact/temporal/client.hpp"

namespace tp = codeact::temporal;
using codeact::core::Json;

namespace {

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

codeact::core::Result<size_t> answered_turns(tp::Client& client, const std::string& id) {
  auto q = client.query_workflow(id, "", codeact::durable::kAgentOutputQuery);
  if (!q.ok()) return std::move(q).error();
  return q->value("turns", Json::array()).size();
}

// The index of the next progress event of session `id` (the `progress` query's "next").
codeact::core::Result<int64_t> progress_next(tp::Client& client, const std::string& id,
                                             int64_t since, bool* saw_final) {
  auto q = client.query_workflow(id, "", codeact::durable::kProgressQuery,
                                 tp::Args{Json{{"since", since}}});
  if (!q.ok()) return std::move(q).error();
  if (!q->is_object())
    return codeact::core::invalid_argument("a progress reply that is not an object");
  for (const auto& e : q->value("events", Json::array()))
    if (e.is_object() && e.value("event_kind", "") == "final_result") *saw_final = true;
  return q->value("next", since);
}

// Waits for session `id`'s next final answer (a `final_result` progress event past `since`) as
// the server's event feed does: long-polls the history and asks `progress` after each completed
// workflow task. Returns when it saw it (monotonic seconds).
codeact::core::Result<double> follow_until_final(tp::Client& client, const std::string& id,
                                                 int64_t since) {
  std::string token;
  while (true) {
    auto w = client.wait_for_history_events(id, "", token, std::chrono::seconds(20));
    if (!w.ok()) return std::move(w).error();
    token = w->next_page_token;
    if (w->workflow_tasks_completed == 0 && !w->closed) continue;
    for (int tries = 0; tries < 200; ++tries) {  // a busy workflow may refuse for a moment
      bool saw_final = false;
      auto next = progress_next(client, id, since, &saw_final);
      if (next.ok()) {
        if (saw_final) return monotonic_seconds();
        since = *next;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (w->closed) return codeact::core::failed_precondition("session " + id + " ended");
  }
}

int burst(tp::Client& client, const std::vector<std::string>& ids, int rounds) {
  std::mutex out_mu;
  for (int round = 0; round < rounds; ++round) {
    std::vector<int64_t> since(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      bool ignored = false;
      auto n = progress_next(client, ids[i], 0, &ignored);
      if (!n.ok()) {
        std::fprintf(stderr, "%s\n", n.error().to_string().c_str());
        return 1;
      }
      since[i] = *n;
    }
    for (const auto& id : ids) {
      auto s = client.signal_workflow(id, "", codeact::durable::kSendUserTask,
                                      tp::Args{Json("ping " + id + " " + std::to_string(round))});
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", s.error().to_string().c_str());
        return 1;
      }
    }
    std::vector<std::thread> followers;
    bool failed = false;
    for (size_t i = 0; i < ids.size(); ++i) {
      followers.emplace_back([&, i] {
        auto seen = follow_until_final(client, ids[i], since[i]);
        std::lock_guard lock(out_mu);
        if (!seen.ok()) {
          std::fprintf(stderr, "%s\n", seen.error().to_string().c_str());
          failed = true;
          return;
        }
        std::printf(
            "%s\n",
            Json{{"workflow_id", ids[i]}, {"turn", round}, {"answered", *seen}}.dump().c_str());
      });
    }
    for (auto& t : followers) t.join();
    std::fflush(stdout);
    if (failed) return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string address;
  std::vector<std::string> ids, messages;
  int rounds = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--address") == 0)
      address = argv[i + 1];
    else if (std::strcmp(argv[i], "--workflow-id") == 0)
      ids.emplace_back(argv[i + 1]);
    else if (std::strcmp(argv[i], "--message") == 0)
      messages.emplace_back(argv[i + 1]);
    else if (std::strcmp(argv[i], "--burst") == 0)
      rounds = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  // A chat continues as new after 20 turns (max_turns_per_run): --burst follows one run.
  if (rounds >= 20) {
    std::fprintf(stderr, "--burst follows one workflow run: at most 19 rounds\n");
    return 2;
  }
  if (address.empty() || ids.empty() || (rounds > 0) == !messages.empty() ||
      (rounds == 0 && ids.size() != 1)) {
    std::fprintf(stderr,
                 "usage: server_bench_direct_chat --address HOST:PORT --workflow-id ID "
                 "--message TEXT [--message ...]\n"
                 "       server_bench_direct_chat --address HOST:PORT --burst ROUNDS "
                 "--workflow-id ID [--workflow-id ...]\n");
    return 2;
  }
  tp::ClientOptions o;
  o.address = address;
  auto client = tp::Client::connect(o);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.error().to_string().c_str());
    return 1;
  }
  if (rounds > 0) return burst(*client, ids, rounds);
  const std::string& id = ids.front();
  for (size_t n = 0; n < messages.size(); ++n) {
    // A busy workflow may refuse a query for a moment (ResourceExhausted: its query buffer is
    // full); ask again.
    auto before = answered_turns(*client, id);
    for (int tries = 0; !before.ok() && tries < 200; ++tries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      before = answered_turns(*client, id);
    }
    if (!before.ok()) {
      std::fprintf(stderr, "%s\n", before.error().to_string().c_str());
      return 1;
    }
    const double signalled = monotonic_seconds();
    auto s = client->signal_workflow(id, "", codeact::durable::kSendUserTask,
                                     tp::Args{Json(messages[n])});
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.error().to_string().c_str());
      return 1;
    }
    while (true) {
      auto now = answered_turns(*client, id);
      if (now.ok() && *now > *before) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::printf("%s\n",
                Json{{"turn", n}, {"signalled", signalled}, {"answered", monotonic_seconds()}}
                    .dump()
                    .c_str());
    std::fflush(stdout);
  }
  return 0;
}
