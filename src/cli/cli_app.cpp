#include "cli_app.hpp"

#include <cstdio>
#include <string>

#include "codeact/core/log.hpp"
#include "codeact/version.hpp"
#include "crash_report.hpp"

namespace codeact::cli {

int run_cli(int argc, char** argv,
            const std::function<void(CLI::App& app, ExitCode& exit)>& add_commands) {
  install_crash_report();
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

  ExitCode exit;
  add_commands(app, exit);

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
    return kExitUsage;
  }
  std::fflush(stdout);
  return exit.value;
}

}  // namespace codeact::cli
