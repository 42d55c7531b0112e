// Custom Python functions: reading sources, import -> distribution names, and the small Python
// programs that analyse and define them inside the sandbox's kernel.
#include "codeact/functions/python_functions.hpp"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <sstream>

#include "codeact/mcp/python_signature.hpp"

namespace codeact::functions {

core::Result<PythonFunctionSource> PythonFunctionSource::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::not_found(fmt::format("cannot read Python functions from '{}'", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  auto slash = path.rfind('/');
  return PythonFunctionSource{ss.str(), slash == std::string::npos ? path : path.substr(slash + 1)};
}

PythonFunctionSource PythonFunctionSource::from_string(std::string source, std::string origin) {
  return PythonFunctionSource{std::move(source), std::move(origin)};
}

std::string distribution_for_import(std::string_view module) {
  static const std::map<std::string, std::string, std::less<>> kMap = {
      {"sklearn", "scikit-learn"},
      {"PIL", "pillow"},
      {"yaml", "pyyaml"},
      {"bs4", "beautifulsoup4"},
      {"cv2", "opencv-python"},
      {"skimage", "scikit-image"},
      {"dateutil", "python-dateutil"},
      {"dotenv", "python-dotenv"},
      {"docx", "python-docx"},
      {"pptx", "python-pptx"},
      {"Crypto", "pycryptodome"},
      {"jwt", "PyJWT"},
      {"serial", "pyserial"},
      {"usb", "pyusb"},
      {"magic", "python-magic"},
      {"attr", "attrs"},
      {"MySQLdb", "mysqlclient"},
      {"psycopg2", "psycopg2-binary"},
      {"fitz", "pymupdf"},
      {"gi", "PyGObject"},
      {"zmq", "pyzmq"},
      {"Levenshtein", "python-Levenshtein"},
      {"faiss", "faiss-cpu"},
      {"telegram", "python-telegram-bot"},
      {"jose", "python-jose"},
      {"slugify", "python-slugify"},
      {"multipart", "python-multipart"},
      {"OpenSSL", "pyOpenSSL"},
      {"Bio", "biopython"},
      {"git", "GitPython"},
      {"google", "protobuf"},
      {"lxml", "lxml"},
      {"sentence_transformers", "sentence-transformers"},
      {"tables", "tables"},
      {"xlrd", "xlrd"},
      {"win32api", "pywin32"},
      {"nacl", "PyNaCl"},
      {"Image", "pillow"},
      {"pkg_resources", "setuptools"},
      {"markdown", "Markdown"},
      {"dns", "dnspython"},
      {"ldap", "python-ldap"},
      {"snappy", "python-snappy"},
      {"sqlalchemy", "SQLAlchemy"},
      {"tensorflow", "tensorflow"},
      {"torch", "torch"},
      {"duckduckgo_search", "duckduckgo-search"}};
  auto it = kMap.find(module);
  return it == kMap.end() ? std::string(module) : it->second;
}

PythonSourceAnalysis PythonSourceAnalysis::from_json(const core::Json& j) {
  PythonSourceAnalysis a;
  a.dedented = core::json_string(j, "source");
  for (const auto& m : j.value("third_party", core::Json::array()))
    a.third_party.push_back(m.get<std::string>());
  for (const auto& m : j.value("missing", core::Json::array()))
    a.missing.push_back(m.get<std::string>());
  for (const auto& f : j.value("functions", core::Json::array())) {
    a.functions.push_back(Function{core::json_string(f, "name"), core::json_string(f, "signature"),
                                   core::json_string(f, "doc"), core::json_bool(f, "is_async")});
  }
  return a;
}

std::string analysis_program(const std::string& source, const std::string& result_name) {
  static constexpr const char* kProgram = R"PY(
def __codeact_analyze(source):
    import ast, importlib.util, sys, textwrap
    src = textwrap.dedent(source)
    tree = ast.parse(src)
    mods = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            mods.add(node.module.split(".")[0])
    std = set(getattr(sys, "stdlib_module_names", ())) | set(sys.builtin_module_names)
    third = sorted(m for m in mods if m not in std and m != "__future__")
    missing = []
    for m in third:
        try:
            found = importlib.util.find_spec(m) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(m)
    funcs = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            sig = "def %s(%s)" % (node.name, ast.unparse(node.args))
            if node.returns is not None:
                sig += " -> " + ast.unparse(node.returns)
            funcs.append({"name": node.name, "signature": sig, "doc": ast.get_docstring(node) or "",
                          "is_async": isinstance(node, ast.AsyncFunctionDef)})
    return {"source": src, "third_party": third, "missing": missing, "functions": funcs}
)PY";
  return fmt::format("{}\n{} = __codeact_analyze({})\n", kProgram, result_name,
                     mcp::python_literal(core::Json(source)));
}

std::string definition_program(const PythonSourceAnalysis& analysis, const std::string& origin) {
  std::vector<std::string> async_names;
  for (const auto& f : analysis.functions) {
    if (f.is_async) async_names.push_back(f.name);
  }
  std::string out = fmt::format("# custom functions from {}\n{}\n", origin, analysis.dedented);
  if (!async_names.empty()) {
    // Sync wrappers: sandbox code calls async functions without await, also from inside a
    // running event loop (then the coroutine runs on a helper thread).
    out += R"PY(
def __codeact_syncify(names):
    import asyncio, functools, threading
    g = globals()
    def make(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return asyncio.run(fn(*args, **kwargs))
            box = {}
            def run():
                try:
                    box["value"] = asyncio.run(fn(*args, **kwargs))
                except BaseException as e:
                    box["error"] = e
            t = threading.Thread(target=run)
            t.start()
            t.join()
            if "error" in box:
                raise box["error"]
            return box.get("value")
        wrapper.__codeact_async__ = fn
        return wrapper
    for n in names:
        g[n] = make(g[n])
)PY";
    core::Json names = async_names;
    out += fmt::format("__codeact_syncify({})\n", mcp::python_literal(names));
  }
  return out;
}

}  // namespace codeact::functions
