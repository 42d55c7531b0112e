#include "codeact/sandbox/operations.hpp"

#include <fmt/format.h>

#include <array>

#include "codeact/core/base64.hpp"
#include "codeact/core/strings.hpp"

namespace codeact::sandbox {
namespace {

using core::Json;
using core::Result;

constexpr std::array<std::string_view, 16> kTaskNames = {
    "start_container",      "stop_container",
    "restart_container",    "get_python_state",
    "read_state_variable",  "clear_python_state",
    "list_state_variables", "execute_python",
    "execute_bash",         "install_additional_packages",
    "write_file",           "read_file",
    "list_files",           "get_container_info",
    "get_all_containers",   "cleanup_containers"};

Result<std::string> req_string(const Json& j, const char* field, std::string_view kind) {
  if (!j.contains(field) || !j[field].is_string()) {
    return core::invalid_argument(fmt::format("{} arguments need \"{}\" (a string)", kind, field));
  }
  return j[field].get<std::string>();
}

Result<std::optional<std::vector<std::string>>> opt_list(const Json& j, const char* field) {
  if (!j.contains(field) || j[field].is_null()) return std::optional<std::vector<std::string>>();
  if (!j[field].is_array())
    return core::invalid_argument(fmt::format("\"{}\" must be a list of strings", field));
  std::vector<std::string> out;
  for (const auto& v : j[field]) {
    if (!v.is_string())
      return core::invalid_argument(fmt::format("\"{}\" must be a list of strings", field));
    out.push_back(v.get<std::string>());
  }
  return std::optional(out);
}

template <typename T>
Result<T> expect(const SandboxInputTask& task) {
  if (!task.task_args) {
    return core::invalid_argument(
        fmt::format("{} needs arguments of kind \"{}\"", task_name(task.task_name), T::kKind));
  }
  if (const T* a = std::get_if<T>(&*task.task_args)) return *a;
  return core::invalid_argument(
      fmt::format("{} needs arguments of kind \"{}\"", task_name(task.task_name), T::kKind));
}

// Operations that only need a container id accept any argument kind that carries one.
Result<SandboxBaseArgs> base_of(const SandboxInputTask& task) {
  if (!task.task_args) {
    return core::invalid_argument(
        fmt::format("{} needs a container_id", task_name(task.task_name)));
  }
  return std::visit(
      [&](const auto& a) -> Result<SandboxBaseArgs> {
        if constexpr (requires { a.container_id; }) {
          return SandboxBaseArgs{a.container_id};
        } else {
          return core::invalid_argument(
              fmt::format("{} needs a container_id", task_name(task.task_name)));
        }
      },
      *task.task_args);
}

}  // namespace

std::string_view task_name(SandboxTaskType type) { return kTaskNames[static_cast<size_t>(type)]; }

std::optional<SandboxTaskType> parse_task_type(std::string_view name) {
  for (size_t i = 0; i < kTaskNames.size(); ++i) {
    if (kTaskNames[i] == name) return static_cast<SandboxTaskType>(i);
  }
  return std::nullopt;
}

std::vector<std::string> list_tasks() { return {kTaskNames.begin(), kTaskNames.end()}; }

Result<SandboxTaskArgs> parse_task_args(const Json& j) {
  if (!j.is_object()) return core::invalid_argument("sandbox task arguments must be a JSON object");
  std::string kind = core::json_string(j, "kind", "base");
  if (kind == "base") {
    CODEACT_TRY(auto id, req_string(j, "container_id", kind));
    return SandboxTaskArgs(SandboxBaseArgs{id});
  }
  if (kind == "start_container") {
    StartContainerArgs a;
    CODEACT_TRY(a.python_packages, opt_list(j, "python_packages"));
    CODEACT_TRY(a.system_packages, opt_list(j, "system_packages"));
    if (j.contains("container_name") && j["container_name"].is_string())
      a.container_name = j["container_name"].get<std::string>();
    a.network = core::json_bool(j, "network", false);
    a.memory = core::json_string(j, "memory", "512m");
    a.cpus = core::json_number(j, "cpus", 1.0);
    return SandboxTaskArgs(a);
  }
  if (kind == "install_additional_packages") {
    InstallAdditionalPackagesArgs a;
    CODEACT_TRY(a.container_id, req_string(j, "container_id", kind));
    CODEACT_TRY(a.python_packages, opt_list(j, "python_packages"));
    CODEACT_TRY(a.system_packages, opt_list(j, "system_packages"));
    return SandboxTaskArgs(a);
  }
  if (kind == "read_variable") {
    ReadVariableInStateArgs a;
    CODEACT_TRY(a.container_id, req_string(j, "container_id", kind));
    CODEACT_TRY(a.variable_name, req_string(j, "variable_name", kind));
    return SandboxTaskArgs(a);
  }
  if (kind == "execute_python") {
    ExecutePythonArgs a;
    CODEACT_TRY(a.container_id, req_string(j, "container_id", kind));
    CODEACT_TRY(a.code, req_string(j, "code", kind));
    a.variables = j.value("variables", Json());
    if (!a.variables.is_null() && !a.variables.is_object()) {
      return core::invalid_argument("\"variables\" must be an object of name -> value");
    }
    a.persist_state = core::json_bool(j, "persist_state", true);
    a.execution_id = core::json_string(j, "execution_id");
    a.timeout = core::json_number(j, "timeout", 300);
    return SandboxTaskArgs(a);
  }
  if (kind == "execute_bash") {
    ExecuteBashArgs a;
    CODEACT_TRY(a.container_id, req_string(j, "container_id", kind));
    CODEACT_TRY(a.script, req_string(j, "script", kind));
    a.timeout = core::json_number(j, "timeout", 300);
    return SandboxTaskArgs(a);
  }
  if (kind == "read_operations") {
    ReadOperationsArgs a;
    CODEACT_TRY(a.container_id, req_string(j, "container_id", kind));
    CODEACT_TRY(a.path, req_string(j, "path", kind));
    return SandboxTaskArgs(a);
  }
  if (kind == "write_file") {
    WriteFileArgs a;
    CODEACT_TRY(a.container_id, req_string(j, "container_id", kind));
    CODEACT_TRY(a.path, req_string(j, "path", kind));
    a.content = core::json_string(j, "content");
    if (j.contains("content_b64") && j["content_b64"].is_string())
      a.content_b64 = j["content_b64"].get<std::string>();
    return SandboxTaskArgs(a);
  }
  return core::invalid_argument(
      fmt::format("unknown sandbox argument kind \"{}\" (expected base, start_container, "
                  "install_additional_packages, "
                  "read_variable, execute_python, execute_bash, read_operations, write_file)",
                  kind));
}

Json to_json(const SandboxTaskArgs& args) {
  return std::visit(
      [](const auto& a) -> Json {
        using T = std::decay_t<decltype(a)>;
        Json j{{"kind", std::string(T::kKind)}};
        if constexpr (std::is_same_v<T, SandboxBaseArgs>) {
          j["container_id"] = a.container_id;
        } else if constexpr (std::is_same_v<T, StartContainerArgs>) {
          j["python_packages"] = a.python_packages ? Json(*a.python_packages) : Json();
          j["system_packages"] = a.system_packages ? Json(*a.system_packages) : Json();
          j["container_name"] = a.container_name ? Json(*a.container_name) : Json();
          j["network"] = a.network;
          j["memory"] = a.memory;
          j["cpus"] = a.cpus;
        } else if constexpr (std::is_same_v<T, InstallAdditionalPackagesArgs>) {
          j["container_id"] = a.container_id;
          j["python_packages"] = a.python_packages ? Json(*a.python_packages) : Json();
          j["system_packages"] = a.system_packages ? Json(*a.system_packages) : Json();
        } else if constexpr (std::is_same_v<T, ReadVariableInStateArgs>) {
          j["container_id"] = a.container_id;
          j["variable_name"] = a.variable_name;
        } else if constexpr (std::is_same_v<T, ExecutePythonArgs>) {
          j["container_id"] = a.container_id;
          j["code"] = a.code;
          j["variables"] = a.variables;
          j["persist_state"] = a.persist_state;
          j["execution_id"] = a.execution_id;
          j["timeout"] = a.timeout;
        } else if constexpr (std::is_same_v<T, ExecuteBashArgs>) {
          j["container_id"] = a.container_id;
          j["script"] = a.script;
          j["timeout"] = a.timeout;
        } else if constexpr (std::is_same_v<T, ReadOperationsArgs>) {
          j["container_id"] = a.container_id;
          j["path"] = a.path;
        } else if constexpr (std::is_same_v<T, WriteFileArgs>) {
          j["container_id"] = a.container_id;
          j["path"] = a.path;
          j["content"] = a.content;
          if (a.content_b64) j["content_b64"] = *a.content_b64;
        }
        return j;
      },
      args);
}

Result<SandboxInputTask> SandboxInputTask::from_json(const Json& j) {
  if (!j.is_object()) return core::invalid_argument("a sandbox task must be a JSON object");
  std::string name = core::json_string(j, "task_name");
  auto type = parse_task_type(name);
  if (!type) {
    std::vector<std::string> all(kTaskNames.begin(), kTaskNames.end());
    return core::invalid_argument(
        fmt::format("unknown sandbox task \"{}\"; known: {}", name, core::join(all, ", ")));
  }
  SandboxInputTask t;
  t.task_name = *type;
  if (j.contains("task_args") && !j["task_args"].is_null()) {
    CODEACT_TRY(auto args, parse_task_args(j["task_args"]));
    t.task_args = std::move(args);
  }
  t.extra_args = j.value("extra_args", Json());
  return t;
}

Json SandboxInputTask::to_json() const {
  return Json{{"task_name", std::string(sandbox::task_name(this->task_name))},
              {"task_args", task_args ? sandbox::to_json(*task_args) : Json()},
              {"extra_args", extra_args}};
}

// ---- operations ----------------------------------------------------------------------------

Result<std::string> SandboxOperations::start_container(const StartContainerArgs& args) {
  SandboxOptions o;
  o.id = args.container_name.value_or("");
  o.python_packages = args.python_packages.value_or(std::vector<std::string>{});
  o.system_packages = args.system_packages.value_or(std::vector<std::string>{});
  o.network = args.network;
  o.memory = args.memory;
  o.cpus = args.cpus;
  CODEACT_TRY(auto info, manager_->start(o));
  return info.id;
}

Result<Json> SandboxOperations::stop_container(const SandboxBaseArgs& a) {
  CODEACT_TRY_STATUS(manager_->stop(a.container_id));
  return Json{{"container_id", a.container_id}, {"status", "stopped"}};
}

Result<Json> SandboxOperations::restart_container(const SandboxBaseArgs& a) {
  CODEACT_TRY(auto info, manager_->restart(a.container_id));
  return Json{{"container_id", a.container_id}, {"status", "restarted"}, {"cell", info.cell}};
}

Result<Json> SandboxOperations::get_python_state(const SandboxBaseArgs& a) {
  CODEACT_TRY(Json vars, manager_->variables(a.container_id));
  Json state = Json::object();
  for (const auto& v : vars.value("variables", Json::array())) {
    std::string name = core::json_string(v, "name");
    if (core::json_string(v, "kind") != "data") continue;
    auto one = manager_->variable(a.container_id, name);
    if (!one.ok()) continue;
    state[name] = one->contains("value") && !(*one)["value"].is_null()
                      ? (*one)["value"]
                      : Json(core::json_string(*one, "repr"));
  }
  return state;
}

Result<Json> SandboxOperations::read_state_variable(const ReadVariableInStateArgs& a) {
  return manager_->variable(a.container_id, a.variable_name);
}

Result<Json> SandboxOperations::clear_python_state(const SandboxBaseArgs& a) {
  return manager_->clear(a.container_id);
}

Result<Json> SandboxOperations::list_state_variables(const SandboxBaseArgs& a) {
  CODEACT_TRY(Json vars, manager_->variables(a.container_id));
  Json out = Json::object();
  for (const auto& v : vars.value("variables", Json::array())) {
    out[core::json_string(v, "name")] = core::json_string(v, "type");
  }
  return out;
}

Result<Json> SandboxOperations::execute_python(const ExecutePythonArgs& a) {
  ExecuteRequest req;
  req.code = a.code;
  req.variables = a.variables;
  req.persist = a.persist_state;
  req.execution_id = a.execution_id;
  req.timeout_seconds = a.timeout;
  CODEACT_TRY(auto r, manager_->execute(a.container_id, req));
  Json j = r.to_json();
  j["success"] = r.ok;  // the seed's field names
  j["output"] = r.stdout_text;
  return j;
}

Result<Json> SandboxOperations::execute_bash(const ExecuteBashArgs& a) {
  CODEACT_TRY(auto r, manager_->bash(a.container_id, a.script, a.timeout));
  Json j = r.to_json();
  j["success"] = r.exit_code == 0;
  j["output"] = r.stdout_text;
  return j;
}

Result<Json> SandboxOperations::install_additional_packages(
    const InstallAdditionalPackagesArgs& a) {
  Json out{{"container_id", a.container_id}};
  if (a.system_packages && !a.system_packages->empty()) {
    CODEACT_TRY(auto r, manager_->install(a.container_id, *a.system_packages, true));
    out["system"] = r.to_json();
  }
  if (a.python_packages && !a.python_packages->empty()) {
    CODEACT_TRY(auto r, manager_->install(a.container_id, *a.python_packages, false));
    out["python"] = r.to_json();
  }
  if (!out.contains("system") && !out.contains("python")) {
    return core::invalid_argument(
        "install_additional_packages needs python_packages or system_packages");
  }
  return out;
}

Result<Json> SandboxOperations::write_file(const WriteFileArgs& a) {
  std::string data = a.content;
  if (a.content_b64) {
    CODEACT_TRY(data, core::base64_decode(*a.content_b64));
  }
  CODEACT_TRY_STATUS(manager_->write_file(a.container_id, a.path, data));
  return Json{{"path", a.path}, {"size", data.size()}, {"success", true}};
}

Result<Json> SandboxOperations::read_file(const ReadOperationsArgs& a) {
  CODEACT_TRY(std::string data, manager_->read_file(a.container_id, a.path));
  Json out{{"path", a.path}, {"size", data.size()}, {"content_b64", core::base64_encode(data)}};
  // Text when it is valid UTF-8 (what the seed returned); binary files only in content_b64.
  out["content"] = core::is_valid_utf8(data) ? Json(data) : Json(nullptr);
  return out;
}

Result<Json> SandboxOperations::list_files(const SandboxBaseArgs& a) {
  CODEACT_TRY(auto files, manager_->list_files(a.container_id));
  Json arr = Json::array();
  for (const auto& f : files) arr.push_back(f.path);
  return Json{{"files", arr}};
}

Result<Json> SandboxOperations::get_container_info(const SandboxBaseArgs& a) {
  CODEACT_TRY(auto info, manager_->info(a.container_id));
  return info.to_json();
}

Result<Json> SandboxOperations::get_all_containers() {
  CODEACT_TRY(auto all, manager_->list());
  Json arr = Json::array();
  for (const auto& s : all) arr.push_back(s.to_json());
  return Json{{"containers", arr}};
}

Result<Json> SandboxOperations::cleanup_containers() {
  CODEACT_TRY(auto removed, manager_->cleanup(false));
  return Json{{"removed", removed}};
}

Result<Json> SandboxOperations::run(const SandboxInputTask& task) {
  switch (task.task_name) {
    case SandboxTaskType::kStartContainer: {
      StartContainerArgs a;
      if (task.task_args) {
        CODEACT_TRY(a, expect<StartContainerArgs>(task));
      }
      CODEACT_TRY(auto id, start_container(a));
      return Json(id);
    }
    case SandboxTaskType::kStopContainer: {
      CODEACT_TRY(auto a, base_of(task));
      return stop_container(a);
    }
    case SandboxTaskType::kRestartContainer: {
      CODEACT_TRY(auto a, base_of(task));
      return restart_container(a);
    }
    case SandboxTaskType::kGetPythonState: {
      CODEACT_TRY(auto a, base_of(task));
      return get_python_state(a);
    }
    case SandboxTaskType::kReadStateVariable: {
      CODEACT_TRY(auto a, expect<ReadVariableInStateArgs>(task));
      return read_state_variable(a);
    }
    case SandboxTaskType::kClearPythonState: {
      CODEACT_TRY(auto a, base_of(task));
      return clear_python_state(a);
    }
    case SandboxTaskType::kListStateVariables: {
      CODEACT_TRY(auto a, base_of(task));
      return list_state_variables(a);
    }
    case SandboxTaskType::kExecutePython: {
      CODEACT_TRY(auto a, expect<ExecutePythonArgs>(task));
      return execute_python(a);
    }
    case SandboxTaskType::kExecuteBash: {
      CODEACT_TRY(auto a, expect<ExecuteBashArgs>(task));
      return execute_bash(a);
    }
    case SandboxTaskType::kInstallAdditionalPackages: {
      CODEACT_TRY(auto a, expect<InstallAdditionalPackagesArgs>(task));
      return install_additional_packages(a);
    }
    case SandboxTaskType::kWriteFile: {
      CODEACT_TRY(auto a, expect<WriteFileArgs>(task));
      return write_file(a);
    }
    case SandboxTaskType::kReadFile: {
      CODEACT_TRY(auto a, expect<ReadOperationsArgs>(task));
      return read_file(a);
    }
    case SandboxTaskType::kListFiles: {
      CODEACT_TRY(auto a, base_of(task));
      return list_files(a);
    }
    case SandboxTaskType::kGetContainerInfo: {
      CODEACT_TRY(auto a, base_of(task));
      return get_container_info(a);
    }
    case SandboxTaskType::kGetAllContainers:
      return get_all_containers();
    case SandboxTaskType::kCleanupContainers:
      return cleanup_containers();
  }
  return core::invalid_argument("unknown sandbox task");
}

}  // namespace codeact::sandbox
