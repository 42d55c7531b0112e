// codeact: the command-line entry point (cli_app.hpp). The commands that need no Temporal run
// in this program; the others are handed to codeact-full, installed beside it, with the same
// arguments (execv: same process id, stdin, stdout, signals and exit status).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

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

// A command of codeact-full: listed in `codeact --help` with its own words; everything after its
// name, --help included, is codeact-full's to read.
void add_handed_off(CLI::App& app, const char* name, const char* summary, char** argv,
                    ExitCode& exit) {
  auto* cmd = app.add_subcommand(name, summary);
  cmd->prefix_command();
  cmd->set_help_flag();
  cmd->callback([argv, &exit] { exit.value = exec_full(argv); });
}

}  // namespace

int main(int argc, char** argv) {
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
