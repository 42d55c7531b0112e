// JSON at the edges: codeact uses nlohmann::json as its one JSON value type, and these helpers
// turn parse errors and missing fields into Error values instead of exceptions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "codeact/core/result.hpp"

namespace codeact::core {

using Json = nlohmann::json;

// Parses text as JSON; a syntax error gives InvalidArgument naming `what` and the byte offset.
Result<Json> parse_json(std::string_view text, std::string_view what = "JSON");

// Returns j[key] if j is an object holding key with a value of the wanted type, else fallback.
std::string json_string(const Json& j, std::string_view key, std::string fallback = "");
int64_t json_int(const Json& j, std::string_view key, int64_t fallback = 0);
double json_number(const Json& j, std::string_view key, double fallback = 0);
bool json_bool(const Json& j, std::string_view key, bool fallback = false);

// Serializes without throwing on invalid UTF-8 (bad bytes are replaced with U+FFFD).
std::string dump_json(const Json& j, int indent = -1);

}  // namespace codeact::core
