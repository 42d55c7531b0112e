// The seed's 16 sandbox operations (SandboxTaskTypes), with its names and argument fields, as a
// thin layer over SandboxManager, for callers that dispatch the seed's operations by name: JSON
// arguments in, JSON out (today only tests/sandbox). The durable layer does not use it: its
// activities are the codeact.* ones (durable/activities.hpp), over SandboxBackend.
//
// Differences from the seed, on purpose:
//   - `container_id` is the sandbox id (codeact names the container `codeact-{id}`), and an
//     operation only ever reaches sandboxes codeact created (checked by label);
//   - `get_all_containers` and `cleanup_containers` cover codeact's sandboxes only;
//   - `execute_python` accepts `execution_id` and `timeout` (retries never re-apply a cell);
//     `mcp_servers` / `custom_functions` are not payload fields: they are host-side (the bridge);
//   - `write_file` also accepts `content_b64` for binary data, `read_file` returns both.
// Thread-safe as SandboxManager is.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"

namespace codeact::sandbox {

enum class SandboxTaskType {
  kStartContainer,
  kStopContainer,
  kRestartContainer,
  kGetPythonState,
  kReadStateVariable,
  kClearPythonState,
  kListStateVariables,
  kExecutePython,
  kExecuteBash,
  kInstallAdditionalPackages,
  kWriteFile,
  kReadFile,
  kListFiles,
  kGetContainerInfo,
  kGetAllContainers,
  kCleanupContainers,
};

// "start_container", ... (the seed's StrEnum values).
std::string_view task_name(SandboxTaskType type);
std::optional<SandboxTaskType> parse_task_type(std::string_view name);
// All 16 names, in the seed's order (its list_tasks()).
std::vector<std::string> list_tasks();

struct SandboxBaseArgs {
  std::string container_id;
  static constexpr std::string_view kKind = "base";
};
struct StartContainerArgs {
  std::optional<std::vector<std::string>> python_packages;
  std::optional<std::vector<std::string>> system_packages;
  std::optional<std::string> container_name;  // the sandbox id ("" = generated)
  bool network = false;
  std::string memory = "512m";
  double cpus = 1.0;
  static constexpr std::string_view kKind = "start_container";
};
struct InstallAdditionalPackagesArgs {
  std::string container_id;
  std::optional<std::vector<std::string>> python_packages;
  std::optional<std::vector<std::string>> system_packages;
  static constexpr std::string_view kKind = "install_additional_packages";
};
struct ReadVariableInStateArgs {
  std::string container_id;
  std::string variable_name;
  static constexpr std::string_view kKind = "read_variable";
};
struct ExecutePythonArgs {
  std::string container_id;
  std::string code;
  core::Json variables;  // object or null
  bool persist_state = true;
  std::string execution_id;  // "" = none
  double timeout = 300;      // seconds
  static constexpr std::string_view kKind = "execute_python";
};
struct ExecuteBashArgs {
  std::string container_id;
  std::string script;
  double timeout = 300;
  static constexpr std::string_view kKind = "execute_bash";
};
struct ReadOperationsArgs {
  std::string container_id;
  std::string path;
  static constexpr std::string_view kKind = "read_operations";
};
struct WriteFileArgs {
  std::string container_id;
  std::string path;
  std::string content;  // text; or
  std::optional<std::string> content_b64;
  static constexpr std::string_view kKind = "write_file";
};

using SandboxTaskArgs =
    std::variant<SandboxBaseArgs, StartContainerArgs, InstallAdditionalPackagesArgs,
                 ReadVariableInStateArgs, ExecutePythonArgs, ExecuteBashArgs, ReadOperationsArgs,
                 WriteFileArgs>;

// Parses arguments by their "kind" discriminator (as the seed's SandboxTaskArgsAdapter);
// InvalidArgument naming the field for a missing or mistyped one.
core::Result<SandboxTaskArgs> parse_task_args(const core::Json& j);
core::Json to_json(const SandboxTaskArgs& args);

struct SandboxInputTask {
  SandboxTaskType task_name = SandboxTaskType::kGetAllContainers;
  std::optional<SandboxTaskArgs> task_args;
  core::Json extra_args;

  static core::Result<SandboxInputTask> from_json(const core::Json& j);
  core::Json to_json() const;
};

class SandboxOperations {
 public:
  explicit SandboxOperations(std::shared_ptr<SandboxManager> manager)
      : manager_(std::move(manager)) {}

  core::Result<std::string> start_container(const StartContainerArgs& args);  // the sandbox id
  core::Result<core::Json> stop_container(const SandboxBaseArgs& args);
  core::Result<core::Json> restart_container(const SandboxBaseArgs& args);
  core::Result<core::Json> get_python_state(const SandboxBaseArgs& args);  // {name: value-or-repr}
  core::Result<core::Json> read_state_variable(const ReadVariableInStateArgs& args);
  core::Result<core::Json> clear_python_state(const SandboxBaseArgs& args);
  core::Result<core::Json> list_state_variables(const SandboxBaseArgs& args);  // {name: type}
  core::Result<core::Json> execute_python(const ExecutePythonArgs& args);
  core::Result<core::Json> execute_bash(const ExecuteBashArgs& args);
  core::Result<core::Json> install_additional_packages(const InstallAdditionalPackagesArgs& args);
  core::Result<core::Json> write_file(const WriteFileArgs& args);
  core::Result<core::Json> read_file(const ReadOperationsArgs& args);
  core::Result<core::Json> list_files(const SandboxBaseArgs& args);
  core::Result<core::Json> get_container_info(const SandboxBaseArgs& args);
  core::Result<core::Json> get_all_containers();
  core::Result<core::Json> cleanup_containers();

  // Runs task.task_name with task.task_args (the seed's SandboxWorkflow.run). InvalidArgument
  // when the arguments are missing or of another kind than the operation needs.
  core::Result<core::Json> run(const SandboxInputTask& task);

  SandboxManager& manager() { return *manager_; }

 private:
  std::shared_ptr<SandboxManager> manager_;
};

}  // namespace codeact::sandbox
