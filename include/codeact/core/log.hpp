// Logging: one spdlog logger named "codeact", writing to stderr. Level from CODEACT_LOG
// (trace, debug, info, warn, error, off; default warn) or set_log_level().
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

namespace codeact::core {

spdlog::logger& log();
void set_log_level(std::string_view level);

}  // namespace codeact::core
