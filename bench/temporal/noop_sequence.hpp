// The workload of the Temporal benchmarks: a workflow running n sequential no-op activities
// (`noop` returns its argument), registered under a name on a worker.
#pragma once

#include <string>

#include "codeact/temporal/worker.hpp"

namespace codeact::bench {

inline temporal::Task<core::Json> noop_sequence(temporal::WorkflowContext& ctx,
                                                temporal::Args args) {
  int n = args.empty() ? 200 : args[0].get<int>();
  temporal::ActivityOptions options;
  options.start_to_close_timeout = std::chrono::seconds(10);
  for (int i = 0; i < n; ++i) {
    auto r = co_await ctx.execute_activity("noop", core::Json(i), options);
    if (!r.ok()) throw temporal::ApplicationError(r.failure());
  }
  co_return core::Json(n);
}

inline void register_noop_sequence(temporal::Worker& worker, const std::string& workflow_name) {
  worker.register_workflow(workflow_name, noop_sequence);
  worker.register_activity(
      "noop", [](temporal::ActivityContext&, const temporal::Args& a) -> core::Result<core::Json> {
        return a.empty() ? core::Json(nullptr) : a[0];
      });
}

}  // namespace codeact::bench
