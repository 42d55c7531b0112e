#include "cli_context.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <iostream>

#include "codeact/core/config.hpp"
#include "codeact/core/strings.hpp"
#include "codeact/sandbox/docker_client.hpp"
#include "codeact/sandbox/host_id.hpp"

namespace codeact::cli {

int report(const core::Error& error) {
  std::cerr << "codeact: " << error.message() << "\n";
  return core::exit_code(error.code());
}

core::Result<std::shared_ptr<sandbox::SandboxManager>> make_manager(const std::string& config_path,
                                                                    const std::string& host_id) {
  CODEACT_TRY(auto docker, sandbox::DockerClient::create());
  CODEACT_TRY_STATUS(docker->ping());
  sandbox::SandboxManagerOptions options;
  options.host_id = host_id.empty() ? sandbox::default_host_id() : host_id;
  CODEACT_TRY_STATUS(sandbox::validate_host_id(options.host_id));
  options.progress = [](std::string_view line) { std::cerr << "  " << line << "\n"; };
  // `sandbox.disk` of app_conf.yml, when there is one.
  auto path = core::find_config_file("app_conf.yml", "APP_CONFIG_PATH", config_path);
  if (!path.ok() && !config_path.empty()) return path.error();
  if (path.ok()) {
    CODEACT_TRY(core::Json raw, core::load_yaml_file(*path));
    // Only this section is interpolated: a variable other sections need (an API key) may be unset.
    core::Json section = raw.is_object() ? raw.value("sandbox", core::Json()) : core::Json();
    CODEACT_TRY(core::Json sandbox_section, core::interpolate_env(section));
    auto applied =
        sandbox::manager_options_from_config(core::Json{{"sandbox", sandbox_section}}, options);
    if (!applied.ok()) return applied.error().with_context(*path);
    options = std::move(*applied);
  }
  return std::make_shared<sandbox::SandboxManager>(docker, options);
}

std::vector<std::string> split_csv(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    size_t start = 0;
    while (start <= v.size()) {
      size_t comma = v.find(',', start);
      std::string item = core::trim(std::string_view(v).substr(
          start, comma == std::string::npos ? std::string::npos : comma - start));
      if (!item.empty()) out.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

bool stdout_is_tty() { return ::isatty(STDOUT_FILENO) == 1; }

}  // namespace codeact::cli
