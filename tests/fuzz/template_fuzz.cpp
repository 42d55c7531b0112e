// Fuzzes the Jinja-subset template engine end to end: lexer, parser and renderer
// (core::Template, include/codeact/core/template.hpp). The input is the template source; its
// options (strict_undefined, trim_blocks, lstrip_blocks, keep_trailing_newline) are picked from a
// hash of it, and it renders against the variables codeact's prompts are given.
#include "codeact/core/template.hpp"
#include "fuzz_input.hpp"

using codeact::core::Json;

namespace {

const Json& prompt_variables() {
  static const Json context = Json::parse(R"({
    "container_id": "sbx-4f2a",
    "python_packages": ["numpy", "pandas==2.2.1", "matplotlib"],
    "sandbox_variable_names": {"df": "DataFrame", "total": "int", "rows": "list"},
    "sandbox_files": ["output/plot.png", "data/sales.csv"],
    "tools_as_func": "def search_docs(query: str, limit: int = 5) -> Any:\n    ...",
    "user": {"name": "Ada", "tags": ["admin", "dev"], "quota": 2.5, "active": true},
    "empty": [], "nothing": null, "n": 3, "big": 9007199254740993, "neg": -7
  })");
  return context;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view source = codeact::fuzz::as_text(data, size);
  size_t bits = std::hash<std::string_view>{}(source);
  codeact::core::TemplateOptions options;
  options.strict_undefined = bits & 1;
  options.trim_blocks = bits & 2;
  options.lstrip_blocks = bits & 4;
  options.keep_trailing_newline = bits & 8;
  // A smaller budget than the default: the same limits are reached in a tenth of the steps, so
  // an input that runs into them takes well under a second here too (with ASan and coverage).
  options.render_budget_bytes = size_t{2} << 20;
  auto parsed = codeact::core::Template::parse(source, "fuzz", options);
  if (!parsed.ok()) return 0;
  (void)parsed->render(prompt_variables());
  (void)parsed->render(Json());
  return 0;
}
