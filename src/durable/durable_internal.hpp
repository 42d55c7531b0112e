// Shared by the workflow side (workflows.cpp) and the worker side (activities.cpp) of the durable
// agent: activity names and the JSON forms of what crosses between them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "codeact/agent/toolset.hpp"
#include "codeact/durable/workflows.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"
#include "codeact/temporal/workflow.hpp"

namespace codeact::durable {

inline constexpr const char* kSandboxStartActivity = "codeact.sandbox_start";
inline constexpr const char* kSandboxFilesActivity = "codeact.sandbox_files";
inline constexpr const char* kSandboxFinishActivity = "codeact.sandbox_finish";
inline constexpr const char* kAgentPrepareActivity = "codeact.agent_prepare";
inline constexpr const char* kModelRequestActivity = "codeact.model_request";
inline constexpr const char* kToolCallActivity = "codeact.tool_call";

temporal::ActivityOptions activity_options(const ActivityPolicy& policy);
std::vector<std::pair<std::string, temporal::WorkflowFunction>> workflow_functions();

Json to_json(const agent::ToolInfo& info);
core::Result<agent::ToolInfo> tool_info_from_json(const Json& j);
Json files_to_json(const std::vector<sandbox::FileEntry>& files);
core::Result<std::vector<sandbox::FileEntry>> files_from_json(const Json& j);

}  // namespace codeact::durable
