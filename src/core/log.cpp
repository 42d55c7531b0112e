#include "codeact/core/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <mutex>
#include <string>

namespace codeact::core {

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("codeact");
    l->set_pattern("%^[%H:%M:%S.%e %l]%$ %v");
    const char* env = std::getenv("CODEACT_LOG");
    l->set_level(env ? spdlog::level::from_str(env) : spdlog::level::warn);
    return l;
  }();
  return *logger;
}

void set_log_level(std::string_view level) {
  log().set_level(spdlog::level::from_str(std::string(level)));
}

}  // namespace codeact::core
