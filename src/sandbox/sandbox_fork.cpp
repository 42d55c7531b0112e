// SandboxManager::fork: a new sandbox starting from a checkpoint of another (contract in
// sandbox_backend.hpp; the kernel's side in codeact_kernel/time_travel.py).
#include <fmt/format.h>

#include "codeact/core/log.hpp"
#include "codeact/core/strings.hpp"
#include "codeact/sandbox/image_builder.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"

namespace codeact::sandbox {

using core::Result;
using namespace std::chrono_literals;

namespace {

constexpr std::chrono::milliseconds kStateTimeout = std::chrono::minutes(30);
// Names the container that copies a fork's checkpoint between the two volumes (its value: the
// new sandbox's id). Not a sandbox: "codeact_fork-" can never be "codeact-" + a sandbox id.
constexpr std::string_view kCopierLabel = "io.codeact.fork-copy";

// Whether the container mounts its sandbox's named volume at /persistent-storage (a sandbox
// without persistence has a tmpfs there).
bool has_volume(const ContainerInfo& c) {
  if (!c.raw.contains("Mounts") || !c.raw["Mounts"].is_array()) return false;
  for (const auto& m : c.raw["Mounts"]) {
    if (core::json_string(m, "Type") == "volume" &&
        core::json_string(m, "Destination") == kPersistentStoragePath) {
      return true;
    }
  }
  return false;
}

// Copies `from` (a path under /persistent-storage of the source) to `to` (one under the new
// sandbox's), inside the Docker engine: a short-lived container of the source's image mounts
// the source's volume read-only and the new one's writable, and runs cp as the sandbox user
// without capabilities or network. Nothing passes through this process, so a fork of gigabytes
// needs no memory here, and the copy runs at the engine host's disk speed.
core::Status copy_between_volumes(DockerClient& docker, const ContainerInfo& source,
                                  const std::string& from_volume, const std::string& from,
                                  const std::string& to_volume, const std::string& to,
                                  const std::string& new_id) {
  const std::string root(kPersistentStoragePath);
  auto inside = [&](const std::string& path, const std::string& mount) {
    return mount + path.substr(root.size());
  };
  // A copier left by a fork cut short (this process died) goes first.
  ContainerListOptions lo;
  lo.filters["label"] = {fmt::format("{}={}", kCopierLabel, new_id)};
  if (auto left = docker.list_containers(lo); left.ok()) {
    for (const auto& c : *left) (void)docker.remove_container(c.id, {.force = true});
  }
  ContainerSpec spec;
  spec.name = "codeact_fork-" + new_id;
  spec.image = source.image;
  spec.entrypoint = std::vector<std::string>{};
  spec.cmd = {"cp",
              "-R",
              "-P",
              "--preserve=mode,timestamps,links",
              "--",
              inside(from, "/from"),
              inside(to, "/to")};
  spec.user = fmt::format("{}:{}", kSandboxUid, kSandboxGid);
  spec.labels = {{std::string(kCopierLabel), new_id}};
  spec.volumes = {{from_volume, "/from", true, true}, {to_volume, "/to", false, true}};
  spec.read_only_rootfs = true;
  spec.cap_drop = {"ALL"};
  spec.security_opt = {"no-new-privileges"};
  spec.network_mode = "none";
  spec.pids_limit = 16;
  spec.memory_bytes = 256LL << 20;
  spec.extra_host_config = Json{
      {"LogConfig", {{"Type", "json-file"}, {"Config", {{"max-size", "1m"}, {"max-file", "1"}}}}}};
  CODEACT_TRY(std::string copier, docker.create_container(spec));
  auto waited = [&]() -> core::Result<WaitResult> {
    CODEACT_TRY_STATUS(docker.start_container(copier));
    return docker.wait_container(copier, WaitCondition::kNotRunning, kStateTimeout);
  }();
  std::string errors;
  if (waited.ok() && waited->status_code != 0) {
    if (auto out = docker.logs(copier); out.ok()) errors = core::trim(out->stderr_text);
  }
  (void)docker.remove_container(copier, {.force = true});
  if (!waited.ok()) return waited.error().with_context("copying the checkpoint");
  if (waited->status_code != 0) {
    return core::internal_error(fmt::format("copying the checkpoint failed (cp exited with {}): {}",
                                            waited->status_code,
                                            errors.empty() ? "no message" : errors));
  }
  return core::ok_status();
}

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
  auto release = [&] { (void)kernel_call(id, "checkpoints.release", Json{{"name", name}}, 60s); };
  const std::string path = core::json_string(exported, "path");
  // path is <storage>/<id>/state/exports/<name>: the new workspace is <storage>/<new_id>.
  const std::string suffix = fmt::format("/{}/state/exports/{}", id, name);
  if (!path.ends_with(suffix) || !path.starts_with(std::string(kPersistentStoragePath) + "/")) {
    release();
    return core::Error(core::Code::kInternal,
                       fmt::format("sandbox \"{}\" exported its checkpoint to an unexpected "
                                   "place: {}",
                                   id, path));
  }
  const std::string workspace = path.substr(0, path.size() - suffix.size()) + "/" + new_id;
  auto source = docker().inspect_container(container_name(id));
  if (!source.ok()) {
    release();
    return source.error().with_context(fmt::format("forking sandbox \"{}\"", id));
  }
  // Checkpoints need persistence, so a source without a volume exported nothing above; this is
  // for a container changed by hand.
  if (!has_volume(*source)) {
    release();
    return core::failed_precondition(fmt::format(
        "sandbox \"{}\" has no volume at {}, so nothing to fork", id, kPersistentStoragePath));
  }

  options.id = new_id;
  options.python_packages.clear();  // the installed ones come with the export
  auto started = start(options);
  if (!started.ok()) {
    release();
    return started.error().with_context(
        fmt::format("forking sandbox \"{}\" into \"{}\"", id, new_id));
  }
  auto imported = [&]() -> Result<Json> {
    core::Status copied = copy_between_volumes(docker(), *source, volume_name(id), path,
                                               volume_name(new_id), workspace + "/" + name, new_id);
    release();
    CODEACT_TRY_STATUS(copied);
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
  CODEACT_TRY(SandboxInfo child, info(new_id));
  return fork_result(std::move(child), id, at, *imported, strings_of(exported, "files_left"));
}

}  // namespace codeact::sandbox
