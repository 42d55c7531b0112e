// Sticky cache vs full replay: a workflow of N sequential activities (N = 500 by default) run
// twice against one dev server in the same process, by a worker with the sticky cache
// (max_cached_workflows = 500) and by one without (0: every workflow task replays the whole
// history). WorkerOptions::on_workflow_task gives each task's processing time (from the poll's
// answer to the RespondWorkflowTaskCompleted call: history pages, replay, workflow code); the
// program prints the mean of the first 50 and the last 50 tasks of each mode and their ratios.
// With the cache, the time per task should not grow with the history.
//
//   temporal_sticky_bench [--activities 500] [--temporal CLI  (default:
//   temporal::find_temporal_cli)]
//                         [--address host:port  (use a running server instead)]
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "../bench_stats.hpp"
#include "codeact/temporal/dev_server.hpp"
#include "codeact/temporal/worker.hpp"
#include "noop_sequence.hpp"

namespace tp = codeact::temporal;
namespace core = codeact::core;
using core::Json;

namespace {

struct ModeResult {
  std::vector<tp::WorkflowTaskStats> tasks;
  double wall_s = 0;
};

double median_ms(const std::vector<tp::WorkflowTaskStats>& t, size_t from, size_t count) {
  std::vector<double> v;
  for (size_t i = from; i < t.size() && v.size() < count; ++i)
    v.push_back(std::chrono::duration<double, std::milli>(t[i].processing_time).count());
  return codeact::bench::stats(v).p50;
}

double mean_ms(const std::vector<tp::WorkflowTaskStats>& t, size_t from, size_t count) {
  double sum = 0;
  size_t n = 0;
  for (size_t i = from; i < t.size() && n < count; ++i, ++n)
    sum += std::chrono::duration<double, std::milli>(t[i].processing_time).count();
  return n ? sum / static_cast<double>(n) : 0;
}

std::optional<ModeResult> run_mode(tp::Client& client, int cache_size, int n) {
  static int round = 0;
  std::string queue = "sticky-bench-" + std::to_string(getpid()) + "-" + std::to_string(++round);
  ModeResult out;
  std::mutex mu;
  tp::WorkerOptions wo;
  wo.task_queue = queue;
  wo.max_cached_workflows = cache_size;
  const std::string id = queue + "-wf";
  wo.on_workflow_task = [&](const tp::WorkflowTaskStats& s) {
    if (s.workflow_id != id) return;
    std::lock_guard<std::mutex> lock(mu);
    out.tasks.push_back(s);
  };
  tp::Worker worker(client, wo);
  codeact::bench::register_noop_sequence(worker, "Sequence");
  if (auto st = worker.start(); !st.ok()) {
    std::cerr << st.error().to_string() << "\n";
    return std::nullopt;
  }
  tp::StartWorkflowOptions so;
  so.id = id;
  so.task_queue = queue;
  auto t0 = std::chrono::steady_clock::now();
  auto run = client.start_workflow("Sequence", {Json(n)}, so);
  if (!run.ok()) {
    std::cerr << run.error().to_string() << "\n";
    return std::nullopt;
  }
  auto result = client.get_result(id, run->run_id, std::chrono::minutes(10));
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  worker.shutdown(std::chrono::seconds(5));
  if (!result.ok() || *result != Json(n)) {
    std::cerr << "workflow did not complete: "
              << (result.ok() ? result->dump() : result.failure().to_string()) << "\n";
    return std::nullopt;
  }
  std::lock_guard<std::mutex> lock(mu);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 500;
  std::string address;
  std::string temporal;  // "" = temporal::find_temporal_cli()
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--activities")) n = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--address")) address = argv[i + 1];
    if (!std::strcmp(argv[i], "--temporal")) temporal = argv[i + 1];
  }
  std::optional<tp::DevServer> server;
  std::string dir;
  if (address.empty()) {
    char tmpl[] = "/tmp/codeact-sticky-bench-XXXXXX";
    dir = mkdtemp(tmpl);
    tp::DevServerOptions o;
    o.cli = temporal;
    o.db_file = dir + "/bench.db";
    o.log_file = dir + "/server.log";
    o.log_level = "error";
    auto started = tp::DevServer::start(o);
    if (!started.ok()) {
      std::cerr << started.error().to_string() << "\n";
      return 1;
    }
    server.emplace(std::move(started).value());
    address = server->address();
  }
  tp::ClientOptions co;
  co.address = address;
  auto client = tp::Client::connect(co, std::chrono::seconds(60));
  if (!client.ok()) {
    std::cerr << client.error().to_string() << "\n";
    return 1;
  }
  if (auto serving = client->wait_until_serving(std::chrono::seconds(20)); !serving.ok()) {
    std::cerr << serving.error().to_string() << "\n";
    return 1;
  }
  (void)run_mode(*client, 500, 5);  // warm-up: connections, first tasks
  auto cached = run_mode(*client, 500, n);
  auto full = run_mode(*client, 0, n);
  if (server) {
    server->stop();
    std::filesystem::remove_all(dir);
  }
  if (!cached || !full) return 1;

  const size_t k = 50;
  std::printf(
      "Sticky cache vs full replay: workflow of %d sequential activities, same dev server, "
      "same run\n",
      n);
  std::printf("%-22s%7s%10s%16s%15s%14s%12s\n", "mode", "tasks", "wall (s)", "sum of WFT (ms)",
              "first 50 (ms)", "last 50 (ms)", "last/first");
  double firsts[2], lasts[2];
  int i = 0;
  for (auto* m : {&*cached, &*full}) {
    const auto& t = m->tasks;
    double total = mean_ms(t, 0, t.size()) * static_cast<double>(t.size());
    firsts[i] = mean_ms(t, 0, k);
    lasts[i] = mean_ms(t, t.size() > k ? t.size() - k : 0, k);
    int hits = 0;
    for (const auto& s : t) hits += s.cache_hit ? 1 : 0;
    std::printf("%-22s%7zu%10.2f%16.1f%15.3f%14.3f%12.2f\n",
                i == 0 ? "sticky cache (500)" : "full replay (cache 0)", t.size(), m->wall_s, total,
                firsts[i], lasts[i], firsts[i] > 0 ? lasts[i] / firsts[i] : 0);
    size_t last_from = t.size() > k ? t.size() - k : 0;
    std::printf("  medians: first 50 %.3f ms, last 50 %.3f ms\n", median_ms(t, 0, k),
                median_ms(t, last_from, k));
    std::printf("  cache hits %d of %zu tasks; history length at the last task %lld\n", hits,
                t.size(), t.empty() ? 0LL : static_cast<long long>(t.back().history_length));
    ++i;
  }
  std::printf("full replay / sticky cache, mean of the last 50 tasks: %.1fx\n",
              lasts[0] > 0 ? lasts[1] / lasts[0] : 0);
  return 0;
}
