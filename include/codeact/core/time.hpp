// Time as text, written once: RFC 3339 timestamps in UTC with milliseconds
// ("2025-01-31T09:05:03.042Z"), the form of message timestamps, events and logs.
// Pure functions; thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace codeact::core {

// `t` as RFC 3339 in UTC, milliseconds truncated: "2025-01-31T09:05:03.042Z".
std::string format_rfc3339(std::chrono::system_clock::time_point t);
// format_rfc3339 of the current time.
std::string now_rfc3339();
// Reads "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)" (what format_rfc3339 and providers
// write); nullopt for anything else.
std::optional<std::chrono::system_clock::time_point> parse_rfc3339(const std::string& text);

}  // namespace codeact::core
