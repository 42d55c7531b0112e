// `codeact sandbox ...` and `codeact volume ...`: the sandbox manager from the command line.
#include <fmt/format.h>
#include <unistd.h>

#include <ctime>
#include <iostream>
#include <iterator>
#include <sstream>

#include "cli_context.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/strings.hpp"

namespace codeact::cli {
namespace {

using core::Json;
using sandbox::SandboxManager;

std::string read_stdin() {
  std::ostringstream ss;
  ss << std::cin.rdbuf();
  return ss.str();
}

void print_json(const Json& j) { std::cout << core::dump_json(j, 2) << "\n"; }

// Runs `body` with a manager, turning errors into exit codes.
void with_manager(ExitCode& exit, const std::function<int(SandboxManager&)>& body) {
  auto m = make_manager();
  if (!m.ok()) {
    exit.value = report(m.error());
    return;
  }
  exit.value = body(**m);
}

void print_cell(const sandbox::ExecuteResult& r, bool streamed) {
  if (!r.notice.empty()) std::cerr << "[codeact] " << r.notice << "\n";
  if (r.replayed)
    std::cerr << "[codeact] execution id " << r.execution_id
              << " already ran; showing its recorded result\n";
  if (!streamed || r.replayed) {
    std::cout << r.stdout_text;
    if (!r.stdout_text.empty() && r.stdout_text.back() != '\n') std::cout << "\n";
    std::cerr << r.stderr_text;
    if (!r.stderr_text.empty() && r.stderr_text.back() != '\n') std::cerr << "\n";
  }
  if (r.result) std::cout << fmt::format("Out[{}]: {}\n", r.cell, *r.result);
  for (const auto& o : r.outputs) {
    std::cout << fmt::format("[{}] {}\n", core::json_string(o, "type", "output"),
                             core::json_string(o, "path"));
  }
  if (r.error) {
    if (!r.error->traceback.empty()) {
      std::cerr << r.error->traceback;
      if (r.error->traceback.back() != '\n') std::cerr << "\n";
    } else {
      std::cerr << r.error->type << ": " << r.error->message << "\n";
    }
  }
  for (const auto& np : r.not_persisted) {
    std::cerr << fmt::format("[codeact] not persisted: {} ({})\n", core::json_string(np, "name"),
                             core::json_string(np, "reason"));
  }
  if (r.truncated.is_object()) {
    for (auto it = r.truncated.begin(); it != r.truncated.end(); ++it) {
      std::cerr << fmt::format("[codeact] {} was cut: {} bytes omitted from the middle\n", it.key(),
                               it.value().dump());
    }
  }
}

// What a checkpoint changed, in a line: "a, b; /output/x.csv".
std::string changes_text(const sandbox::Checkpoint& c) {
  std::string text = core::join(c.changed, ", ");
  if (!c.files_changed.empty()) {
    text += (text.empty() ? "" : "; ") + core::join(c.files_changed, ", ");
  }
  if (!c.forked_from.empty()) text += (text.empty() ? "" : "; ") + ("forked from " + c.forked_from);
  return text.empty() ? "-" : text;
}

// What a rewind or a fork could not bring back: values ({name, reason}) and /output files that
// no checkpoint keeps (`what_became` of them: "left as it is", "not carried over").
void print_not_restored(const std::vector<Json>& errors, const std::vector<std::string>& files,
                        std::string_view what_became) {
  for (const auto& e : errors) {
    std::cerr << fmt::format("[codeact] not restored: {} ({})\n", core::json_string(e, "name"),
                             core::json_string(e, "reason"));
  }
  for (const auto& f : files) {
    std::cerr << fmt::format("[codeact] {} (not kept by checkpoints): {}\n", what_became, f);
  }
}

std::string local_time_text(double seconds) {
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// `sandbox history`, `sandbox rewind`, `sandbox fork` (docs/time-travel.md).
void add_time_travel_commands(CLI::App* sb, ExitCode& exit) {
  {
    auto* cmd = sb->add_subcommand(
        "history", "List a sandbox's checkpoints: one per committed cell, numbered from 1");
    auto id = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    cmd->add_option("ID", *id, "Sandbox id")->required();
    cmd->add_flag("--json", *json, "Print JSON");
    cmd->footer(
        "The current checkpoint is marked *. `codeact sandbox rewind ID --to N` makes the "
        "sandbox's\nvariables and /output files those of checkpoint N; `codeact sandbox fork ID "
        "--at N --id NEW`\nstarts a new sandbox from it.");
    cmd->callback([=, &exit] {
      with_manager(exit, [&](SandboxManager& m) {
        auto r = m.history(*id);
        if (!r.ok()) return report(r.error());
        if (*json) {
          print_json(r->to_json());
          return kExitOk;
        }
        if (r->checkpoints.empty()) {
          std::cerr << fmt::format("[codeact] sandbox \"{}\" has no checkpoints yet\n", *id);
          return kExitOk;
        }
        std::cout << fmt::format("  {:>4} {:>5}  {:<19}  {:<24} {:>10}  {}\n", "N", "CELL", "TIME",
                                 "EXECUTION ID", "SIZE", "CHANGED");
        for (const auto& c : r->checkpoints) {
          std::cout << fmt::format(
              "{} {:>4} {:>5}  {:<19}  {:<24} {:>10}  {}\n", c.current ? "*" : " ", c.n, c.cell,
              local_time_text(c.time),
              c.execution_id.empty() ? "-" : core::abbreviate(c.execution_id, 24),
              core::byte_size_text(c.added_bytes), changes_text(c));
          if (!c.not_persisted.empty()) {
            std::cout << fmt::format("{:>38}cannot restore: {}\n", "",
                                     core::join(c.not_persisted, ", "));
          }
        }
        std::cout << fmt::format(
            "kept: {}{}\n",
            r->keep_last ? fmt::format("the last {}", *r->keep_last) : std::string("all"),
            fmt::format(" within {}", core::byte_size_text(r->budget)));
        return kExitOk;
      });
    });
  }
  {
    auto* cmd = sb->add_subcommand(
        "rewind", "Make a sandbox's variables and /output files those of an earlier checkpoint");
    auto id = std::make_shared<std::string>();
    auto to = std::make_shared<int64_t>(0);
    auto execution_id = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    cmd->add_option("ID", *id, "Sandbox id")->required();
    cmd->add_option("--to", *to, "Checkpoint number (see `codeact sandbox history ID`)")
        ->required()
        ->check(CLI::PositiveNumber);
    cmd->add_option("--execution-id", *execution_id,
                    "Rewind once: the same id again prints the recorded answer");
    cmd->add_flag("--json", *json, "Print JSON");
    cmd->footer(
        "Later checkpoints are kept: the line printed at the end says how to undo the rewind.");
    cmd->callback([=, &exit] {
      with_manager(exit, [&](SandboxManager& m) {
        auto r = m.rewind(*id, *to, *execution_id);
        if (!r.ok()) return report(r.error());
        if (*json) {
          print_json(r->to_json());
          return kExitOk;
        }
        if (r->replayed) {
          std::cerr << fmt::format(
              "[codeact] execution id {} already rewound; showing its recorded answer\n",
              *execution_id);
        }
        std::cout << fmt::format(
            "sandbox {} is at checkpoint {}: {} variables restored, {} files written, {} "
            "removed\n",
            *id, r->checkpoint, r->restored.size(), r->files_restored, r->files_removed);
        print_not_restored(r->restore_errors, r->files_left, "left as it is");
        std::cout << fmt::format("undo: codeact sandbox rewind {} --to {}\n", *id, r->previous);
        return kExitOk;
      });
    });
  }
  {
    auto* cmd = sb->add_subcommand(
        "fork", "Start a new sandbox from a checkpoint of another (which stays as it is)");
    auto id = std::make_shared<std::string>();
    auto at = std::make_shared<int64_t>(0);
    auto new_id = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    cmd->add_option("ID", *id, "Sandbox to fork")->required();
    cmd->add_option("--at", *at, "Its checkpoint to start from (default: the current one)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--id", *new_id, "Id of the new sandbox (default: ID-fork-N)");
    cmd->add_flag("--json", *json, "Print JSON");
    cmd->callback([=, &exit] {
      with_manager(exit, [&](SandboxManager& m) {
        int64_t checkpoint = *at;
        if (checkpoint == 0) {
          auto h = m.history(*id);
          if (!h.ok()) return report(h.error());
          if (h->current == 0) {
            return report(core::failed_precondition(
                fmt::format("sandbox \"{}\" has no checkpoint yet: run a cell in it first", *id)));
          }
          checkpoint = h->current;
        }
        std::string target = new_id->empty() ? fmt::format("{}-fork-{}", *id, checkpoint) : *new_id;
        std::cerr << fmt::format("[codeact] forking {} at checkpoint {} into {} ...\n", *id,
                                 checkpoint, target);
        auto r = m.fork(*id, checkpoint, target);
        if (!r.ok()) return report(r.error());
        if (*json) {
          print_json(r->to_json());
          return kExitOk;
        }
        std::cout << fmt::format("{}\n", r->sandbox.id);
        std::cerr << fmt::format(
            "[codeact] sandbox {} starts from checkpoint {} of {}: {} variables{}\n", r->sandbox.id,
            r->source_checkpoint, r->source, r->restored.size(),
            r->restored.empty() ? "" : " (" + core::join(r->restored, ", ") + ")");
        print_not_restored(r->restore_errors, r->files_left, "not carried over");
        return kExitOk;
      });
    });
  }
}

}  // namespace

void add_sandbox_commands(CLI::App& app, ExitCode& exit) {
  auto* sb = app.add_subcommand(
      "sandbox",
      "Start, use and remove sandboxes (isolated Python kernels whose state survives crashes)");
  sb->require_subcommand(1);

  // start
  {
    auto* cmd = sb->add_subcommand(
        "start", "Start a sandbox, or resume an existing one with its state; prints its id");
    auto opts = std::make_shared<sandbox::SandboxOptions>();
    auto pkgs = std::make_shared<std::vector<std::string>>();
    auto sys = std::make_shared<std::vector<std::string>>();
    auto json = std::make_shared<bool>(false);
    cmd->add_option("--id", opts->id, "Sandbox id (default: a new random id)");
    cmd->add_option("--packages", *pkgs,
                    "Python packages to install (comma-separated; needs --network)")
        ->delimiter(',');
    cmd->add_option("--system-packages", *sys,
                    "Debian packages to add to the sandbox image (comma-separated)")
        ->delimiter(',');
    cmd->add_flag("--network", opts->network, "Give the sandbox network access (off by default)");
    cmd->add_option("--memory", opts->memory, "Memory limit, e.g. 512m, 2g")->capture_default_str();
    cmd->add_option("--cpus", opts->cpus, "CPU limit (number of CPUs)")->capture_default_str();
    cmd->add_option(
        "--disk", opts->disk,
        "Disk limit of the sandbox's state and files, e.g. 10g, or none (default: sandbox.disk in "
        "app_conf.yml, else 10g; fixed when the sandbox is created)");
    cmd->add_flag("--json", *json, "Print the sandbox as JSON");
    cmd->callback([opts, pkgs, sys, json, &exit] {
      opts->python_packages = split_csv(*pkgs);
      opts->system_packages = split_csv(*sys);
      with_manager(exit, [&](SandboxManager& m) {
        auto info = m.start(*opts);
        if (!info.ok()) return report(info.error());
        if (*json) {
          print_json(info->to_json());
        } else {
          if (info->resumed)
            std::cerr << fmt::format("[codeact] resumed sandbox {} at cell {}\n", info->id,
                                     info->cell);
          const auto& lost = info->lost.empty() ? info->restore_errors : info->lost;
          for (const auto& e : lost) {
            std::cerr << fmt::format("[codeact] could not restore {}: {}\n",
                                     core::json_string(e, "name"), core::json_string(e, "reason"));
          }
          if (!info->notice.empty()) std::cerr << "[codeact] " << info->notice << "\n";
          std::cout << info->id << "\n";
        }
        return kExitOk;
      });
    });
  }

  // exec
  {
    auto* cmd = sb->add_subcommand(
        "exec", "Run Python in a sandbox like a notebook cell (code as argument, '-' or stdin)");
    auto id = std::make_shared<std::string>();
    auto code = std::make_shared<std::string>();
    auto timeout = std::make_shared<double>(300);
    auto eid = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    cmd->add_option("ID", *id, "Sandbox id")->required();
    cmd->add_option("CODE", *code, "Python code; '-' or omitted reads it from stdin");
    cmd->add_option("--timeout", *timeout, "Seconds before the cell is interrupted (0 = none)")
        ->capture_default_str();
    cmd->add_option("--exec-id", *eid,
                    "Execution id: running the same id again returns the recorded result");
    cmd->add_flag("--json", *json, "Print one JSON object with the result");
    auto mcp = std::make_shared<std::vector<std::string>>();
    auto functions = std::make_shared<std::vector<std::string>>();
    auto config = std::make_shared<std::string>();
    cmd->add_option("--mcp", *mcp,
                    "MCP server (a key of mcp_servers in app_conf.yml) whose tools the cell can "
                    "call; repeatable")
        ->allow_extra_args(false);
    cmd->add_option("--functions", *functions,
                    "Python file whose functions the cell can call; repeatable")
        ->allow_extra_args(false);
    cmd->add_option("--config", *config, "app_conf.yml for --mcp (default: the usual search)");
    cmd->callback([=, &exit] {
      std::string source = *code;
      if (source.empty() || source == "-") {
        if (source.empty() && ::isatty(STDIN_FILENO)) {
          exit.value = report(core::invalid_argument(
              "no code given: pass it as an argument, or '-' to read stdin"));
          return;
        }
        source = read_stdin();
      }
      with_manager(exit, [&](SandboxManager& m) {
        sandbox::ExecuteRequest req;
        req.code = source;
        req.execution_id = *eid;
        req.timeout_seconds = *timeout;
        bool stream = !*json;
        if (stream) {
          req.on_output = [](const std::string& name, const std::string& text) {
            (name == "stderr" ? std::cerr : std::cout) << text << std::flush;
          };
        }
        auto r = mcp->empty() && functions->empty()
                     ? m.execute(*id, req)
                     : execute_with_tools(m, *id, req, split_csv(*mcp), *functions, *config);
        if (!r.ok()) return report(r.error());
        if (*json) {
          print_json(r->to_json());
        } else {
          print_cell(*r, stream);
        }
        return r->ok ? kExitOk : kExitCellRaised;
      });
    });
  }

  // bash
  {
    auto* cmd = sb->add_subcommand("bash", "Run a bash script in a sandbox");
    auto id = std::make_shared<std::string>();
    auto script = std::make_shared<std::string>();
    auto timeout = std::make_shared<double>(300);
    auto json = std::make_shared<bool>(false);
    cmd->add_option("ID", *id, "Sandbox id")->required();
    cmd->add_option("SCRIPT", *script, "Script ('-' reads stdin)")->required();
    cmd->add_option("--timeout", *timeout, "Seconds before the script is killed")
        ->capture_default_str();
    cmd->add_flag("--json", *json, "Print one JSON object with the result");
    cmd->callback([=, &exit] {
      std::string text = *script == "-" ? read_stdin() : *script;
      with_manager(exit, [&](SandboxManager& m) {
        auto r = m.bash(*id, text, *timeout);
        if (!r.ok()) return report(r.error());
        if (*json) {
          print_json(r->to_json());
        } else {
          std::cout << r->stdout_text;
          std::cerr << r->stderr_text;
          if (r->timed_out)
            std::cerr << fmt::format("[codeact] killed after {}s timeout\n", *timeout);
          if (!r->notice.empty()) std::cerr << "[codeact] " << r->notice << "\n";
        }
        return r->exit_code == 0 ? kExitOk : kExitCellRaised;
      });
    });
  }

  // vars / get / clear
  {
    auto* cmd =
        sb->add_subcommand("vars", "List the variables of a sandbox (and which did not persist)");
    auto id = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    cmd->add_option("ID", *id, "Sandbox id")->required();
    cmd->add_flag("--json", *json, "Print JSON");
    cmd->callback([=, &exit] {
      with_manager(exit, [&](SandboxManager& m) {
        auto r = m.variables(*id);
        if (!r.ok()) return report(r.error());
        if (*json) {
          print_json(*r);
          return kExitOk;
        }
        for (const auto& v : r->value("variables", Json::array())) {
          std::string line = fmt::format("{:<20} {:<10} {:<24} {}", core::json_string(v, "name"),
                                         core::json_string(v, "kind"), core::json_string(v, "type"),
                                         core::json_string(v, "preview"));
          if (!core::json_bool(v, "persisted", true))
            line += fmt::format("   [not persisted: {}]", core::json_string(v, "reason"));
          std::cout << line << "\n";
        }
        return kExitOk;
      });
    });
  }
  {
    auto* cmd = sb->add_subcommand("get", "Show the value of one variable");
    auto id = std::make_shared<std::string>();
    auto name = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    cmd->add_option("ID", *id, "Sandbox id")->required();
    cmd->add_option("NAME", *name, "Variable name")->required();
    cmd->add_flag("--json", *json, "Print JSON");
    cmd->callback([=, &exit] {
      with_manager(exit, [&](SandboxManager& m) {
        auto r = m.variable(*id, *name);
        if (!r.ok()) return report(r.error());
        if (*json) {
          print_json(*r);
        } else {
          std::cout << core::json_string(*r, "repr") << "\n";
        }
        return kExitOk;
      });
    });
  }
  {
    auto* cmd = sb->add_subcommand("clear", "Forget every variable of a sandbox (files are kept)");
    auto id = std::make_shared<std::string>();
    cmd->add_option("ID", *id, "Sandbox id")->required();
    cmd->callback([=, &exit] {
      with_manager(exit, [&](SandboxManager& m) {
        auto r = m.clear(*id);
        if (!r.ok()) return report(r.error());
        std::cerr << fmt::format("[codeact] cleared {} variables\n",
                                 r->value("cleared", Json::array()).size());
        return kExitOk;
      });
    });
  }

  // files / read / write
  {
    auto* cmd =
        sb->add_subcommand("files", "List files in the sandbox's workspace (default: /output)");
    auto id = std::make_shared<std::string>();
    auto path = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    cmd->add_option("ID", *id, "Sandbox id")->required();
    cmd->add_option("PATH", *path, "Directory inside the workspace");
    cmd->add_flag("--json", *json, "Print JSON");
    cmd->callback([=, &exit] {
      with_manager(exit, [&](SandboxManager& m) {
        auto r = m.list_files(*id, *path);
        if (!r.ok()) return report(r.error());
        if (*json) {
          Json arr = Json::array();
          for (const auto& f : *r)
            arr.push_back({{"path", f.path}, {"size", f.size}, {"mtime", f.mtime}});
          print_json(Json{{"files", arr}});
        } else {
          for (const auto& f : *r) std::cout << fmt::format("{:>10}  {}\n", f.size, f.path);
        }
        return kExitOk;
      });
    });
  }
  {
    auto* cmd = sb->add_subcommand("read", "Write a file of the sandbox to stdout (binary-safe)");
    auto id = std::make_shared<std::string>();
    auto path = std::make_shared<std::string>();
    cmd->add_option("ID", *id, "Sandbox id")->required();
    cmd->add_option("PATH", *path, "File path (relative paths are under /output)")->required();
    cmd->callback([=, &exit] {
      with_manager(exit, [&](SandboxManager& m) {
        auto r = m.read_file(*id, *path);
        if (!r.ok()) return report(r.error());
        std::cout.write(r->data(), static_cast<std::streamsize>(r->size()));
        return kExitOk;
      });
    });
  }
  {
    auto* cmd = sb->add_subcommand("write", "Write stdin to a file in the sandbox (binary-safe)");
    auto id = std::make_shared<std::string>();
    auto path = std::make_shared<std::string>();
    cmd->add_option("ID", *id, "Sandbox id")->required();
    cmd->add_option("PATH", *path, "File path (relative paths are under /output)")->required();
    cmd->callback([=, &exit] {
      std::string data = read_stdin();
      with_manager(exit, [&](SandboxManager& m) {
        auto s = m.write_file(*id, *path, data);
        if (!s.ok()) return report(s.error());
        std::cerr << fmt::format("[codeact] wrote {} bytes to {}\n", data.size(), *path);
        return kExitOk;
      });
    });
  }

  // install
  {
    auto* cmd =
        sb->add_subcommand("install", "Install Python packages (or Debian packages with --system)");
    auto id = std::make_shared<std::string>();
    auto pkgs = std::make_shared<std::vector<std::string>>();
    auto system = std::make_shared<bool>(false);
    cmd->add_option("ID", *id, "Sandbox id")->required();
    cmd->add_option("PKG", *pkgs, "Packages")->required();
    cmd->add_flag("--system", *system,
                  "Debian packages: rebuilds the sandbox's image and recreates it, state kept");
    cmd->callback([=, &exit] {
      with_manager(exit, [&](SandboxManager& m) {
        auto r = m.install(*id, *pkgs, *system);
        if (!r.ok()) return report(r.error());
        if (!r->ok) {
          std::cerr << r->output << "\n";
          return report(core::failed_precondition(
              fmt::format("installing {} failed", fmt::join(*pkgs, " "))));
        }
        std::cerr << fmt::format("[codeact] installed {}{}\n", fmt::join(r->installed, " "),
                                 r->image.empty() ? "" : " (sandbox now runs " + r->image + ")");
        return kExitOk;
      });
    });
  }

  // stop / restart / rm / ls
  {
    auto* cmd = sb->add_subcommand("stop", "Stop a sandbox; its state stays on its volume");
    auto id = std::make_shared<std::string>();
    cmd->add_option("ID", *id, "Sandbox id")->required();
    cmd->callback([=, &exit] {
      with_manager(exit, [&](SandboxManager& m) {
        auto s = m.stop(*id);
        return s.ok() ? kExitOk : report(s.error());
      });
    });
  }
  {
    auto* cmd = sb->add_subcommand("restart",
                                   "Restart a sandbox's container; the kernel restores its state");
    auto id = std::make_shared<std::string>();
    cmd->add_option("ID", *id, "Sandbox id")->required();
    cmd->callback([=, &exit] {
      with_manager(exit, [&](SandboxManager& m) {
        auto r = m.restart(*id);
        if (!r.ok()) return report(r.error());
        std::cerr << fmt::format("[codeact] restarted {} at cell {}\n", r->id, r->cell);
        return kExitOk;
      });
    });
  }
  {
    auto* cmd = sb->add_subcommand(
        "rm", "Remove a sandbox's container (and its volume, with all state, with --volume)");
    auto id = std::make_shared<std::string>();
    auto volume = std::make_shared<bool>(false);
    cmd->add_option("ID", *id, "Sandbox id")->required();
    cmd->add_flag("--volume", *volume, "Also delete its volume: variables and files are lost");
    cmd->callback([=, &exit] {
      with_manager(exit, [&](SandboxManager& m) {
        auto s = m.remove(*id, *volume);
        return s.ok() ? kExitOk : report(s.error());
      });
    });
  }
  {
    auto* cmd = sb->add_subcommand("ls", "List the sandboxes codeact created");
    auto json = std::make_shared<bool>(false);
    cmd->add_flag("--json", *json, "Print JSON");
    cmd->callback([=, &exit] {
      with_manager(exit, [&](SandboxManager& m) {
        auto r = m.list();
        if (!r.ok()) return report(r.error());
        if (*json) {
          Json arr = Json::array();
          for (const auto& s : *r) arr.push_back(s.to_json());
          print_json(arr);
          return kExitOk;
        }
        std::cout << fmt::format("{:<24} {:<10} {:<16} {:<8} {:<6} {}\n", "ID", "STATUS", "HOST",
                                 "NETWORK", "DISK", "IMAGE");
        for (const auto& s : *r) {
          std::cout << fmt::format("{:<24} {:<10} {:<16} {:<8} {:<6} {}\n", s.id, s.status,
                                   s.host.empty() ? "-" : s.host, s.network ? "yes" : "no",
                                   s.disk.empty() ? "-" : s.disk, s.image);
        }
        return kExitOk;
      });
    });
  }

  add_time_travel_commands(sb, exit);
}

void add_volume_commands(CLI::App& app, ExitCode& exit) {
  auto* vol =
      app.add_subcommand("volume", "List and remove sandbox volumes (where state and files live)");
  vol->require_subcommand(1);
  {
    auto* cmd = vol->add_subcommand("ls", "List volumes codeact created");
    auto json = std::make_shared<bool>(false);
    cmd->add_flag("--json", *json, "Print JSON");
    cmd->callback([=, &exit] {
      with_manager(exit, [&](SandboxManager& m) {
        auto r = m.list_volumes();
        if (!r.ok()) return report(r.error());
        if (*json) {
          Json arr = Json::array();
          for (const auto& v : *r) {
            auto it = v.labels.find(std::string(sandbox::kSandboxIdLabel));
            arr.push_back({{"name", v.name},
                           {"sandbox_id", it == v.labels.end() ? "" : it->second},
                           {"driver", v.driver},
                           {"created_at", v.created_at},
                           {"mountpoint", v.mountpoint}});
          }
          print_json(arr);
          return kExitOk;
        }
        std::cout << fmt::format("{:<32} {:<24} {}\n", "VOLUME", "SANDBOX", "DRIVER");
        for (const auto& v : *r) {
          auto it = v.labels.find(std::string(sandbox::kSandboxIdLabel));
          std::cout << fmt::format("{:<32} {:<24} {}\n", v.name,
                                   it == v.labels.end() ? "" : it->second, v.driver);
        }
        return kExitOk;
      });
    });
  }
  {
    auto* cmd = vol->add_subcommand(
        "rm", "Delete a sandbox's volume (its container must be removed first)");
    auto id = std::make_shared<std::string>();
    cmd->add_option("ID", *id, "Sandbox id")->required();
    cmd->callback([=, &exit] {
      with_manager(exit, [&](SandboxManager& m) {
        auto s = m.remove_volume(*id);
        return s.ok() ? kExitOk : report(s.error());
      });
    });
  }
}

}  // namespace codeact::cli
