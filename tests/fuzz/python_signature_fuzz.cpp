// Fuzzes the JSON Schema -> Python signature generator (mcp::python_signature and its parts),
// which turns an MCP server's tool schemas into the stubs and tools_as_func text. Input: the
// input schema, and optionally a "%%" line and the output schema; each part is JSON.
#include "codeact/core/json.hpp"
#include "codeact/mcp/python_signature.hpp"
#include "fuzz_input.hpp"

using codeact::core::Json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parts = codeact::fuzz::split_parts(codeact::fuzz::as_text(data, size));
  auto input = codeact::core::parse_json(parts[0], "inputSchema");
  if (!input.ok()) return 0;
  Json output;
  if (parts.size() > 1) {
    auto parsed = codeact::core::parse_json(parts[1], "outputSchema");
    if (!parsed.ok()) return 0;
    output = std::move(parsed).value();
  }
  auto signature = codeact::mcp::python_signature("fuzz_tool", "A tool.", *input, output);
  if (signature.ok()) (void)signature->text();
  std::vector<std::string> classes;
  (void)codeact::mcp::python_type(*input, *input, &classes);
  (void)codeact::mcp::python_literal(*input);
  (void)codeact::mcp::wraps_result(output);
  if (input->is_object()) {
    for (const auto& [key, _] : input->items()) (void)codeact::mcp::python_identifier(key);
  }
  return 0;
}
