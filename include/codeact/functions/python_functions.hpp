// Custom Python functions: source (a file or a string) defined once in a sandbox's kernel, so
// sandbox code calls them directly (no bridge). Their third-party imports are detected in the
// kernel (standard library excluded with sys.stdlib_module_names), mapped to distributions
// (sklearn -> scikit-learn, PIL -> pillow, ...) and installed once per sandbox when missing;
// `async def` functions get a synchronous wrapper (callable without await); indented source
// (functions copied from a class or a function body) is dedented.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::functions {

struct PythonFunctionSource {
  std::string source;
  std::string origin;  // the file name, or "<string>"

  static core::Result<PythonFunctionSource> from_file(const std::string& path);
  static PythonFunctionSource from_string(std::string source, std::string origin = "<string>");
};

// The PyPI distribution that provides top-level module `module` (sklearn -> scikit-learn);
// the module name itself when no mapping is known.
std::string distribution_for_import(std::string_view module);

// What the kernel found in a source: used by SandboxFunctions.
struct PythonSourceAnalysis {
  std::string dedented;                  // the source, dedented
  std::vector<std::string> third_party;  // top-level modules outside the standard library
  std::vector<std::string> missing;      // ... of which not importable in the sandbox
  struct Function {
    std::string name, signature, doc;
    bool is_async = false;
  };
  std::vector<Function> functions;  // public top-level functions
  static PythonSourceAnalysis from_json(const core::Json& j);
};

// Python source (for SandboxBackend::define) that analyses `source` into the kernel variable
// `result_name` (read it back with the kernel's `get`).
std::string analysis_program(const std::string& source, const std::string& result_name);
// Python source that defines `analysis.dedented` and wraps its async functions.
std::string definition_program(const PythonSourceAnalysis& analysis, const std::string& origin);

}  // namespace codeact::functions
