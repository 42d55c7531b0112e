#include "codeact/codeact/sandbox_tools.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "codeact/agent/schema.hpp"

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

// ---------------------------------------------------------------------------------------------
// Arguments the model sends (no container id anywhere: the sandbox is bound).

struct ExecutePythonArgs {
  std::string code;
  std::optional<double> timeout;
  static auto fields() {
    return std::tuple{
        field(
            &ExecutePythonArgs::code, "code",
            "Python code to run in the sandbox's live kernel. Variables, functions, classes and "
            "imports "
            "persist between calls. The value of a final expression is shown like in a notebook."),
        field(
            &ExecutePythonArgs::timeout, "timeout",
            "Seconds before the cell is interrupted (default 120). A timed-out cell keeps what it "
            "assigned before the interrupt.")
            .min(1),
    };
  }
};

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

struct PathArgs {
  std::string path;
  static auto fields() {
    return std::tuple{field(
        &PathArgs::path, "path",
        "File path in the sandbox, e.g. /output/report.md (relative paths are under /output).")};
  }
};

struct WriteFileArgs {
  std::string path;
  std::string content;
  static auto fields() {
    return std::tuple{
        field(&WriteFileArgs::path, "path",
              "Where to write, under /output (relative paths are under /output); parent "
              "directories are "
              "created."),
        field(&WriteFileArgs::content, "content", "The text to write (UTF-8)."),
    };
  }
};

struct ListFilesArgs {
  std::string path;
  static auto fields() {
    return std::tuple{
        field(&ListFilesArgs::path, "path", "Directory to list recursively (default /output).")
            .with_default()};
  }
};

struct NoArgs {
  static auto fields() { return std::tuple<>{}; }
};

struct ReadVariableArgs {
  std::string variable_name;
  static auto fields() {
    return std::tuple{field(&ReadVariableArgs::variable_name, "variable_name",
                            "Name of a variable in the sandbox.")};
  }
};

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

// An error the model can act on becomes a retry prompt; an infrastructure error stays an Error
// (a durable wrapper retries it; the loop shows it to the model if it persists).
ToolResult from_error(const core::Error& e) {
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

bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == 0) return false;
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    }
    i += n;
  }
  return true;
}

void append_block(std::string& out, const std::string& title, const std::string& body) {
  if (body.empty()) return;
  out += title + ":\n" + body;
  if (body.back() != '\n') out += "\n";
}

std::string join(const std::vector<std::string>& items, const std::string& sep = ", ") {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

}  // namespace

std::string cut_middle(const std::string& text, int64_t max_bytes, int64_t* omitted) {
  if (omitted) *omitted = 0;
  if (max_bytes <= 0 || static_cast<int64_t>(text.size()) <= max_bytes) return text;
  auto boundary = [&](size_t pos) {  // back up to the start of a UTF-8 character
    while (pos > 0 && pos < text.size() && (static_cast<unsigned char>(text[pos]) >> 6) == 0x2)
      --pos;
    return pos;
  };
  size_t half = static_cast<size_t>(max_bytes / 2);
  size_t head_end = boundary(half);
  size_t tail_start = boundary(text.size() - half);
  int64_t cut = static_cast<int64_t>(tail_start - head_end);
  if (omitted) *omitted = cut;
  std::string out = text.substr(0, head_end);
  if (!out.empty() && out.back() != '\n') out += "\n";
  out += fmt::format("... [{} bytes omitted] ...\n", cut);
  out += text.substr(tail_start);
  return out;
}

Json SandboxToolsOptions::to_json() const {
  return Json{{"sandbox_id", sandbox_id},
              {"default_timeout_seconds", default_timeout_seconds},
              {"max_timeout_seconds", max_timeout_seconds},
              {"max_output_bytes", max_output_bytes},
              {"max_read_bytes", max_read_bytes},
              {"max_retries", max_retries},
              {"files_root", files_root}};
}

core::Result<SandboxToolsOptions> SandboxToolsOptions::from_json(const Json& j) {
  if (!j.is_object()) return core::invalid_argument("sandbox tools options: expected an object");
  SandboxToolsOptions o;
  o.sandbox_id = core::json_string(j, "sandbox_id");
  if (o.sandbox_id.empty())
    return core::invalid_argument("sandbox tools options: sandbox_id is required");
  o.default_timeout_seconds =
      core::json_number(j, "default_timeout_seconds", o.default_timeout_seconds);
  o.max_timeout_seconds = core::json_number(j, "max_timeout_seconds", o.max_timeout_seconds);
  o.max_output_bytes = core::json_int(j, "max_output_bytes", o.max_output_bytes);
  o.max_read_bytes = core::json_int(j, "max_read_bytes", o.max_read_bytes);
  o.max_retries = static_cast<int>(core::json_int(j, "max_retries", o.max_retries));
  o.files_root = core::json_string(j, "files_root", o.files_root);
  return o;
}

std::vector<std::string> SandboxTools::tool_names() {
  return {"execute_python",      "execute_bash",
          "read_file",           "write_file",
          "list_files",          "list_state_variables",
          "read_state_variable", "install_additional_packages",
          "clear_python_state"};
}

std::string SandboxTools::execution_id(const RunContext& ctx) {
  return fmt::format("{}/{}/{}", ctx.run_id, ctx.run_step, ctx.tool_call_id);
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
  if (!files.empty()) out += "files written: " + join(files) + "\n";
  if (!figures.empty()) out += "figures saved: " + join(figures) + "\n";
  if (!r.not_persisted.empty()) {
    std::vector<std::string> names;
    for (const auto& np : r.not_persisted) {
      names.push_back(core::json_string(np, "name") + " (" + core::json_string(np, "reason") + ")");
    }
    out += "not persisted (lost if the sandbox restarts): " + join(names) + "\n";
  }
  if (r.kernel_restarted && !r.timed_out)
    out += "notice: the kernel was restarted from the last snapshot\n";
  if (!r.notice.empty()) out += "notice: " + r.notice + "\n";
  return out;
}

SandboxTools::SandboxTools(std::shared_ptr<sandbox::SandboxManager> manager,
                           SandboxToolsOptions options, std::shared_ptr<functions::SandboxFunctions> functions)
    : manager_(std::move(manager)), options_(std::move(options)), functions_(std::move(functions)) {
  auto* m = manager_.get();
  const SandboxToolsOptions o = options_;
  const std::string id = o.sandbox_id;
  auto timeout_of = [o](const std::optional<double>& asked) {
    double t = asked.value_or(o.default_timeout_seconds);
    return std::clamp(t, 1.0, o.max_timeout_seconds);
  };
  std::vector<Tool> tools;

  tools.push_back(
      Tool::typed<ExecutePythonArgs>(
          "execute_python",
          "Run Python code in the sandbox's persistent kernel and get its output: stdout, stderr, "
          "the value of "
          "the final expression, the error with traceback, and the files and figures it produced. "
          "Save files "
          "for the user under /output.",
          [m, o, id, timeout_of, fns = functions_](const ExecutePythonArgs& a,
                                                   const RunContext& ctx) -> ToolResult {
            sandbox::ExecuteRequest req;
            req.code = a.code;
            req.execution_id = execution_id(ctx);
            req.timeout_seconds = timeout_of(a.timeout);
            req.max_output_bytes = o.max_output_bytes;
            req.cancel = ctx.cancel;
            auto r = fns ? fns->execute(*m, id, req) : m->execute(id, req);
            if (!r.ok()) return from_error(r.error());
            Json content{{"ok", r->ok},
                         {"cell", r->cell},
                         {"execution_id", r->execution_id},
                         {"files", r->files},
                         {"timed_out", r->timed_out},
                         {"replayed", r->replayed},
                         {"error_type", r->error ? Json(r->error->type) : Json(nullptr)}};
            return ToolOutcome{ToolReturn{content, format_cell(*r, req.timeout_seconds)}};
          })
          .sequential()
          .max_retries(o.max_retries));

  tools.push_back(
      Tool::typed<ExecuteBashArgs>(
          "execute_bash",
          "Run a bash script in the sandbox (working directory /output) and get its exit code and "
          "output.",
          [m, o, id, timeout_of](const ExecuteBashArgs& a, const RunContext& ctx) -> ToolResult {
            double timeout = timeout_of(a.timeout);
            // Like cells, a script runs once per call: a retried call gets the recorded result.
            auto r = m->bash(id, a.script, timeout, execution_id(ctx));
            if (!r.ok()) return from_error(r.error());
            std::string text = r->timed_out
                                   ? fmt::format("timed out after {:g} s (killed)\n", timeout)
                                   : fmt::format("exit code {}\n", r->exit_code);
            if (r->replayed) text += "(this call already ran; its recorded result is shown)\n";
            append_block(text, "stdout", cut_middle(r->stdout_text, o.max_output_bytes));
            append_block(text, "stderr", cut_middle(r->stderr_text, o.max_output_bytes));
            return ToolOutcome{
                ToolReturn{Json{{"exit_code", r->exit_code}, {"timed_out", r->timed_out}}, text}};
          })
          .sequential()
          .max_retries(o.max_retries));

  tools.push_back(
      Tool::typed<PathArgs>(
          "read_file",
          "Read a text file from the sandbox (long files are shown cut in the middle).",
          [m, o, id](const PathArgs& a, const RunContext&) -> ToolResult {
            auto r = m->read_file(id, a.path);
            if (!r.ok()) return from_error(r.error());
            Json content{{"path", a.path}, {"size", r->size()}};
            if (!valid_utf8(*r)) {
              return ToolOutcome{ToolReturn{
                  content,
                  fmt::format(
                      "{} is a binary file of {} bytes; open it with execute_python to process it",
                      a.path, r->size())}};
            }
            return ToolOutcome{ToolReturn{content, cut_middle(*r, o.max_read_bytes)}};
          })
          .sequential()
          .max_retries(o.max_retries));

  tools.push_back(Tool::typed<WriteFileArgs>(
                      "write_file", "Write a text file in the sandbox, under /output.",
                      [m, id](const WriteFileArgs& a, const RunContext&) -> ToolResult {
                        auto s = m->write_file(id, a.path, a.content);
                        if (!s.ok()) return from_error(s.error());
                        return ToolOutcome{ToolReturn{
                            Json{{"path", a.path}, {"size", a.content.size()}},
                            fmt::format("wrote {} bytes to {}", a.content.size(), a.path)}};
                      })
                      .sequential()
                      .max_retries(o.max_retries));

  tools.push_back(
      Tool::typed<ListFilesArgs>(
          "list_files",
          "List the files in the sandbox under a directory (default /output), with their sizes.",
          [m, o, id](const ListFilesArgs& a, const RunContext&) -> ToolResult {
            std::string path = a.path.empty() ? o.files_root : a.path;
            auto r = m->list_files(id, path);
            if (!r.ok()) return from_error(r.error());
            Json files = Json::array();
            std::string text;
            for (const auto& f : *r) {
              files.push_back(f.path);
              text += fmt::format("{} ({} bytes)\n", f.path, f.size);
            }
            if (text.empty()) text = "no files under " + path;
            return ToolOutcome{ToolReturn{Json{{"files", files}}, text}};
          })
          .sequential()
          .max_retries(o.max_retries));

  tools.push_back(
      Tool::typed<NoArgs>("list_state_variables",
                          "List the variables alive in the sandbox's kernel with their types.",
                          [m, id](const NoArgs&, const RunContext&) -> ToolResult {
                            auto r = m->variables(id);
                            if (!r.ok()) return from_error(r.error());
                            Json vars = Json::object();
                            std::string text;
                            for (const auto& v : r->value("variables", Json::array())) {
                              std::string name = core::json_string(v, "name");
                              vars[name] = core::json_string(v, "type");
                              text += fmt::format("{}: {} = {}", name, core::json_string(v, "type"),
                                                  core::json_string(v, "preview"));
                              if (v.contains("persisted") && v["persisted"].is_boolean() &&
                                  !v["persisted"].get<bool>()) {
                                text += "  [not persisted: " + core::json_string(v, "reason") + "]";
                              }
                              text += "\n";
                            }
                            if (text.empty()) text = "no variables";
                            return ToolOutcome{ToolReturn{vars, text}};
                          })
          .sequential()
          .max_retries(o.max_retries));

  tools.push_back(
      Tool::typed<ReadVariableArgs>(
          "read_state_variable", "Show the value of one variable of the sandbox's kernel.",
          [m, o, id](const ReadVariableArgs& a, const RunContext&) -> ToolResult {
            auto r = m->variable(id, a.variable_name);
            if (!r.ok()) return from_error(r.error());
            std::string text =
                fmt::format("{}: {} = {}", a.variable_name, core::json_string(*r, "value_type"),
                            cut_middle(core::json_string(*r, "repr"), o.max_read_bytes));
            return ToolOutcome{ToolReturn{
                Json{{"name", a.variable_name}, {"type", core::json_string(*r, "value_type")}},
                text}};
          })
          .sequential()
          .max_retries(o.max_retries));

  tools.push_back(
      Tool::typed<InstallArgs>(
          "install_additional_packages",
          "Install Python packages (pip) and/or Debian system packages into the sandbox. Needs the "
          "sandbox "
          "to have network access.",
          [m, o, id](const InstallArgs& a, const RunContext&) -> ToolResult {
            if (a.python_packages.empty() && a.system_packages.empty()) {
              return ToolOutcome{ModelRetry{"give python_packages and/or system_packages"}};
            }
            std::string text;
            Json installed = Json::array();
            for (bool system : {false, true}) {
              const auto& pkgs = system ? a.system_packages : a.python_packages;
              if (pkgs.empty()) continue;
              auto r = m->install(id, pkgs, system);
              if (!r.ok()) return from_error(r.error());
              for (const auto& p : r->installed) installed.push_back(p);
              text += fmt::format("{} packages installed: {}\n", system ? "system" : "Python",
                                  join(r->installed));
              if (!r->ok)
                append_block(text, "installer output", cut_middle(r->output, o.max_output_bytes));
            }
            return ToolOutcome{ToolReturn{Json{{"installed", installed}}, text}};
          })
          .sequential()
          .max_retries(o.max_retries));

  tools.push_back(
      Tool::typed<NoArgs>(
          "clear_python_state",
          "Delete every variable, function and import from the sandbox's kernel and its saved "
          "state (files are kept).",
          [m, id](const NoArgs&, const RunContext&) -> ToolResult {
            auto r = m->clear(id);
            if (!r.ok()) return from_error(r.error());
            std::vector<std::string> names;
            for (const auto& n : r->value("cleared", Json::array())) {
              if (n.is_string()) names.push_back(n.get<std::string>());
            }
            return ToolOutcome{ToolReturn{
                *r, names.empty()
                        ? std::string("the state was already empty")
                        : fmt::format("cleared {} names: {}", names.size(), join(names))}};
          })
          .sequential()
          .max_retries(o.max_retries));

  tools_ = std::make_shared<agent::FunctionToolset>(std::move(tools), "sandbox");
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
