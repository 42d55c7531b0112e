// Fuzzes the checks on a model's tool arguments (include/codeact/agent/schema.hpp):
// agent::validate_json_schema against a tool's JSON schema (tools defined by a schema, such as an
// MCP server's), and agent::parse_args<T> for a typed tool. Input: the schema, a "%%" line, then
// the arguments; each part is JSON. The arguments also go through parse_args of a struct with a
// field of each kind.
#include <map>
#include <optional>

#include "codeact/agent/schema.hpp"
#include "codeact/core/json.hpp"
#include "fuzz_input.hpp"

namespace {

using codeact::agent::field;

struct Window {
  double from = 0;
  int32_t rows = 10;
  static auto fields() {
    return std::tuple{field(&Window::from, "from").min(-1).max(1e6).with_default(),
                      field(&Window::rows, "rows").min(1).with_default()};
  }
};

struct QueryArgs {
  std::string code;
  std::optional<int64_t> timeout;
  std::string mode = "run";
  std::vector<std::string> packages;
  std::map<std::string, uint16_t> ports;
  Window window;
  bool dry_run = false;
  static auto fields() {
    return std::tuple{field(&QueryArgs::code, "code", "Python code"),
                      field(&QueryArgs::timeout, "timeout"),
                      field(&QueryArgs::mode, "mode").choices({"run", "check"}).with_default(),
                      field(&QueryArgs::packages, "packages").with_default(),
                      field(&QueryArgs::ports, "ports").with_default(),
                      field(&QueryArgs::window, "window").with_default(),
                      field(&QueryArgs::dry_run, "dry_run").with_default()};
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parts = codeact::fuzz::split_parts(codeact::fuzz::as_text(data, size));
  if (parts.size() < 2) return 0;
  auto schema = codeact::core::parse_json(parts[0], "schema");
  auto value = codeact::core::parse_json(parts[1], "value");
  if (!value.ok()) return 0;
  auto typed = codeact::agent::parse_args<QueryArgs>(*value);
  if (typed.ok()) (void)codeact::agent::to_json_value(*typed);
  if (!schema.ok()) return 0;
  auto errors = codeact::agent::validate_json_schema(*value, *schema);
  if (!errors.empty()) (void)codeact::agent::format_arg_errors(errors);
  return 0;
}
