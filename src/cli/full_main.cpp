// codeact-full: every codeact command, in `codeact --help` order (cli_app.hpp). `codeact` hands
// it the ones that need Temporal; it works as `codeact` on its own too.
#include "cli_app.hpp"

int main(int argc, char** argv) {
  using namespace codeact::cli;
  return run_cli(argc, argv, [](CLI::App& app, ExitCode& exit) {
    add_image_commands(app, exit);
    add_sandbox_commands(app, exit);
    add_volume_commands(app, exit);
    add_doctor_command(app, exit);
    add_run_command(app, exit);
    add_mcp_commands(app, exit);
    add_worker_commands(app, exit);
    add_server_command(app, exit);
    add_model_commands(app, exit);
  });
}
