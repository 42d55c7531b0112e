// The fixture of the integration tests: a client of the process's dev server (DevServer), a
// task queue of its own per test, an in-process worker hosting the test workflows, and helpers
// to wait on queries and to run the Python temporalio client.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "codeact/core/subprocess.hpp"
#include "dev_server.hpp"
#include "test_workflows.hpp"

namespace codeact::temporal::testing {

using namespace std::chrono_literals;

class TemporalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_.emplace(DevServer::client());
    queue_ = unique_name("tq");
  }
  void TearDown() override {
    if (worker_) worker_->shutdown(5s);
  }
  Worker& start_worker(int max_cached_workflows = 500) {
    WorkerOptions o;
    o.task_queue = queue_;
    o.max_cached_workflows = max_cached_workflows;
    worker_ = std::make_unique<Worker>(*client_, o);
    register_test_workflows(*worker_);
    auto st = worker_->start();
    EXPECT_TRUE(st.ok());
    return *worker_;
  }
  StartWorkflowOptions start_options(const std::string& prefix) {
    StartWorkflowOptions o;
    o.id = unique_name(prefix);
    o.task_queue = queue_;
    o.execution_timeout = 60s;
    return o;
  }
  // Polls `query` until it returns `want` (or 15 s pass).
  bool wait_for_query(
      const std::string& id, const std::string& query, const Json& want,
      const std::function<Json(const Json&)>& pick = [](const Json& j) { return j; }) {
    for (int i = 0; i < 300; ++i) {
      auto r = client_->query_workflow(id, "", query);
      if (r.ok() && pick(*r) == want) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }
  // Runs tests/temporal/py/client_scenarios.py with `args` and reads the JSON it prints.
  Json run_python(const std::vector<std::string>& args) {
    return run_python_script("client_scenarios.py", args);
  }
  // The same for another script of tests/temporal/py/.
  static Json run_python_script(const std::string& script, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {
        DevServer::python(), std::string(CODEACT_SOURCE_DIR) + "/tests/temporal/py/" + script};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = core::run_process(argv, 120s);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
    if (!r.ok()) return nullptr;
    EXPECT_EQ(r->exit_code, 0) << r->stderr_text;
    auto j = core::parse_json(r->stdout_text);
    EXPECT_TRUE(j.ok()) << r->stdout_text << r->stderr_text;
    return j.ok() ? *j : Json(nullptr);
  }

  std::optional<Client> client_;
  std::string queue_;
  std::unique_ptr<Worker> worker_;
};

}  // namespace codeact::temporal::testing
