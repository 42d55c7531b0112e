#include "cli_context.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <iostream>

#include "codeact/core/strings.hpp"
#include "codeact/sandbox/docker_client.hpp"

namespace codeact::cli {

int report(const core::Error& error) {
  std::cerr << "codeact: " << error.message() << "\n";
  return core::exit_code(error.code());
}

core::Result<std::shared_ptr<sandbox::SandboxManager>> make_manager() {
  CODEACT_TRY(auto docker, sandbox::DockerClient::create());
  CODEACT_TRY_STATUS(docker->ping());
  sandbox::SandboxManagerOptions options;
  options.progress = [](std::string_view line) { std::cerr << "  " << line << "\n"; };
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
