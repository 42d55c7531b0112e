// SandboxManager::fork: a new sandbox starting from a checkpoint of another (contract in
// sandbox_backend.hpp; the kernel's side in codeact_kernel/time_travel.py).
#include <fmt/format.h>

#include "codeact/core/log.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"

namespace codeact::sandbox {

using core::Result;
using namespace std::chrono_literals;

namespace {

constexpr std::chrono::milliseconds kStateTimeout = std::chrono::minutes(30);

std::vector<std::string> strings_of(const Json& j, std::string_view key) {
  std::vector<std::string> out;
  if (!j.contains(key) || !j[key].is_array()) return out;
  for (const auto& v : j[key]) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::vector<Json> objects_of(const Json& j, std::string_view key) {
  std::vector<Json> out;
  if (!j.contains(key) || !j[key].is_array()) return out;
  for (const auto& v : j[key]) out.push_back(v);
  return out;
}

ForkResult fork_result(SandboxInfo child, const std::string& source, int64_t at,
                       const Json& imported, std::vector<std::string> files_left) {
  ForkResult out;
  out.sandbox = std::move(child);
  out.source = source;
  out.source_checkpoint = at;
  out.restored = strings_of(imported, "restored");
  out.restore_errors = objects_of(imported, "restore_errors");
  out.files_left = std::move(files_left);
  return out;
}

}  // namespace

Result<ForkResult> SandboxManager::fork(const std::string& id, int64_t at,
                                        const std::string& new_id) {
  CODEACT_TRY_STATUS(validate_id(id));
  CODEACT_TRY_STATUS(validate_id(new_id));
  if (new_id == id) {
    return core::invalid_argument(
        fmt::format("a fork of sandbox \"{}\" needs an id of its own", id));
  }
  if (at < 1) return core::invalid_argument(fmt::format("checkpoint {} does not exist", at));
  CODEACT_TRY(SandboxOptions options, options_of(id));
  const std::string import_id = fmt::format("fork:{}@{}", id, at);
  const std::string from = fmt::format("{}@{}", id, at);

  // new_id exists: the result of this very fork (a retry) when its first checkpoint came from
  // here, a fork cut short before its import when it has none, else someone else's sandbox.
  bool existed = options_of(new_id).ok();
  if (existed) {
    CODEACT_TRY(CheckpointHistory h, history(new_id));
    if (!h.checkpoints.empty()) {
      if (h.checkpoints.front().forked_from != from) {
        return core::Error(core::Code::kAlreadyExists,
                           fmt::format("sandbox \"{}\" already exists; fork into a new id, or "
                                       "remove it first (codeact sandbox rm {} --volume)",
                                       new_id, new_id));
      }
      CODEACT_TRY(Json recorded,
                  kernel_call(new_id, "checkpoints.import",
                              Json{{"path", "/"}, {"execution_id", import_id}}, kStateTimeout));
      CODEACT_TRY(SandboxInfo child, info(new_id));
      return fork_result(std::move(child), id, at, recorded, {});
    }
  }

  const std::string name = "fork-" + new_id;
  CODEACT_TRY(Json exported, kernel_call(id, "checkpoints.export", Json{{"at", at}, {"name", name}},
                                         kStateTimeout));
  const std::string path = core::json_string(exported, "path");
  auto archive = docker().get_archive(container_name(id), path);
  (void)kernel_call(id, "checkpoints.release", Json{{"name", name}}, 60s);
  if (!archive.ok()) {
    return archive.error().with_context(fmt::format("forking sandbox \"{}\"", id));
  }
  // path is <storage>/<id>/state/exports/<name>: the new workspace is <storage>/<new_id>.
  const std::string suffix = fmt::format("/{}/state/exports/{}", id, name);
  if (!path.ends_with(suffix)) {
    return core::Error(core::Code::kInternal,
                       fmt::format("sandbox \"{}\" exported its checkpoint to an unexpected "
                                   "place: {}",
                                   id, path));
  }
  const std::string workspace = path.substr(0, path.size() - suffix.size()) + "/" + new_id;

  options.id = new_id;
  options.python_packages.clear();  // the installed ones come with the export
  CODEACT_TRY(SandboxInfo child, start(options));
  auto imported = [&]() -> Result<Json> {
    CODEACT_TRY_STATUS(
        docker().put_archive(container_name(new_id), workspace, std::move(archive->tar)));
    return kernel_call(new_id, "checkpoints.import",
                       Json{{"path", workspace + "/" + name}, {"execution_id", import_id}},
                       kStateTimeout);
  }();
  if (!imported.ok()) {
    if (!existed) {
      core::log().warn("fork of sandbox \"{}\" into \"{}\" failed; removing \"{}\"", id, new_id,
                       new_id);
      (void)remove(new_id, /*volume=*/true);
    }
    return imported.error().with_context(
        fmt::format("forking sandbox \"{}\" into \"{}\"", id, new_id));
  }
  CODEACT_TRY(child, info(new_id));
  return fork_result(std::move(child), id, at, *imported, strings_of(exported, "files_left"));
}

}  // namespace codeact::sandbox
