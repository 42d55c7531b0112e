#include "codeact/core/time.hpp"

#include <fmt/format.h>

#include <ctime>

namespace codeact::core {

std::string format_rfc3339(std::chrono::system_clock::time_point t) {
  // Floor to whole seconds so times before 1970 keep a non-negative millisecond part.
  auto secs = std::chrono::floor<std::chrono::seconds>(t);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - secs).count();
  std::time_t tt = std::chrono::system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     static_cast<int>(ms));
}

std::string now_rfc3339() { return format_rfc3339(std::chrono::system_clock::now()); }

}  // namespace codeact::core
