// Time as text, written once: RFC 3339 timestamps in UTC with milliseconds
// ("2025-01-31T09:05:03.042Z"), the form of message timestamps, events and logs.
// Pure functions; thread-safe.
#pragma once

#include <chrono>
#include <string>

namespace codeact::core {

// `t` as RFC 3339 in UTC, milliseconds truncated: "2025-01-31T09:05:03.042Z".
std::string format_rfc3339(std::chrono::system_clock::time_point t);
// format_rfc3339 of the current time.
std::string now_rfc3339();

}  // namespace codeact::core
