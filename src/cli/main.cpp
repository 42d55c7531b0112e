// codeact: the command-line entry point. Each group of subcommands lives in its own file.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "cli_context.hpp"
#include "codeact/core/log.hpp"
#include "codeact/version.hpp"
#include "crash_report.hpp"

int main(int argc, char** argv) {
  using namespace codeact;
  cli::install_crash_report();
  CLI::App app{
      "codeact: durable CodeAct agents — Python sandboxes that survive crashes, agent runs as "
      "Temporal workflows"};
  app.name("codeact");
  app.require_subcommand(1);
  app.set_version_flag("--version",
                       std::string("codeact ") + version() + " (" + build_revision() + ")");
  std::string log_level;
  app.add_option("--log-level", log_level,
                 "trace, debug, info, warn, error (default: $CODEACT_LOG or warn)");
  app.parse_complete_callback([&] {
    if (!log_level.empty()) core::set_log_level(log_level);
  });

  cli::ExitCode exit;
  cli::add_image_commands(app, exit);
  cli::add_sandbox_commands(app, exit);
  cli::add_volume_commands(app, exit);
  cli::add_doctor_command(app, exit);
  cli::add_run_command(app, exit);
  cli::add_mcp_commands(app, exit);
  cli::add_worker_commands(app, exit);
  cli::add_server_command(app, exit);
  cli::add_model_commands(app, exit);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return cli::kExitUsage;
  }
  std::fflush(stdout);
  return exit.value;
}
