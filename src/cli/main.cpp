// codeact: the command-line entry point (cli_app.hpp). The commands that need no Temporal run
// in this program; the others are handed to codeact-full, installed beside it, with the same
// arguments (execv: same process id, stdin, stdout, signals and exit status).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>

#include "cli_app.hpp"

namespace {

using namespace codeact::cli;

// Replaces this process with codeact-full and the same arguments; returns only when that fails,
// with the exit status to end with.
int exec_full(char** argv) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) self = fs::absolute(argv[0], ec);
  const std::string full = (self.parent_path() / "codeact-full").string();
  std::cout.flush();
  std::string arg0 = full;
  argv[0] = arg0.data();
  ::execv(full.c_str(), argv);
  std::cerr << "codeact: cannot run " << full << ": " << std::strerror(errno)
            << " (this command is in codeact-full, installed beside codeact: reinstall codeact, "
               "or build the codeact-full target)\n";
  return codeact::core::kExitUnavailable;
}

constexpr std::string_view kHandedOff[] = {"doctor", "run", "worker", "chat", "server"};

// The command word of argv, past the options of codeact itself (--log-level X, --log-level=X,
// -h, --help); "" when there is none.
std::string_view command_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--log-level") {
      ++i;
    } else if (!arg.starts_with("--log-level=") && arg != "-h" && arg != "--help") {
      return arg;
    }
  }
  return "";
}

// A command of codeact-full as `codeact --help` lists it, with its own words. main() hands such a
// command over before parsing; this callback is a fallback for argv main() did not read that way.
void add_handed_off(CLI::App& app, const char* name, const char* summary, char** argv,
                    ExitCode& exit) {
  auto* cmd = app.add_subcommand(name, summary);
  cmd->prefix_command();
  cmd->set_help_flag();
  cmd->callback([argv, &exit] { exit.value = exec_full(argv); });
}

}  // namespace

int main(int argc, char** argv) {
  // Handed over before CLI11 reads anything, so that codeact-full reads every argument as it
  // would have (`codeact run -- "-v means verbose"`, `codeact --help run`).
  std::string_view word = command_word(argc, argv);
  if (std::find(std::begin(kHandedOff), std::end(kHandedOff), word) != std::end(kHandedOff)) {
    return exec_full(argv);
  }
  return run_cli(argc, argv, [argv](CLI::App& app, ExitCode& exit) {
    add_image_commands(app, exit);
    add_sandbox_commands(app, exit);
    add_volume_commands(app, exit);
    add_handed_off(app, "doctor", kDoctorSummary, argv, exit);
    add_handed_off(app, "run", kRunSummary, argv, exit);
    add_mcp_commands(app, exit);
    add_handed_off(app, "worker", kWorkerSummary, argv, exit);
    add_handed_off(app, "chat", kChatSummary, argv, exit);
    add_handed_off(app, "server", kServerSummary, argv, exit);
    add_model_commands(app, exit);
  });
}
