// The worker's reaper against a real dev server, with the in-memory sandbox backend: it stops the
// running sandbox of a terminated CodeAct workflow, leaves alone the sandboxes of running
// workflows and of no workflow, and reports — naming the sandbox — what it could not do.
#include <gtest/gtest.h>

#include "../support/fake_sandbox_backend.hpp"
#include "codeact/durable/payloads.hpp"
#include "codeact/durable/workflows.hpp"
#include "dev_server.hpp"
#include "reaper.hpp"

namespace codeact::durable {
namespace {

using ::codeact::testing::FakeSandboxBackend;
using internal::reap_orphaned_sandboxes;
using internal::ReapResult;
using temporal::testing::DevServer;

// A CodeActTaskWorkflow nobody works on (its task queue has no worker), so it stays running.
std::string start_unworked_run(temporal::Client& client) {
  const std::string id = temporal::testing::unique_name("reaped");
  TaskInput in;
  in.task = "never run";
  temporal::StartWorkflowOptions so;
  so.id = id;
  so.task_queue = temporal::testing::unique_name("nobody");
  EXPECT_TRUE(client.start_workflow(kTaskWorkflow, temporal::Args{in.to_json()}, so).ok());
  return id;
}

TEST(Reaper, StopsSandboxesOfTerminatedRunsAndReportsWhatItCouldNotDo) {
  auto client = DevServer::client();
  const std::string terminated = start_unworked_run(client);
  const std::string failing = start_unworked_run(client);
  const std::string running = start_unworked_run(client);
  ASSERT_TRUE(client.terminate_workflow(terminated, "", "test").ok());
  ASSERT_TRUE(client.terminate_workflow(failing, "", "test").ok());

  FakeSandboxBackend backend;
  for (const auto& id : {terminated, failing, running, std::string("someone-elses")})
    ASSERT_TRUE(backend.start(sandbox::SandboxOptions{.id = id}).ok());
  backend.fail_next("stop", core::unavailable("Docker did not answer"), failing);
  ReapResult first = reap_orphaned_sandboxes(client, backend);
  EXPECT_EQ(first.stopped, std::vector<std::string>{terminated});
  ASSERT_EQ(first.problems.size(), 1u);
  EXPECT_EQ(first.problems[0],
            "sandbox \"" + failing +
                "\": its workflow ended Terminated without cleaning up, and stopping it "
                "failed: Docker did not answer");
  EXPECT_FALSE(backend.with(terminated, [](auto& s) { return s.running; }));
  EXPECT_TRUE(backend.with(running, [](auto& s) { return s.running; }))
      << "a running workflow keeps its sandbox";
  EXPECT_TRUE(backend.with("someone-elses", [](auto& s) { return s.running; }))
      << "no workflow of that id";

  backend.fail_next("list", core::unavailable("Docker is down"));
  auto down = reap_orphaned_sandboxes(client, backend);
  EXPECT_TRUE(down.stopped.empty());
  EXPECT_EQ(down.problems,
            std::vector<std::string>{"listing the sandboxes failed: Docker is down"});
  (void)client.terminate_workflow(running, "", "test over");
}

}  // namespace
}  // namespace codeact::durable
