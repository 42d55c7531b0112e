// The baseline of bench/server/sse_bench.py: a chat workflow driven with the C++ Temporal client
// directly, no codeact server in between. For each message it signals `send_user_task`, polls
// the `agent_output` query every 5 ms until the turn is answered, and prints one JSON line per
// turn: {"turn", "signalled", "answered"} in seconds of CLOCK_MONOTONIC (Python's
// time.perf_counter on Linux, so the bench compares them with its own timestamps).
//
//   server_bench_direct_chat --address HOST:PORT --workflow-id ID --message TEXT [--message ...]
#include <chrono>
#include <cstdio>
#include <cstring>
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

}  // namespace

int main(int argc, char** argv) {
  std::string address, id;
  std::vector<std::string> messages;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--address") == 0)
      address = argv[i + 1];
    else if (std::strcmp(argv[i], "--workflow-id") == 0)
      id = argv[i + 1];
    else if (std::strcmp(argv[i], "--message") == 0)
      messages.emplace_back(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (address.empty() || id.empty() || messages.empty()) {
    std::fprintf(stderr,
                 "usage: server_bench_direct_chat --address HOST:PORT --workflow-id ID "
                 "--message TEXT [--message ...]\n");
    return 2;
  }
  tp::ClientOptions o;
  o.address = address;
  auto client = tp::Client::connect(o);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.error().to_string().c_str());
    return 1;
  }
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
