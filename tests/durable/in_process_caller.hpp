// InProcessCaller: an ActivityCaller that runs the codeact.* activities in this process
// (CodeActActivities::call), their inputs and results crossing as JSON as they do through
// Temporal, and records what was scheduled. With the in-memory sandbox backend it runs the
// workflow side of the durable agent (durable_agent.hpp) without a server or Docker.
#pragma once

#include <string>
#include <vector>

#include "codeact/durable/activities.hpp"
#include "codeact/durable/durable_agent.hpp"

namespace codeact::durable::testing {

class InProcessCaller final : public ActivityCaller {
 public:
  explicit InProcessCaller(CodeActActivities& activities) : activities_(activities) {}

  agent::Task<core::Result<Json>> call(std::string activity, Json input, ActivityPolicy) override {
    scheduled.push_back(activity);
    inputs.push_back(input);
    co_return activities_.call(activity, input);
  }
  bool cancel_requested() const override { return cancel; }
  std::string now() override { return "2026-12-01T12:00:00.000Z"; }

  std::vector<std::string> scheduled;  // activity names, in order
  std::vector<Json> inputs;            // their inputs, in order
  bool cancel = false;

 private:
  CodeActActivities& activities_;
};

}  // namespace codeact::durable::testing
