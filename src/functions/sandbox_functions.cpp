// SandboxFunctions: MCP tools, host functions and Python functions made callable in a sandbox.
#include "codeact/functions/sandbox_functions.hpp"

#include <fmt/format.h>

#include <atomic>
#include <map>
#include <mutex>
#include <optional>

#include "codeact/core/base64.hpp"
#include "codeact/core/log.hpp"

namespace codeact::functions {

using core::Json;

namespace {

std::string extension_for(const std::string& mime) {
  static const std::map<std::string, std::string> kExt = {
      {"image/png", "png"},       {"image/jpeg", "jpg"},    {"image/gif", "gif"},
      {"image/webp", "webp"},     {"image/svg+xml", "svg"}, {"audio/wav", "wav"},
      {"audio/x-wav", "wav"},     {"audio/mpeg", "mp3"},    {"audio/ogg", "ogg"},
      {"application/pdf", "pdf"}, {"text/plain", "txt"},    {"application/json", "json"},
      {"text/csv", "csv"}};
  auto it = kExt.find(mime);
  return it == kExt.end() ? "bin" : it->second;
}

uint64_t fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

std::string FunctionInfo::text() const {
  mcp::PythonSignature s;
  s.name = name;
  s.signature = signature;
  s.doc = doc;
  s.classes = classes;
  return s.text();
}

Json FunctionInfo::to_json() const {
  return Json{{"name", name},       {"signature", signature}, {"doc", doc},
              {"classes", classes}, {"origin", origin},       {"text", text()}};
}

FileSink sandbox_file_sink(sandbox::SandboxBackend& backend, const std::string& sandbox_id) {
  return [&backend, sandbox_id](const std::string& path,
                                std::string_view bytes) -> core::Result<std::string> {
    CODEACT_TRY_STATUS(backend.write_file(sandbox_id, path, bytes));
    return path;
  };
}

struct SandboxFunctions::State {
  SandboxFunctionsOptions opts;
  std::mutex mu;
  std::optional<std::vector<mcp::ToolBinding>> bindings;  // GUARDED_BY(mu)
  int64_t bindings_generation = -1;                       // GUARDED_BY(mu)
  std::atomic<int64_t> files{0};

  std::vector<std::string> servers() const {
    if (!opts.mcp) return {};
    return opts.mcp_servers.empty() ? opts.mcp->names() : opts.mcp_servers;
  }

  // Sum of the servers' list_changed counters: a change invalidates the bindings.
  int64_t generation() {
    int64_t g = 0;
    for (const auto& s : servers()) {
      auto c = opts.mcp->client(s);
      if (c.ok()) g += (*c)->tools_generation();
    }
    return g;
  }

  core::Result<std::vector<mcp::ToolBinding>> mcp_bindings() {
    if (!opts.mcp) return std::vector<mcp::ToolBinding>{};
    int64_t g = generation();
    {
      std::lock_guard lock(mu);
      if (bindings && bindings_generation == g) return *bindings;
    }
    CODEACT_TRY(auto b, opts.mcp->tools(servers()));
    std::lock_guard lock(mu);
    bindings = b;
    bindings_generation = g;
    return b;
  }
};

SandboxFunctions::SandboxFunctions(SandboxFunctionsOptions options)
    : state_(std::make_shared<State>()) {
  state_->opts = std::move(options);
}

SandboxFunctions::~SandboxFunctions() = default;

core::Result<std::vector<FunctionInfo>> SandboxFunctions::bridged_functions() {
  CODEACT_TRY(auto bindings, state_->mcp_bindings());
  std::vector<FunctionInfo> out;
  std::map<std::string, std::string> origin_of;
  for (const auto& b : bindings) {
    out.push_back(FunctionInfo{b.python.name, b.python.signature, b.python.doc, b.python.classes,
                               "mcp:" + b.server});
    origin_of[b.python.name] = fmt::format("MCP server '{}' (tool '{}')", b.server, b.tool.name);
  }
  for (const auto& h : state_->opts.host_functions) {
    if (mcp::python_identifier(h.name) != h.name) {
      return core::invalid_argument(
          fmt::format("host function name '{}' is not a Python identifier", h.name));
    }
    if (auto it = origin_of.find(h.name); it != origin_of.end()) {
      return core::invalid_argument(fmt::format(
          "function name '{}' is offered twice: by {} and by a host function", h.name, it->second));
    }
    origin_of[h.name] = "a host function";
    out.push_back(FunctionInfo{h.name, h.signature, h.doc, {}, "host"});
  }
  return out;
}

namespace {

core::Result<PythonSourceAnalysis> analyse(sandbox::SandboxBackend& backend, const std::string& id,
                                           const PythonFunctionSource& src) {
  static const std::string kVar = "__codeact_analysis";
  auto defined = backend.define(id, analysis_program(src.source, kVar));
  if (!defined.ok()) {
    return core::Error(defined.error().code(), fmt::format("Python functions from {}: {}",
                                                           src.origin, defined.error().message()));
  }
  CODEACT_TRY(Json got, backend.variable(id, kVar));
  return PythonSourceAnalysis::from_json(got.value("value", Json::object()));
}

}  // namespace

core::Result<std::vector<FunctionInfo>> SandboxFunctions::functions(
    sandbox::SandboxBackend& backend, const std::string& sandbox_id) {
  CODEACT_TRY(auto out, bridged_functions());
  std::map<std::string, std::string> seen;
  for (const auto& f : out) seen[f.name] = f.origin;
  for (const auto& src : state_->opts.python_functions) {
    CODEACT_TRY(auto a, analyse(backend, sandbox_id, src));
    for (const auto& f : a.functions) {
      if (auto it = seen.find(f.name); it != seen.end()) {
        return core::invalid_argument(
            fmt::format("function name '{}' is offered twice: by {} and by Python functions "
                        "from {}",
                        f.name, it->second, src.origin));
      }
      seen[f.name] = "python:" + src.origin;
      out.push_back(FunctionInfo{f.name, f.signature, f.doc, {}, "python:" + src.origin});
    }
  }
  return out;
}

core::Result<std::vector<std::string>> SandboxFunctions::tools_as_func(
    sandbox::SandboxBackend& backend, const std::string& sandbox_id) {
  CODEACT_TRY(auto fns, functions(backend, sandbox_id));
  std::vector<std::string> out;
  for (const auto& f : fns) out.push_back(f.text());
  return out;
}

core::Status SandboxFunctions::prepare(sandbox::SandboxBackend& backend, const std::string& id) {
  CODEACT_TRY(auto bridged, bridged_functions());
  if (bridged.empty() && state_->opts.python_functions.empty()) return core::ok_status();
  uint64_t h = fnv1a("codeact-toolset-v1");
  for (const auto& f : bridged) h = fnv1a(f.signature + "\x1f" + f.doc + "\x1e", h);
  for (const auto& p : state_->opts.python_functions)
    h = fnv1a(p.origin + "\x1f" + p.source + "\x1e", h);
  std::string marker = fmt::format("__codeact_toolset_{:016x}", h);
  auto present = backend.variable(id, marker);
  if (present.ok()) return core::ok_status();
  if (present.error().code() != core::Code::kNotFound) return present.error();

  if (!bridged.empty()) {
    Json fns = Json::array();
    for (const auto& f : bridged)
      fns.push_back(Json{{"name", f.name}, {"signature", f.signature}, {"doc", f.doc}});
    CODEACT_TRY_STATUS(backend.register_functions(id, fns));
  }
  std::map<std::string, std::string> names;
  for (const auto& f : bridged) names[f.name] = f.origin;
  for (const auto& src : state_->opts.python_functions) {
    CODEACT_TRY(auto a, analyse(backend, id, src));
    for (const auto& f : a.functions) {
      if (names.count(f.name)) {
        return core::invalid_argument(
            fmt::format("function name '{}' is offered twice: by {} and by Python functions "
                        "from {}",
                        f.name, names[f.name], src.origin));
      }
      names[f.name] = src.origin;
    }
    if (!a.missing.empty()) {
      std::vector<std::string> dists;
      std::string list;
      for (const auto& m : a.missing) {
        dists.push_back(distribution_for_import(m));
        list +=
            (list.empty() ? "" : ", ") + m + (dists.back() == m ? "" : " (" + dists.back() + ")");
      }
      core::log().info("sandbox {}: installing {} for Python functions from {}", id, list,
                       src.origin);
      auto installed = backend.install(id, dists);
      if (!installed.ok() || !installed->ok) {
        std::string why = installed.ok() ? installed->output : installed.error().message();
        if (why.size() > 1500) why = "..." + why.substr(why.size() - 1500);
        return core::failed_precondition(
            fmt::format("Python functions from {} import {}, which the sandbox does not have, and "
                        "installing failed "
                        "(a sandbox without network cannot install; start it with network or "
                        "preinstall them): {}",
                        src.origin, list, why));
      }
    }
    auto defined = backend.define(id, definition_program(a, src.origin));
    if (!defined.ok()) {
      return core::Error(
          defined.error().code(),
          fmt::format("Python functions from {}: {}", src.origin, defined.error().message()));
    }
  }
  return backend.define(id, marker + " = True\n");
}

core::Result<Json> SandboxFunctions::to_python_value(const mcp::McpCallResult& r,
                                                     const mcp::ToolBinding& binding,
                                                     const FileSink& files,
                                                     const std::string& artifacts_dir) {
  if (r.is_error) {
    std::string text = r.text();
    if (text.empty())
      text = fmt::format("MCP tool '{}' of server '{}' failed", binding.tool.name, binding.server);
    return core::failed_precondition(text);
  }
  if (!r.structured.is_null()) {
    if (mcp::wraps_result(binding.tool.output_schema) && r.structured.is_object() &&
        r.structured.size() == 1 && r.structured.contains("result")) {
      return r.structured["result"];
    }
    return r.structured;
  }
  static std::atomic<int64_t> counter{0};
  auto save = [&](const std::string& b64, const std::string& mime) -> core::Result<Json> {
    CODEACT_TRY(std::string bytes, core::base64_decode(b64));
    if (!files)
      return core::failed_precondition("tool returned a file but no place to save it was given");
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
    std::string path = fmt::format("{}/{}-{}-{}.{}", artifacts_dir, binding.python.name, ms,
                                   counter.fetch_add(1), extension_for(mime));
    CODEACT_TRY(std::string where, files(path, bytes));
    return Json(where);
  };
  Json parts = Json::array();
  for (const auto& c : r.content) {
    std::string type = core::json_string(c, "type");
    if (type == "text") {
      parts.push_back(core::json_string(c, "text"));
    } else if (type == "image" || type == "audio") {
      CODEACT_TRY(Json p, save(core::json_string(c, "data"), core::json_string(c, "mimeType")));
      parts.push_back(std::move(p));
    } else if (type == "resource" && c.contains("resource")) {
      const Json& res = c["resource"];
      if (res.contains("text")) {
        parts.push_back(core::json_string(res, "text"));
      } else if (res.contains("blob")) {
        CODEACT_TRY(Json p,
                    save(core::json_string(res, "blob"), core::json_string(res, "mimeType")));
        parts.push_back(std::move(p));
      } else {
        parts.push_back(res);
      }
    } else if (type == "resource_link") {
      Json link = c;
      link.erase("type");
      parts.push_back(std::move(link));
    } else {
      parts.push_back(c);
    }
  }
  if (parts.empty()) return Json();
  if (parts.size() == 1) return parts[0];
  return parts;
}

sandbox::BridgeHandler SandboxFunctions::bridge_handler(FileSink files) {
  std::shared_ptr<State> state = state_;
  return [state, files](const std::string& name, const Json& args,
                        const Json& kwargs) -> core::Result<Json> {
    for (const auto& h : state->opts.host_functions) {
      if (h.name == name) return h.call(args, kwargs);
    }
    CODEACT_TRY(auto bindings, state->mcp_bindings());
    const mcp::ToolBinding* b = nullptr;
    for (const auto& x : bindings) {
      if (x.python.name == name) b = &x;
    }
    if (!b)
      return core::not_found(
          fmt::format("no function named {}() is offered to this sandbox", name));
    if (args.is_array() && !args.empty()) {
      return core::invalid_argument(fmt::format("{}() takes keyword arguments only", name));
    }
    Json arguments = Json::object();
    if (kwargs.is_object()) {
      for (const auto& [k, v] : kwargs.items()) {
        auto it = b->python.param_names.find(k);
        arguments[it == b->python.param_names.end() ? k : it->second] = v;
      }
    }
    CODEACT_TRY(auto client, state->opts.mcp->client(b->server));
    CODEACT_TRY(auto result, client->call_tool(b->tool.name, arguments, state->opts.tool_timeout));
    return to_python_value(result, *b, files, state->opts.artifacts_dir);
  };
}

core::Result<sandbox::ExecuteResult> SandboxFunctions::execute(sandbox::SandboxBackend& backend,
                                                               const std::string& id,
                                                               sandbox::ExecuteRequest request) {
  CODEACT_TRY_STATUS(prepare(backend, id));
  request.bridge = bridge_handler(sandbox_file_sink(backend, id));
  return backend.execute(id, request);
}

}  // namespace codeact::functions
