// FakeSandboxBackend: an in-memory sandbox::SandboxBackend for unit tests of the layers above the
// sandbox (the agent's sandbox tools, the sandbox functions, the durable activities), so they run
// without Docker.
//
// What it keeps per sandbox: whether it runs, its options, files (path -> bytes, with an mtime that
// grows on every write), variables (name -> {type, repr, value}), names defined by define(), the
// functions registered for the bridge, and what every operation was asked (calls()).
// What it does not do is run Python or bash: a test scripts cells with on_execute / on_bash (the
// default cell succeeds and prints nothing). Like the real kernel, a cell or script with an
// execution_id runs once: the same id again returns the recorded result with `replayed` set.
// fail_next(op, error[, id]) makes the next call of an operation (on that sandbox) fail, for
// error-mapping tests.
// Paths follow the real sandbox: relative paths are under /output; reads and writes outside
// /output are PermissionDenied; a missing file or variable is NotFound.
//
// Thread-safe (one mutex); callbacks run without it held.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codeact/sandbox/sandbox_backend.hpp"

namespace codeact::testing {

using core::Json;
using core::Result;

class FakeSandboxBackend final : public sandbox::SandboxBackend {
 public:
  struct Variable {
    std::string type;
    std::string repr;
    Json value;
    bool persisted = true;
  };
  struct Sandbox {
    sandbox::SandboxOptions options;
    bool running = false;
    std::map<std::string, std::pair<std::string, double>> files;  // path -> (bytes, mtime)
    std::map<std::string, Variable> variables;
    std::set<std::string> defined;         // names define()d (marker assignments `NAME = True`)
    std::vector<std::string> definitions;  // every define() source, in order
    Json functions = Json::array();        // register_functions()
    std::vector<std::string> python_packages, system_packages;
    int64_t cell = 0;
    std::map<std::string, sandbox::ExecuteResult> cells_run;  // by execution id
    std::map<std::string, sandbox::BashResult> scripts_run;   // by execution id
    // Checkpoints: what files and variables were after each committed cell and clear.
    struct Snapshot {
      std::map<std::string, std::pair<std::string, double>> files;
      std::map<std::string, Variable> variables;
      sandbox::Checkpoint meta;
    };
    std::vector<Snapshot> checkpoints;
    int64_t current = 0;
    std::map<std::string, sandbox::RewindResult> rewinds_run;  // by execution id
  };
  // One call of an operation: its name, the sandbox id and what it was given.
  struct Call {
    std::string op;
    std::string id;
    Json args;
  };

  // Runs a cell (the default succeeds with no output). Gets the sandbox to change its state.
  std::function<Result<sandbox::ExecuteResult>(Sandbox&, const sandbox::ExecuteRequest&)>
      on_execute;
  std::function<Result<sandbox::BashResult>(Sandbox&, const std::string& script, double timeout)>
      on_bash;

  // The next call of `op` (on sandbox `id`, when given) fails with `error`.
  void fail_next(const std::string& op, core::Error error, const std::string& id = "") {
    std::lock_guard lock(mu_);
    failures_.push_back(Failure{op, id, std::move(error)});
  }
  std::vector<Call> calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  std::vector<Call> calls_of(const std::string& op) const {
    std::vector<Call> out;
    for (auto& c : calls()) {
      if (c.op == op) out.push_back(c);
    }
    return out;
  }
  // Direct access for setting up and checking state. REQUIRES: the sandbox exists.
  template <typename F>
  auto with(const std::string& id, F f) {
    std::lock_guard lock(mu_);
    return f(sandboxes_.at(id));
  }
  bool exists(const std::string& id) const {
    std::lock_guard lock(mu_);
    return sandboxes_.count(id) > 0;
  }

  // --- SandboxBackend

  Result<sandbox::SandboxInfo> start(const sandbox::SandboxOptions& options) override {
    std::lock_guard lock(mu_);
    std::string id = options.id.empty() ? fmt::format("sbx-{:08x}", ++counter_) : options.id;
    record("start", id,
           Json{{"python_packages", options.python_packages},
                {"system_packages", options.system_packages},
                {"network", options.network}});
    CODEACT_TRY_STATUS(injected("start", id));
    auto [it, created] = sandboxes_.try_emplace(id);
    Sandbox& s = it->second;
    if (created) s.options = options;
    s.options.network = s.options.network || options.network;
    for (const auto& p : options.python_packages) add_unique(s.python_packages, p);
    for (const auto& p : options.system_packages) add_unique(s.system_packages, p);
    s.running = true;
    sandbox::SandboxInfo info = info_of(id, s);
    info.resumed = !created;
    return info;
  }
  core::Status stop(const std::string& id) override {
    std::lock_guard lock(mu_);
    record("stop", id, Json::object());
    CODEACT_TRY_STATUS(injected("stop", id));
    CODEACT_TRY(Sandbox * s, find(id));
    s->running = false;
    return core::ok_status();
  }
  Result<sandbox::SandboxInfo> restart(const std::string& id) override {
    std::lock_guard lock(mu_);
    record("restart", id, Json::object());
    CODEACT_TRY_STATUS(injected("restart", id));
    CODEACT_TRY(Sandbox * s, find(id));
    s->running = true;
    return info_of(id, *s);
  }
  core::Status remove(const std::string& id, bool volume = false) override {
    std::lock_guard lock(mu_);
    record("remove", id, Json{{"volume", volume}});
    CODEACT_TRY_STATUS(injected("remove", id));
    CODEACT_TRY(Sandbox * s, find(id));
    if (volume) {
      sandboxes_.erase(id);
    } else {
      s->running = false;  // the container goes; the volume (files, variables) stays
    }
    return core::ok_status();
  }
  Result<sandbox::SandboxInfo> info(const std::string& id) override {
    std::lock_guard lock(mu_);
    record("info", id, Json::object());
    CODEACT_TRY_STATUS(injected("info", id));
    CODEACT_TRY(Sandbox * s, find(id));
    return info_of(id, *s);
  }
  Result<std::vector<sandbox::SandboxInfo>> list() override {
    std::lock_guard lock(mu_);
    record("list", "", Json::object());
    CODEACT_TRY_STATUS(injected("list", ""));
    std::vector<sandbox::SandboxInfo> out;
    for (auto& [id, s] : sandboxes_) out.push_back(info_of(id, s));
    return out;
  }

  Result<sandbox::ExecuteResult> execute(const std::string& id,
                                         const sandbox::ExecuteRequest& request) override {
    std::unique_lock lock(mu_);
    record("execute", id,
           Json{{"code", request.code},
                {"execution_id", request.execution_id},
                {"timeout_seconds", request.timeout_seconds},
                {"max_output_bytes", request.max_output_bytes},
                {"has_bridge", static_cast<bool>(request.bridge)}});
    CODEACT_TRY_STATUS(injected("execute", id));
    CODEACT_TRY(Sandbox * s, running(id));
    if (!request.execution_id.empty()) {
      if (auto it = s->cells_run.find(request.execution_id); it != s->cells_run.end()) {
        sandbox::ExecuteResult again = it->second;
        again.replayed = true;
        return again;
      }
    }
    sandbox::ExecuteResult r;
    r.ok = true;
    if (on_execute) {
      auto handler = on_execute;
      Sandbox copy = *s;
      lock.unlock();
      auto got = handler(copy, request);
      lock.lock();
      CODEACT_TRY(s, find(id));
      *s = std::move(copy);
      if (!got.ok()) return got.error();
      r = std::move(*got);
    }
    r.cell = ++s->cell;
    r.execution_id = request.execution_id;
    r.checkpoint = checkpoint(*s, request.execution_id);
    if (!request.execution_id.empty()) s->cells_run[request.execution_id] = r;
    return r;
  }
  Result<sandbox::BashResult> bash(const std::string& id, const std::string& script,
                                   double timeout_seconds = 300,
                                   const std::string& execution_id = "") override {
    std::unique_lock lock(mu_);
    record("bash", id,
           Json{{"script", script},
                {"timeout_seconds", timeout_seconds},
                {"execution_id", execution_id}});
    CODEACT_TRY_STATUS(injected("bash", id));
    CODEACT_TRY(Sandbox * s, running(id));
    if (!execution_id.empty()) {
      if (auto it = s->scripts_run.find(execution_id); it != s->scripts_run.end()) {
        sandbox::BashResult again = it->second;
        again.replayed = true;
        return again;
      }
    }
    sandbox::BashResult r;
    if (on_bash) {
      auto handler = on_bash;
      Sandbox copy = *s;
      lock.unlock();
      auto got = handler(copy, script, timeout_seconds);
      lock.lock();
      CODEACT_TRY(s, find(id));
      *s = std::move(copy);
      if (!got.ok()) return got.error();
      r = std::move(*got);
    }
    if (!execution_id.empty()) s->scripts_run[execution_id] = r;
    return r;
  }
  Result<Json> variables(const std::string& id) override {
    std::lock_guard lock(mu_);
    record("variables", id, Json::object());
    CODEACT_TRY_STATUS(injected("variables", id));
    CODEACT_TRY(Sandbox * s, running(id));
    Json vars = Json::array();
    for (const auto& [name, v] : s->variables) {
      Json item{{"name", name},
                {"type", v.type},
                {"kind", "value"},
                {"persisted", v.persisted},
                {"preview", v.repr}};
      if (!v.persisted) item["reason"] = "cannot be pickled";
      vars.push_back(item);
    }
    return Json{{"variables", vars}};
  }
  Result<Json> variable(const std::string& id, const std::string& name) override {
    std::lock_guard lock(mu_);
    record("variable", id, Json{{"name", name}});
    CODEACT_TRY_STATUS(injected("variable", id));
    CODEACT_TRY(Sandbox * s, running(id));
    if (s->defined.count(name))
      return Json{{"name", name}, {"value_type", "bool"}, {"repr", "True"}, {"value", true}};
    auto it = s->variables.find(name);
    if (it == s->variables.end())
      return core::not_found(fmt::format("no variable '{}' in the sandbox", name));
    return Json{{"name", name},
                {"value_type", it->second.type},
                {"repr", it->second.repr},
                {"value", it->second.value}};
  }
  Result<Json> clear(const std::string& id, const std::string& execution_id = "") override {
    std::lock_guard lock(mu_);
    record("clear", id, Json{{"execution_id", execution_id}});
    CODEACT_TRY_STATUS(injected("clear", id));
    CODEACT_TRY(Sandbox * s, running(id));
    Json names = Json::array();
    for (const auto& [name, _] : s->variables) names.push_back(name);
    s->variables.clear();
    s->defined.clear();
    checkpoint(*s, "");
    return Json{{"cleared", names}};
  }
  Result<std::vector<sandbox::FileEntry>> list_files(const std::string& id,
                                                     const std::string& path = "") override {
    std::lock_guard lock(mu_);
    record("list_files", id, Json{{"path", path}});
    CODEACT_TRY_STATUS(injected("list_files", id));
    CODEACT_TRY(Sandbox * s, running(id));
    CODEACT_TRY(std::string dir, resolve(path.empty() ? "/output" : path));
    std::vector<sandbox::FileEntry> out;
    for (const auto& [p, f] : s->files) {
      if (p.rfind(dir + "/", 0) == 0 || p == dir)
        out.push_back(sandbox::FileEntry{p, static_cast<int64_t>(f.first.size()), f.second});
    }
    return out;
  }
  Result<std::string> read_file(const std::string& id, const std::string& path) override {
    std::lock_guard lock(mu_);
    record("read_file", id, Json{{"path", path}});
    CODEACT_TRY_STATUS(injected("read_file", id));
    CODEACT_TRY(Sandbox * s, running(id));
    CODEACT_TRY(std::string p, resolve(path));
    auto it = s->files.find(p);
    if (it == s->files.end()) return core::not_found(fmt::format("no file {} in the sandbox", p));
    return it->second.first;
  }
  core::Status write_file(const std::string& id, const std::string& path, std::string_view data,
                          const std::string& execution_id = "") override {
    std::lock_guard lock(mu_);
    record("write_file", id,
           Json{{"path", path}, {"size", data.size()}, {"execution_id", execution_id}});
    CODEACT_TRY_STATUS(injected("write_file", id));
    CODEACT_TRY(Sandbox * s, running(id));
    CODEACT_TRY(std::string p, resolve(path));
    s->files[p] = {std::string(data), ++clock_};
    return core::ok_status();
  }
  Result<sandbox::InstallResult> install(const std::string& id,
                                         const std::vector<std::string>& packages,
                                         bool system = false,
                                         const std::string& execution_id = "") override {
    std::lock_guard lock(mu_);
    record("install", id,
           Json{{"packages", packages}, {"system", system}, {"execution_id", execution_id}});
    CODEACT_TRY_STATUS(injected("install", id));
    CODEACT_TRY(Sandbox * s, running(id));
    if (!system && !s->options.network)
      return core::failed_precondition(
          "installing Python packages needs network; the sandbox has none");
    for (const auto& p : packages) add_unique(system ? s->system_packages : s->python_packages, p);
    sandbox::InstallResult r;
    r.ok = true;
    r.installed = packages;
    return r;
  }
  core::Status register_functions(const std::string& id, const Json& functions) override {
    std::lock_guard lock(mu_);
    record("register_functions", id, functions);
    CODEACT_TRY_STATUS(injected("register_functions", id));
    CODEACT_TRY(Sandbox * s, running(id));
    s->functions = functions;
    return core::ok_status();
  }
  core::Status define(const std::string& id, const std::string& source) override {
    std::lock_guard lock(mu_);
    record("define", id, Json{{"source", source}});
    CODEACT_TRY_STATUS(injected("define", id));
    CODEACT_TRY(Sandbox * s, running(id));
    s->definitions.push_back(source);
    const std::string suffix = " = True\n";
    if (source.size() > suffix.size() &&
        source.compare(source.size() - suffix.size(), suffix.size(), suffix) == 0 &&
        source.find('\n') == source.size() - 1) {
      s->defined.insert(source.substr(0, source.size() - suffix.size()));
    }
    return core::ok_status();
  }
  Result<sandbox::CheckpointHistory> history(const std::string& id) override {
    std::lock_guard lock(mu_);
    record("history", id, Json::object());
    CODEACT_TRY_STATUS(injected("history", id));
    CODEACT_TRY(Sandbox * s, running(id));
    sandbox::CheckpointHistory h;
    for (const auto& snap : s->checkpoints) {
      h.checkpoints.push_back(snap.meta);
      h.checkpoints.back().current = snap.meta.n == s->current;
    }
    h.current = s->current;
    return h;
  }
  Result<sandbox::RewindResult> rewind(const std::string& id, int64_t to,
                                       const std::string& execution_id = "") override {
    std::lock_guard lock(mu_);
    record("rewind", id, Json{{"to", to}, {"execution_id", execution_id}});
    CODEACT_TRY_STATUS(injected("rewind", id));
    CODEACT_TRY(Sandbox * s, running(id));
    if (auto it = s->rewinds_run.find(execution_id);
        !execution_id.empty() && it != s->rewinds_run.end()) {
      sandbox::RewindResult again = it->second;
      again.replayed = true;
      return again;
    }
    if (to < 1 || to > static_cast<int64_t>(s->checkpoints.size()))
      return core::not_found(fmt::format("there is no checkpoint {}", to));
    const auto& snap = s->checkpoints[to - 1];
    sandbox::RewindResult r;
    r.checkpoint = to;
    r.previous = s->current;
    s->files = snap.files;
    s->variables = snap.variables;
    s->current = to;
    for (const auto& [name, _] : snap.variables) r.restored.push_back(name);
    if (!execution_id.empty()) s->rewinds_run[execution_id] = r;
    return r;
  }
  Result<sandbox::ForkResult> fork(const std::string& id, int64_t at,
                                   const std::string& new_id) override {
    std::lock_guard lock(mu_);
    record("fork", id, Json{{"at", at}, {"new_id", new_id}});
    CODEACT_TRY_STATUS(injected("fork", id));
    CODEACT_TRY(Sandbox * s, find(id));
    if (at < 1 || at > static_cast<int64_t>(s->checkpoints.size()))
      return core::not_found(fmt::format("there is no checkpoint {}", at));
    const std::string from = fmt::format("{}@{}", id, at);
    sandbox::ForkResult out;
    out.source = id;
    out.source_checkpoint = at;
    if (auto it = sandboxes_.find(new_id); it != sandboxes_.end()) {
      const auto& cps = it->second.checkpoints;
      if (cps.empty() || cps.front().meta.forked_from != from)
        return core::Error(core::Code::kAlreadyExists,
                           fmt::format("sandbox \"{}\" already exists", new_id));
    } else {
      Sandbox child;
      child.options = s->options;
      child.options.id = new_id;
      child.python_packages = s->python_packages;
      child.system_packages = s->system_packages;
      child.running = true;
      const auto& snap = s->checkpoints[at - 1];
      child.files = snap.files;
      child.variables = snap.variables;
      checkpoint(child, "");
      child.checkpoints.back().meta.forked_from = from;
      s = nullptr;  // the emplace below may move the source
      sandboxes_.emplace(new_id, std::move(child));
    }
    Sandbox& child = sandboxes_.at(new_id);
    for (const auto& [name, _] : child.checkpoints.front().variables) out.restored.push_back(name);
    out.sandbox = info_of(new_id, child);
    return out;
  }

 private:
  // Records the sandbox's files and variables as its next checkpoint; returns its number.
  int64_t checkpoint(Sandbox& s, const std::string& execution_id) {
    Sandbox::Snapshot snap{s.files, s.variables, {}};
    snap.meta.n = static_cast<int64_t>(s.checkpoints.size()) + 1;
    snap.meta.cell = s.cell;
    snap.meta.execution_id = execution_id;
    s.checkpoints.push_back(std::move(snap));
    s.current = s.checkpoints.back().meta.n;
    return s.current;
  }
  static void add_unique(std::vector<std::string>& v, const std::string& x) {
    if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
  }
  void record(const std::string& op, const std::string& id, Json args) {
    calls_.push_back(Call{op, id, std::move(args)});
  }
  core::Status injected(const std::string& op, const std::string& id) {
    for (auto it = failures_.begin(); it != failures_.end(); ++it) {
      if (it->op == op && (it->id.empty() || it->id == id)) {
        core::Error e = it->error;
        failures_.erase(it);
        return e;
      }
    }
    return core::ok_status();
  }
  Result<Sandbox*> find(const std::string& id) {
    auto it = sandboxes_.find(id);
    if (it == sandboxes_.end()) return core::not_found(fmt::format("no sandbox \"{}\"", id));
    return &it->second;
  }
  // Operations on a stopped sandbox start it again, as the real backend does.
  Result<Sandbox*> running(const std::string& id) {
    CODEACT_TRY(Sandbox * s, find(id));
    s->running = true;
    return s;
  }
  static Result<std::string> resolve(const std::string& path) {
    std::string p = path.empty() || path[0] != '/' ? "/output/" + path : path;
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    if (p != "/output" && p.rfind("/output/", 0) != 0)
      return core::permission_denied(
          fmt::format("{} is outside the sandbox's workspace (/output)", path));
    if (p.find("/../") != std::string::npos ||
        (p.size() >= 3 && p.compare(p.size() - 3, 3, "/..") == 0))
      return core::permission_denied(fmt::format("{} leaves the workspace", path));
    return p;
  }
  sandbox::SandboxInfo info_of(const std::string& id, const Sandbox& s) const {
    sandbox::SandboxInfo info;
    info.id = id;
    info.container_name = "codeact-" + id;
    info.volume = "workflow-" + id;
    info.status = s.running ? "running" : "exited";
    info.running = s.running;
    info.network = s.options.network;
    info.python_packages = s.python_packages;
    info.system_packages = s.system_packages;
    info.cell = s.cell;
    return info;
  }

  mutable std::mutex mu_;
  std::map<std::string, Sandbox> sandboxes_;  // GUARDED_BY(mu_)
  struct Failure {
    std::string op, id;
    core::Error error;
  };
  std::vector<Failure> failures_;  // GUARDED_BY(mu_)
  std::vector<Call> calls_;        // GUARDED_BY(mu_)
  int64_t counter_ = 0;            // GUARDED_BY(mu_)
  double clock_ = 1000;            // GUARDED_BY(mu_)
};

}  // namespace codeact::testing
