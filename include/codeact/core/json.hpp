// JSON at the edges: codeact uses nlohmann::json as its one JSON value type, and these helpers
// turn parse errors and missing fields into Error values instead of exceptions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "codeact/core/result.hpp"

namespace codeact::core {

using Json = nlohmann::json;

// The deepest nesting of arrays and objects parse_json accepts. nlohmann::json copies, compares
// and dumps values recursively, so a value nested a million deep (a few MB of "[") crashes the
// process on its first copy; such input is refused before it is parsed. Real payloads (model
// replies, MCP results, kernel frames, API requests) stay far below it.
inline constexpr int kMaxJsonDepth = 256;

// Parses text as JSON; a syntax error gives InvalidArgument naming `what` and the byte offset,
// nesting deeper than kMaxJsonDepth InvalidArgument "<what> is nested more than 256 levels deep",
// a number beyond a double's range (1e400) InvalidArgument too. Never throws.
// Every JSON codeact reads from outside the process goes through here.
Result<Json> parse_json(std::string_view text, std::string_view what = "JSON");

// True when text nests arrays/objects deeper than `limit` (strings skipped); reads, never parses.
bool json_nests_deeper_than(std::string_view text, int limit = kMaxJsonDepth);

// Returns j[key] if j is an object holding key with a value of the wanted type, else fallback.
// json_int truncates a float (2.7 -> 2) and gives the fallback for one outside int64_t (1e300).
std::string json_string(const Json& j, std::string_view key, std::string fallback = "");
int64_t json_int(const Json& j, std::string_view key, int64_t fallback = 0);
double json_number(const Json& j, std::string_view key, double fallback = 0);
bool json_bool(const Json& j, std::string_view key, bool fallback = false);
// j[key] when j is an object holding an object there, else an empty object: reading what a
// server sent, where a member that should be an object may be anything (Json::value would throw).
const Json& json_object(const Json& j, std::string_view key);

// `v` as compact JSON cut to `max` bytes (core::abbreviate): what an error message shows of a
// wrong value.
std::string json_preview(const Json& v, size_t max = 60);

// Serializes without throwing on invalid UTF-8 (bad bytes are replaced with U+FFFD).
std::string dump_json(const Json& j, int indent = -1);

}  // namespace codeact::core
