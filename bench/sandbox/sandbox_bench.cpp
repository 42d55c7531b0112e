// Sandbox benchmarks (issue "Sandboxes"), each against a baseline measured in the same run:
//   1. trivial cell round trip: C++ API and CLI vs `docker exec <container> python3 -c pass`
//   2. new sandbox, start to first result vs `docker run --rm <image> true`
//   3. trivial cell with 200 MB of untouched state vs empty state; restore of that state after a
//      kill
//   4. memory of an idle sandbox (container cgroup)
// Prints figures and ratios; not a pass/fail test (this machine is noisy).
//
//   sandbox_bench [--iterations N] [--codeact PATH-TO-CLI] [--json]
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "../bench_stats.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/subprocess.hpp"
#include "codeact/sandbox/image_builder.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"

using namespace codeact;
using bench::Stats;
using bench::stats;
using bench::time_ms;
using Clock = std::chrono::steady_clock;

namespace {

void die(const core::Error& e) {
  std::cerr << "sandbox_bench: " << e.to_string() << "\n";
  std::exit(1);
}

template <typename T>
T must(core::Result<T> r) {
  if (!r.ok()) die(r.error());
  return std::move(r).value();
}

void must_ok(const core::Status& s) {
  if (!s.ok()) die(s.error());
}

void run_cmd(const std::vector<std::string>& argv) {
  auto r = must(core::run_process(argv, std::chrono::minutes(2)));
  if (r.exit_code != 0) {
    std::cerr << "command failed: " << argv[0] << " ... : " << r.stderr_text << "\n";
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 50;
  std::string cli = "";
  bool as_json = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc)
      iterations = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--codeact") && i + 1 < argc)
      cli = argv[++i];
    else if (!std::strcmp(argv[i], "--json"))
      as_json = true;
  }
  auto docker = must(sandbox::DockerClient::create());
  std::string image = must(sandbox::ImageBuilder(docker).ensure_image());
  sandbox::SandboxManager manager(docker);
  std::string id = fmt::format("bench-{}", ::getpid());
  core::Json report = core::Json::object();
  auto cleanup = [&] { (void)manager.remove(id, true); };

  // 1. trivial cell round trip
  must(manager.start({.id = id}));
  sandbox::ExecuteRequest trivial;
  trivial.code = "pass";
  trivial.timeout_seconds = 30;
  for (int i = 0; i < 5; ++i) must(manager.execute(id, trivial));  // warm up
  auto api = stats(time_ms(iterations, [&] { must(manager.execute(id, trivial)); }));
  std::string cname = sandbox::SandboxManager::container_name(id);
  int exec_n = std::max(5, iterations / 5);
  auto dexec = stats(time_ms(exec_n, [&] {
    run_cmd({"docker", "exec", "--user", "1000:1000", cname, "python3", "-c", "pass"});
  }));
  Stats via_cli;
  if (!cli.empty()) {
    via_cli = stats(time_ms(std::max(5, iterations / 5), [&] {
      run_cmd({cli, "sandbox", "exec", id, "pass"});
    }));
  }
  report["trivial_cell"] = {
      {"api_p50_ms", api.p50},
      {"api_p90_ms", api.p90},
      {"cli_p50_ms", via_cli.p50},
      {"docker_exec_p50_ms", dexec.p50},
      {"speedup_api_vs_docker_exec", dexec.p50 / api.p50},
      {"speedup_cli_vs_docker_exec", via_cli.p50 > 0 ? dexec.p50 / via_cli.p50 : 0.0}};

  // 4. idle memory (measured before state is loaded)
  std::this_thread::sleep_for(std::chrono::seconds(2));
  auto st = must(docker->stats(cname));
  report["idle_memory_mb"] = st.memory_usage / (1024.0 * 1024.0);

  // 3. 200 MB of untouched state
  sandbox::ExecuteRequest big;
  big.code = "import numpy as np\nbig = np.ones(200 * 1024 * 1024 // 8)\nprint(big.nbytes)";
  big.timeout_seconds = 300;
  must(manager.execute(id, big));
  for (int i = 0; i < 5; ++i) must(manager.execute(id, trivial));
  auto with_state = stats(time_ms(iterations, [&] { must(manager.execute(id, trivial)); }));
  auto t0 = Clock::now();
  must_ok(docker->kill_container(cname));
  auto after = must(manager.execute(
      id, sandbox::ExecuteRequest{.code = "print(big.nbytes)", .timeout_seconds = 120}));
  double restore_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (after.stdout_text != "209715200\n") {
    std::cerr << "restore check failed: " << after.stdout_text << "\n";
  }
  report["state_200mb"] = {{"empty_p50_ms", api.p50},
                           {"with_200mb_p50_ms", with_state.p50},
                           {"ratio", with_state.p50 / api.p50},
                           {"restore_after_kill_ms", restore_ms}};
  cleanup();

  // 2. start to first result of a new sandbox vs docker run --rm image true
  int start_n = std::max(3, iterations / 10);
  std::vector<double> starts;
  for (int i = 0; i < start_n; ++i) {
    std::string sid = fmt::format("{}-s{}", id, i);
    auto t = Clock::now();
    must(manager.start({.id = sid}));
    must(manager.execute(sid, sandbox::ExecuteRequest{.code = "1 + 1", .timeout_seconds = 60}));
    starts.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count());
    (void)manager.remove(sid, true);
  }
  auto start_stats = stats(starts);
  auto run_stats = stats(time_ms(start_n, [&] {
    run_cmd({"docker", "run", "--rm", "--entrypoint", "true", image});
  }));
  report["start_to_first_result"] = {{"codeact_p50_ms", start_stats.p50},
                                     {"docker_run_rm_true_p50_ms", run_stats.p50},
                                     {"ratio", start_stats.p50 / run_stats.p50}};

  if (as_json) {
    std::cout << report.dump(2) << "\n";
    return 0;
  }
  const auto& tc = report["trivial_cell"];
  fmt::print("1. trivial cell round trip (p50)\n");
  fmt::print("   C++ API            {:8.2f} ms   (p90 {:.2f} ms)\n", api.p50, api.p90);
  if (!cli.empty()) fmt::print("   codeact CLI        {:8.2f} ms\n", via_cli.p50);
  fmt::print("   docker exec python {:8.2f} ms   baseline\n", dexec.p50);
  fmt::print("   API is {:.0f}x faster than docker exec{}\n",
             tc["speedup_api_vs_docker_exec"].get<double>(),
             cli.empty()
                 ? ""
                 : fmt::format("; CLI {:.1f}x", tc["speedup_cli_vs_docker_exec"].get<double>()));
  fmt::print("2. new sandbox to first result (p50)\n");
  fmt::print(
      "   codeact            {:8.1f} ms\n   docker run --rm    {:8.1f} ms   baseline\n   ratio "
      "{:.2f}x\n",
      start_stats.p50, run_stats.p50, start_stats.p50 / run_stats.p50);
  fmt::print("3. trivial cell with 200 MB untouched state (p50)\n");
  fmt::print(
      "   empty state        {:8.2f} ms\n   200 MB state       {:8.2f} ms\n   ratio {:.2f}x\n",
      api.p50, with_state.p50, with_state.p50 / api.p50);
  fmt::print("   restore after docker kill: {:.0f} ms\n", restore_ms);
  fmt::print("4. idle sandbox memory (cgroup): {:.1f} MB\n",
             report["idle_memory_mb"].get<double>());
  return 0;
}
