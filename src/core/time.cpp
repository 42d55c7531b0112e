#include "codeact/core/time.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cstdio>
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

std::optional<std::chrono::system_clock::time_point> parse_rfc3339(const std::string& text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, used = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &used) !=
          6 ||
      used != 19)
    return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return std::nullopt;
  size_t i = 19;
  std::chrono::nanoseconds frac{0};
  if (i < text.size() && text[i] == '.') {
    int64_t scale = 100000000;
    ++i;
    const size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      frac += std::chrono::nanoseconds((text[i] - '0') * scale);
      scale /= 10;
      ++i;
    }
    if (i == start) return std::nullopt;
  }
  std::chrono::minutes offset{0};
  if (i < text.size() && (text[i] == 'Z' || text[i] == 'z')) {
    ++i;
  } else if (i + 6 == text.size() && (text[i] == '+' || text[i] == '-') && text[i + 3] == ':') {
    int oh = 0, om = 0;
    if (std::sscanf(text.c_str() + i + 1, "%2d:%2d", &oh, &om) != 2) return std::nullopt;
    offset = std::chrono::minutes(oh * 60 + om) * (text[i] == '-' ? -1 : 1);
    i += 6;
  } else {
    return std::nullopt;
  }
  if (i != text.size()) return std::nullopt;
  using namespace std::chrono;
  const sys_days day = year(y) / month(static_cast<unsigned>(mo)) / static_cast<unsigned>(d);
  auto t = system_clock::time_point(day) + hours(h) + minutes(mi) + seconds(s) - offset;
  return time_point_cast<system_clock::duration>(t + frac);
}

}  // namespace codeact::core
