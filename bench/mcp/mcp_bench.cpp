// Bridge benchmarks (issue "MCP client"), each against a baseline measured in the same run:
//   1. a no-op host function called from sandbox code, per call (timed inside the cell), vs a
//      no-op Python function in the same cell; and as whole cells (`noop()` vs `None`);
//   2. an MCP tool call (our SDK fixture's `echo`, stdio) from sandbox code vs the same call made
//      directly from C++ with McpClient.
// Target: the bridge adds <= 1 ms at p50. Prints figures and ratios; not a pass/fail test.
//
//   mcp_bench [--iterations N]
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "../bench_stats.hpp"
#include "codeact/core/json.hpp"
#include "codeact/functions/sandbox_functions.hpp"
#include "codeact/sandbox/image_builder.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"

using namespace codeact;
using bench::Stats;
using bench::stats;
using Clock = std::chrono::steady_clock;

namespace {

[[noreturn]] void die(const std::string& what) {
  std::cerr << "mcp_bench: " << what << "\n";
  std::exit(1);
}

void row(const std::string& name, const Stats& s) {
  std::cout << fmt::format("  {:<52} p50 {:8.3f} ms   p90 {:8.3f} ms   mean {:8.3f} ms\n", name,
                           s.p50, s.p90, s.mean);
}

}  // namespace

int main(int argc, char** argv) {
  int n = 200;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc) n = std::atoi(argv[++i]);
  }
  auto docker = sandbox::DockerClient::create();
  if (!docker.ok()) die(docker.error().to_string());
  sandbox::ImageBuilder builder(*docker);
  if (auto tag = builder.ensure_image(); !tag.ok()) die(tag.error().to_string());
  sandbox::SandboxManager manager(*docker);
  std::string id = "mcpbench-" + std::to_string(::getpid());
  sandbox::SandboxOptions so;
  so.id = id;
  if (auto s = manager.start(so); !s.ok()) die(s.error().to_string());

  mcp::McpServerConfig fixture;
  fixture.name = "fixture";
  fixture.command = std::string(CODEACT_SOURCE_DIR) + "/.venv/bin/python";
  fixture.args = {std::string(CODEACT_SOURCE_DIR) + "/tests/fixtures/mcp/sdk_server.py"};
  auto servers = std::make_shared<mcp::McpServerSet>(std::vector<mcp::McpServerConfig>{fixture});
  functions::SandboxFunctionsOptions o;
  o.mcp = servers;
  o.host_functions.push_back(
      functions::host_function("noop", {}, "Does nothing.", std::function<void()>([] {})));
  functions::SandboxFunctions tools(o);
  if (auto p = tools.prepare(manager, id); !p.ok()) die(p.error().to_string());

  auto cell = [&](const std::string& code) {
    sandbox::ExecuteRequest req;
    req.code = code;
    req.persist = false;
    auto r = tools.execute(manager, id, req);
    if (!r.ok()) die(r.error().to_string());
    if (!r->ok) die("cell failed: " + (r->error ? r->error->message : std::string()));
    return *r;
  };
  // Per-call latencies measured inside one cell (perf_counter around each call).
  auto in_cell = [&](const std::string& call, const std::string& setup = "") {
    std::string code = fmt::format(
        "import time as _t, json as _j\n{}\n_ts = []\nfor _i in range({}):\n    _a = "
        "_t.perf_counter()\n    {}\n"
        "    _ts.append((_t.perf_counter() - _a) * 1000)\nprint(_j.dumps(_ts))\n",
        setup, n, call);
    auto r = cell(code);
    auto j = core::parse_json(r.stdout_text);
    if (!j.ok()) die("bad cell output: " + r.stdout_text.substr(0, 200));
    return j->get<std::vector<double>>();
  };
  auto cells = [&](const std::string& code) {
    std::vector<double> out;
    for (int i = 0; i < n; ++i) {
      auto t0 = Clock::now();
      cell(code);
      out.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    return out;
  };

  // Warm up: first calls start the MCP server, fill caches.
  in_cell("noop(); echo(text='x')");

  std::cout << fmt::format("mcp_bench: {} iterations, sandbox {}\n\n", n, id);
  std::cout << "1. host function round trip (bridge)\n";
  Stats local = stats(in_cell("_f()", "def _f(): pass"));
  Stats bridged = stats(in_cell("noop()"));
  row("Python no-op function, in a cell (baseline)", local);
  row("no-op host function over the bridge, in a cell", bridged);
  Stats cell_none = stats(cells("None"));
  Stats cell_noop = stats(cells("noop()"));
  row("whole cell `None` (baseline)", cell_none);
  row("whole cell `noop()`", cell_noop);
  std::cout << fmt::format(
      "  bridge adds {:.3f} ms per call at p50 (in-cell), {:.3f} ms per cell at p50 -> {}\n\n",
      bridged.p50 - local.p50, cell_noop.p50 - cell_none.p50,
      bridged.p50 - local.p50 <= 1.0 ? "within the 1 ms target" : "OVER the 1 ms target");

  std::cout << "2. MCP tool call (fixture echo over stdio)\n";
  auto client = servers->client("fixture");
  if (!client.ok()) die(client.error().to_string());
  std::vector<double> direct;
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    auto r = (*client)->call_tool("echo", core::Json{{"text", "x"}});
    if (!r.ok()) die(r.error().to_string());
    direct.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  Stats d = stats(direct);
  Stats via = stats(in_cell("echo(text='x')"));
  row("direct from C++ (McpClient::call_tool, baseline)", d);
  row("from sandbox code (kernel -> bridge -> McpClient)", via);
  std::cout << fmt::format(
      "  sandbox/direct ratio {:.2f}x at p50; the bridge adds {:.3f} ms at p50 -> {}\n",
      via.p50 / std::max(d.p50, 1e-9), via.p50 - d.p50,
      via.p50 - d.p50 <= 1.0 ? "within the 1 ms target" : "OVER the 1 ms target");
  servers->close();
  (void)manager.remove(id, true);
  return 0;
}
