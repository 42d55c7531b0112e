// Fuzzes agent::validate_json_schema, which checks a model's tool arguments against a tool's JSON
// schema (both come from outside: the model and an MCP server). Input: the schema, a "%%" line,
// then the value; each part is JSON.
#include "codeact/agent/schema.hpp"
#include "codeact/core/json.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parts = codeact::fuzz::split_parts(codeact::fuzz::as_text(data, size));
  if (parts.size() < 2) return 0;
  auto schema = codeact::core::parse_json(parts[0], "schema");
  auto value = codeact::core::parse_json(parts[1], "value");
  if (!schema.ok() || !value.ok()) return 0;
  auto errors = codeact::agent::validate_json_schema(*value, *schema);
  if (!errors.empty()) (void)codeact::agent::format_arg_errors(errors);
  return 0;
}
