// SandboxTools: one function per tool (its arguments, its body), and the list that makes them a
// toolset. tool_names() is read from that list.
#include "codeact/codeact/sandbox_tools.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "codeact/agent/schema.hpp"
#include "codeact/core/strings.hpp"

namespace codeact::codeact {
namespace {

using agent::field;
using agent::ModelRetry;
using agent::RunContext;
using agent::Tool;
using agent::ToolOutcome;
using agent::ToolResult;
using agent::ToolReturn;
using core::Json;

// What every tool body works with: the bound sandbox.
struct Bound {
  std::shared_ptr<sandbox::SandboxBackend> backend;
  SandboxToolsOptions options;
  std::shared_ptr<functions::SandboxFunctions> functions;

  sandbox::SandboxBackend& sandbox() const { return *backend; }
  const std::string& id() const { return options.sandbox_id; }
};

void append_block(std::string& out, const std::string& title, const std::string& body) {
  if (body.empty()) return;
  out += title + ":\n" + body;
  if (body.back() != '\n') out += "\n";
}

ToolResult returns(Json content, std::string text) {
  return ToolOutcome{ToolReturn{std::move(content), std::move(text)}};
}

// ---------------------------------------------------------------------------------------------
// execute_python

struct ExecutePythonArgs {
  std::string code;
  std::optional<double> timeout;
  static auto fields() {
    return std::tuple{
        field(&ExecutePythonArgs::code, "code",
              "Python code to run in the sandbox's live kernel. Variables, functions, classes and "
              "imports persist between calls. The value of a final expression is shown like in a "
              "notebook."),
        field(
            &ExecutePythonArgs::timeout, "timeout",
            "Seconds before the cell is interrupted (default 120). A timed-out cell keeps what it "
            "assigned before the interrupt.")
            .min(1),
    };
  }
};
constexpr const char* kExecutePython =
    "Run Python code in the sandbox's persistent kernel and get its output: stdout, stderr, the "
    "value of the final expression, the error with traceback, and the files and figures it "
    "produced. Save files for the user under /output.";

ToolResult execute_python(const Bound& b, const ExecutePythonArgs& a, const RunContext& ctx) {
  sandbox::ExecuteRequest req;
  req.code = a.code;
  req.execution_id = SandboxTools::execution_id(ctx);
  req.timeout_seconds = SandboxTools::timeout_for(b.options, a.timeout);
  req.max_output_bytes = b.options.max_output_bytes;
  req.cancel = ctx.cancel;
  req.on_output = ctx.on_output;  // empty when nobody watches: the kernel then does not stream
  auto r = b.functions ? b.functions->execute(b.sandbox(), b.id(), req)
                       : b.sandbox().execute(b.id(), req);
  if (!r.ok()) return tool_result_from_error(r.error());
  Json content{{"ok", r->ok},
               {"cell", r->cell},
               {"execution_id", r->execution_id},
               {"files", r->files},
               {"timed_out", r->timed_out},
               {"replayed", r->replayed},
               {"error_type", r->error ? Json(r->error->type) : Json(nullptr)},
               {"checkpoint", r->checkpoint > 0 ? Json(r->checkpoint) : Json(nullptr)},
               {"duration_ms", r->duration_ms},
               {"sandbox", b.id()}};
  return returns(std::move(content), SandboxTools::format_cell(*r, req.timeout_seconds));
}

// ---------------------------------------------------------------------------------------------
// execute_bash

struct ExecuteBashArgs {
  std::string script;
  std::optional<double> timeout;
  static auto fields() {
    return std::tuple{
        field(
            &ExecuteBashArgs::script, "script",
            "A bash script, run with /bin/bash -c in /output as the sandbox's unprivileged user."),
        field(&ExecuteBashArgs::timeout, "timeout",
              "Seconds before the script is killed (default 120).")
            .min(1),
    };
  }
};
constexpr const char* kExecuteBash =
    "Run a bash script in the sandbox (working directory /output) and get its exit code and "
    "output.";

ToolResult execute_bash(const Bound& b, const ExecuteBashArgs& a, const RunContext& ctx) {
  const double timeout = SandboxTools::timeout_for(b.options, a.timeout);
  // Like cells, a script runs once per call: a retried call gets the recorded result.
  auto r = b.sandbox().bash(b.id(), a.script, timeout, SandboxTools::execution_id(ctx));
  if (!r.ok()) return tool_result_from_error(r.error());
  std::string text = r->timed_out ? fmt::format("timed out after {:g} s (killed)\n", timeout)
                                  : fmt::format("exit code {}\n", r->exit_code);
  if (r->replayed) text += "(this call already ran; its recorded result is shown)\n";
  append_block(text, "stdout", cut_middle(r->stdout_text, b.options.max_output_bytes));
  append_block(text, "stderr", cut_middle(r->stderr_text, b.options.max_output_bytes));
  return returns(Json{{"exit_code", r->exit_code},
                      {"timed_out", r->timed_out},
                      {"duration_ms", r->duration_ms}},
                 std::move(text));
}

// ---------------------------------------------------------------------------------------------
// read_file, write_file, list_files

struct PathArgs {
  std::string path;
  static auto fields() {
    return std::tuple{field(&PathArgs::path, "path",
                            "File path in the sandbox, e.g. /output/report.md (relative paths are "
                            "under /output).")};
  }
};
constexpr const char* kReadFile =
    "Read a text file from the sandbox (long files are shown cut in the middle).";

ToolResult read_file(const Bound& b, const PathArgs& a, const RunContext&) {
  auto r = b.sandbox().read_file(b.id(), a.path);
  if (!r.ok()) return tool_result_from_error(r.error());
  Json content{{"path", a.path}, {"size", r->size()}};
  // A NUL byte is valid UTF-8 but no text a model should read.
  if (!core::is_valid_utf8(*r) || r->find('\0') != std::string::npos) {
    return returns(std::move(content),
                   fmt::format("{} is a binary file of {} bytes; open it with execute_python to "
                               "process it",
                               a.path, r->size()));
  }
  return returns(std::move(content), cut_middle(*r, b.options.max_read_bytes));
}

struct WriteFileArgs {
  std::string path;
  std::string content;
  static auto fields() {
    return std::tuple{
        field(&WriteFileArgs::path, "path",
              "Where to write, under /output (relative paths are under /output); parent "
              "directories are created."),
        field(&WriteFileArgs::content, "content", "The text to write (UTF-8)."),
    };
  }
};
constexpr const char* kWriteFile = "Write a text file in the sandbox, under /output.";

ToolResult write_file(const Bound& b, const WriteFileArgs& a, const RunContext& ctx) {
  auto s = b.sandbox().write_file(b.id(), a.path, a.content, SandboxTools::execution_id(ctx));
  if (!s.ok()) return tool_result_from_error(s.error());
  return returns(Json{{"path", a.path}, {"size", a.content.size()}},
                 fmt::format("wrote {} bytes to {}", a.content.size(), a.path));
}

struct ListFilesArgs {
  std::string path;
  static auto fields() {
    return std::tuple{
        field(&ListFilesArgs::path, "path", "Directory to list recursively (default /output).")
            .with_default()};
  }
};
constexpr const char* kListFiles =
    "List the files in the sandbox under a directory (default /output), with their sizes.";

ToolResult list_files(const Bound& b, const ListFilesArgs& a, const RunContext&) {
  const std::string path = a.path.empty() ? b.options.files_root : a.path;
  auto r = b.sandbox().list_files(b.id(), path);
  if (!r.ok()) return tool_result_from_error(r.error());
  Json files = Json::array();
  std::string text;
  for (const auto& f : *r) {
    files.push_back(f.path);
    text += fmt::format("{} ({} bytes)\n", f.path, f.size);
  }
  if (text.empty()) text = "no files under " + path;
  return returns(Json{{"files", files}}, std::move(text));
}

// ---------------------------------------------------------------------------------------------
// list_state_variables, read_state_variable, clear_python_state

struct NoArgs {
  static auto fields() { return std::tuple<>{}; }
};
constexpr const char* kListStateVariables =
    "List the variables alive in the sandbox's kernel with their types.";

ToolResult list_state_variables(const Bound& b, const NoArgs&, const RunContext&) {
  auto r = b.sandbox().variables(b.id());
  if (!r.ok()) return tool_result_from_error(r.error());
  Json vars = Json::object();
  std::string text;
  for (const auto& v : r->value("variables", Json::array())) {
    const std::string name = core::json_string(v, "name");
    const std::string type = core::json_string(v, "type");
    vars[name] = type;
    text += fmt::format("{}: {} = {}", name, type, core::json_string(v, "preview"));
    if (!core::json_bool(v, "persisted", true))
      text += "  [not persisted: " + core::json_string(v, "reason") + "]";
    text += "\n";
  }
  if (text.empty()) text = "no variables";
  return returns(std::move(vars), std::move(text));
}

struct ReadVariableArgs {
  std::string variable_name;
  static auto fields() {
    return std::tuple{field(&ReadVariableArgs::variable_name, "variable_name",
                            "Name of a variable in the sandbox.")};
  }
};
constexpr const char* kReadStateVariable =
    "Show the value of one variable of the sandbox's kernel.";

ToolResult read_state_variable(const Bound& b, const ReadVariableArgs& a, const RunContext&) {
  auto r = b.sandbox().variable(b.id(), a.variable_name);
  if (!r.ok()) return tool_result_from_error(r.error());
  const std::string type = core::json_string(*r, "value_type");
  return returns(Json{{"name", a.variable_name}, {"type", type}},
                 fmt::format("{}: {} = {}", a.variable_name, type,
                             cut_middle(core::json_string(*r, "repr"), b.options.max_read_bytes)));
}

constexpr const char* kClearPythonState =
    "Delete every variable, function and import from the sandbox's kernel and its saved state "
    "(files are kept).";

ToolResult clear_python_state(const Bound& b, const NoArgs&, const RunContext& ctx) {
  auto r = b.sandbox().clear(b.id(), SandboxTools::execution_id(ctx));
  if (!r.ok()) return tool_result_from_error(r.error());
  std::vector<std::string> names;
  for (const auto& n : r->value("cleared", Json::array())) {
    if (n.is_string()) names.push_back(n.get<std::string>());
  }
  std::string text =
      names.empty() ? std::string("the state was already empty")
                    : fmt::format("cleared {} names: {}", names.size(), core::join(names, ", "));
  return returns(std::move(*r), std::move(text));
}

// ---------------------------------------------------------------------------------------------
// install_additional_packages

struct InstallArgs {
  std::vector<std::string> python_packages;
  std::vector<std::string> system_packages;
  static auto fields() {
    return std::tuple{
        field(&InstallArgs::python_packages, "python_packages",
              "PyPI requirements, e.g. [\"scikit-learn\", \"requests==2.32.3\"].")
            .with_default(),
        field(&InstallArgs::system_packages, "system_packages",
              "Debian packages, e.g. [\"poppler-utils\"].")
            .with_default(),
    };
  }
};
constexpr const char* kInstallAdditionalPackages =
    "Install Python packages (pip) and/or Debian system packages into the sandbox. Needs the "
    "sandbox to have network access.";

ToolResult install_additional_packages(const Bound& b, const InstallArgs& a,
                                       const RunContext& ctx) {
  if (a.python_packages.empty() && a.system_packages.empty())
    return ToolOutcome{ModelRetry{"give python_packages and/or system_packages"}};
  std::string text;
  Json installed = Json::array();
  for (bool system : {false, true}) {
    const auto& packages = system ? a.system_packages : a.python_packages;
    if (packages.empty()) continue;
    auto r = b.sandbox().install(b.id(), packages, system, SandboxTools::execution_id(ctx));
    if (!r.ok()) return tool_result_from_error(r.error());
    for (const auto& p : r->installed) installed.push_back(p);
    text += fmt::format("{} packages installed: {}\n", system ? "system" : "Python",
                        core::join(r->installed, ", "));
    if (!r->ok)
      append_block(text, "installer output", cut_middle(r->output, b.options.max_output_bytes));
  }
  return returns(Json{{"installed", installed}}, std::move(text));
}

// ---------------------------------------------------------------------------------------------
// The list

template <typename Args>
using ToolBody = ToolResult (*)(const Bound&, const Args&, const RunContext&);

// Every sandbox tool runs alone (the sandbox runs one thing at a time) and has the same budget
// of failures in a row.
template <typename Args>
Tool tool(const std::shared_ptr<const Bound>& b, const char* name, const char* description,
          ToolBody<Args> body) {
  return Tool::typed<Args>(
             name, description,
             [b, body](const Args& a, const RunContext& ctx) { return body(*b, a, ctx); })
      .sequential()
      .max_retries(b->options.max_retries);
}

std::vector<Tool> sandbox_tools(const std::shared_ptr<const Bound>& b) {
  return {
      tool<ExecutePythonArgs>(b, "execute_python", kExecutePython, execute_python),
      tool<ExecuteBashArgs>(b, "execute_bash", kExecuteBash, execute_bash),
      tool<PathArgs>(b, "read_file", kReadFile, read_file),
      tool<WriteFileArgs>(b, "write_file", kWriteFile, write_file),
      tool<ListFilesArgs>(b, "list_files", kListFiles, list_files),
      tool<NoArgs>(b, "list_state_variables", kListStateVariables, list_state_variables),
      tool<ReadVariableArgs>(b, "read_state_variable", kReadStateVariable, read_state_variable),
      tool<InstallArgs>(b, "install_additional_packages", kInstallAdditionalPackages,
                        install_additional_packages),
      tool<NoArgs>(b, "clear_python_state", kClearPythonState, clear_python_state),
  };
}

}  // namespace

ToolResult tool_result_from_error(const core::Error& e) {
  switch (e.code()) {
    case core::Code::kInvalidArgument:
    case core::Code::kNotFound:
    case core::Code::kPermissionDenied:
    case core::Code::kFailedPrecondition:
    case core::Code::kOutOfRange:
    case core::Code::kAlreadyExists:
      return ToolOutcome{ModelRetry{e.message()}};
    default:
      return e;
  }
}

std::string cut_middle(const std::string& text, int64_t max_bytes, int64_t* omitted) {
  if (omitted) *omitted = 0;
  if (max_bytes <= 0 || static_cast<int64_t>(text.size()) <= max_bytes) return text;
  auto continuation = [&](size_t pos) {
    return pos < text.size() && (static_cast<unsigned char>(text[pos]) >> 6) == 0x2;
  };
  // The head ends and the tail starts on character starts, each within its half of the budget.
  const size_t half = static_cast<size_t>(max_bytes / 2);
  size_t head_end = half;
  while (head_end > 0 && continuation(head_end)) --head_end;
  size_t tail_start = text.size() - half;
  while (continuation(tail_start)) ++tail_start;
  const int64_t cut = static_cast<int64_t>(tail_start - head_end);
  if (omitted) *omitted = cut;
  std::string out = text.substr(0, head_end);
  if (!out.empty() && out.back() != '\n') out += "\n";
  out += fmt::format("... [{} bytes omitted] ...\n", cut);
  out += text.substr(tail_start);
  return out;
}

core::Status SandboxToolsOptions::validate() const {
  auto bad = [](const std::string& what) {
    return core::invalid_argument("sandbox tools options: " + what);
  };
  if (sandbox_id.empty()) return bad("sandbox_id is required");
  if (!(max_timeout_seconds >= 1))
    return bad(fmt::format("max_timeout_seconds must be >= 1, not {:g}", max_timeout_seconds));
  // A default below 1 s is raised to 1 s, like a timeout the model asks for (timeout_for).
  if (!(default_timeout_seconds > 0))
    return bad(
        fmt::format("default_timeout_seconds must be positive, not {:g}", default_timeout_seconds));
  if (max_output_bytes < 0 || max_read_bytes < 0)
    return bad("max_output_bytes and max_read_bytes must be >= 0 (0 = no limit)");
  if (max_retries < 0) return bad("max_retries must be >= 0");
  if (files_root.empty()) return bad("files_root must not be empty");
  return core::ok_status();
}

SandboxTools::SandboxTools(std::shared_ptr<sandbox::SandboxBackend> backend,
                           SandboxToolsOptions options,
                           std::shared_ptr<functions::SandboxFunctions> functions)
    : options_(std::move(options)) {
  auto bound =
      std::make_shared<const Bound>(Bound{std::move(backend), options_, std::move(functions)});
  tools_ = std::make_shared<agent::FunctionToolset>(sandbox_tools(bound), kId);
}

std::vector<std::string> SandboxTools::tool_names() {
  std::vector<std::string> names;
  for (const auto& t : sandbox_tools(std::make_shared<const Bound>()))
    names.push_back(t.info.name());
  return names;
}

std::string SandboxTools::execution_id(const RunContext& ctx) {
  return fmt::format("{}/{}/{}", ctx.run_id, ctx.run_step, ctx.tool_call_id);
}

double SandboxTools::timeout_for(const SandboxToolsOptions& options, std::optional<double> asked) {
  const double most = std::max(1.0, options.max_timeout_seconds);
  return std::clamp(asked.value_or(options.default_timeout_seconds), 1.0, most);
}

std::string SandboxTools::format_cell(const sandbox::ExecuteResult& r, double timeout_seconds) {
  std::string out;
  if (r.timed_out) {
    out +=
        fmt::format("cell {} timed out after {:g} s and was interrupted", r.cell, timeout_seconds);
    out += r.kernel_restarted
               ? " (the kernel did not stop: it was restarted from the last snapshot)\n"
               : "\n";
  } else if (r.ok) {
    out += fmt::format("cell {} ran in {} ms\n", r.cell, r.duration_ms);
  } else {
    out += fmt::format("cell {} raised {}\n", r.cell,
                       r.error ? r.error->type : std::string("an error"));
  }
  if (r.replayed) out += "(this call already ran; its recorded result is shown)\n";
  append_block(out, "stdout", r.stdout_text);
  append_block(out, "stderr", r.stderr_text);
  if (r.truncated.is_object()) {
    for (auto it = r.truncated.begin(); it != r.truncated.end(); ++it) {
      out += fmt::format("[{} was cut: {} bytes omitted from the middle]\n", it.key(),
                         it.value().dump());
    }
  }
  if (r.result) out += "result: " + *r.result + "\n";
  if (r.error && !r.timed_out) {
    std::string tb =
        r.error->traceback.empty() ? r.error->type + ": " + r.error->message : r.error->traceback;
    append_block(out, "error", tb);
  }
  std::vector<std::string> figures;
  for (const auto& o : r.outputs) figures.push_back(core::json_string(o, "path"));
  std::vector<std::string> files;
  for (const auto& f : r.files) {
    if (std::find(figures.begin(), figures.end(), f) == figures.end()) files.push_back(f);
  }
  if (!files.empty()) out += "files written: " + core::join(files, ", ") + "\n";
  if (!figures.empty()) out += "figures saved: " + core::join(figures, ", ") + "\n";
  if (!r.not_persisted.empty()) {
    std::vector<std::string> names;
    for (const auto& np : r.not_persisted)
      names.push_back(core::json_string(np, "name") + " (" + core::json_string(np, "reason") + ")");
    out += "not persisted (lost if the sandbox restarts): " + core::join(names, ", ") + "\n";
  }
  if (r.kernel_restarted && !r.timed_out)
    out += "notice: the kernel was restarted from the last snapshot\n";
  if (!r.notice.empty()) out += "notice: " + r.notice + "\n";
  return out;
}

agent::Task<core::Result<std::vector<agent::ToolInfo>>> SandboxTools::get_tools(
    const RunContext& ctx) {
  return tools_->get_tools(ctx);
}

agent::Task<ToolResult> SandboxTools::call_tool(const agent::ToolCall& call,
                                                const RunContext& ctx) {
  return tools_->call_tool(call, ctx);
}

}  // namespace codeact::codeact
