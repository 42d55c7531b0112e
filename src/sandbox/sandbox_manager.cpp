#include "codeact/sandbox/sandbox_manager.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <thread>

#include "codeact/core/base64.hpp"
#include "codeact/core/config.hpp"
#include "codeact/core/log.hpp"
#include "codeact/core/sha256.hpp"
#include "codeact/core/strings.hpp"
#include "codeact/sandbox/image_builder.hpp"
#include "codeact/sandbox/kernel_channel.hpp"
#include "codeact/sandbox/shared_storage.hpp"
#include "codeact/sandbox/tar_archive.hpp"
#include "kernel_reply_internal.hpp"
#include "sandbox_disk_internal.hpp"

namespace codeact::sandbox {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using core::Result;
using core::Status;

// Containers made by this version: host-owned kernel directory, root start-up that drops to the
// sandbox user, an authenticated kernel. Older containers are recreated on their next start.
constexpr std::string_view kLayoutLabel = "io.codeact.layout";
constexpr std::string_view kLayout = "2";
constexpr std::string_view kDiskLabel = "io.codeact.disk";
// The host (SandboxManagerOptions::host_id) whose worker made the container.
constexpr std::string_view kHostLabel = "io.codeact.host";
constexpr std::string_view kDiskImageLabel = "io.codeact.disk-image";
// On a volume bound to the shared storage: the CODEACT_SHARED_DIR it was made under.
constexpr std::string_view kSharedDirLabel = "io.codeact.shared-dir";
// On a container of a sandbox on shared storage: its placement's ownership epoch.
constexpr std::string_view kEpochLabel = "io.codeact.epoch";
// Where the container sees its sandbox's placements (shared_owner_dir, read-only).
constexpr std::string_view kOwnerDirInContainer = "/run/codeact-owner";
constexpr std::string_view kTokenEnv = "CODEACT_KERNEL_TOKEN=";
// How long a running container's kernel may have no listening socket before it counts as wedged
// (alive but not accepting) and is restarted. A starting kernel binds within a second.
constexpr auto kWedgedAfter = 5s;
// The kernel's exit status when it lost its listening socket (EX_TEMPFAIL).
constexpr int64_t kExitLostSocket = 75;

std::string random_id() {
  std::random_device rd;
  return fmt::format("sbx-{:08x}", rd());
}

std::string random_token() {
  unsigned char raw[32];
  if (::getrandom(raw, sizeof raw, 0) != static_cast<ssize_t>(sizeof raw)) {
    std::random_device rd;
    for (auto& b : raw) b = static_cast<unsigned char>(rd());
  }
  std::string out;
  for (unsigned char b : raw) out += fmt::format("{:02x}", b);
  return out;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string part =
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string label_or(const Labels& labels, std::string_view key, std::string fallback = "") {
  auto it = labels.find(std::string(key));
  return it == labels.end() ? fallback : it->second;
}

// A container's ownership epoch (kEpochLabel), 0 when it has none.
int64_t label_epoch(const ContainerInfo& c) {
  const std::string v = label_or(c.labels, kEpochLabel);
  if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos)
    return 0;
  return std::stoll(v);
}

core::Error no_network_error(const std::string& id, const std::vector<std::string>& packages) {
  return core::failed_precondition(fmt::format(
      "cannot install {}: sandbox \"{}\" has no network access, so pip cannot download packages; "
      "recreate it with network (`codeact sandbox rm {}` then `codeact sandbox start --id {} "
      "--network`; "
      "its state is kept on the volume)",
      core::join(packages, ", "), id, id, id));
}

// "name (reason), name (reason)" of the kernel's {name, reason} list.
std::string names_with_reasons(const std::vector<Json>& entries) {
  std::string out;
  for (const auto& e : entries) {
    out += (out.empty() ? "" : ", ") + core::json_string(e, "name");
    std::string reason = core::json_string(e, "reason");
    if (!reason.empty()) out += " (" + reason + ")";
  }
  return out;
}

// What a restarted kernel said about its restore, as a clause for a notice.
std::string restore_clause(const Json& hello) {
  std::string out = fmt::format("its state was restored from the snapshot of cell {}",
                                core::json_int(hello, "cell"));
  auto lost = json_list(hello.value("lost", Json::array()));
  if (lost.empty()) lost = json_list(hello.value("restore_errors", Json::array()));
  if (!lost.empty()) out += "; not restored: " + names_with_reasons(lost);
  return out;
}

// Why a container stopped, from its state (exit status, OOM).
std::string exit_reason(const ContainerState& s) {
  if (s.oom_killed)
    return "the sandbox ran out of memory (its limit was reached) and its kernel was killed";
  if (s.exit_code == kExitLostSocket) {
    return "the kernel lost its connection socket (a cell closed the kernel's file descriptors) "
           "and exited";
  }
  if (s.exit_code == 137) return "the kernel was killed (SIGKILL)";
  if (s.exit_code > 128 && s.exit_code < 160) {
    return fmt::format("the kernel was killed by signal {}", s.exit_code - 128);
  }
  return fmt::format("the kernel exited with status {}", s.exit_code);
}

// The local driver's options for a volume on the loop device `device`: the sandbox's file system
// is mounted (on the host, then into the container) without set-uid files or device nodes.
std::map<std::string, std::string> disk_volume_options(const std::string& device) {
  return {{"type", "ext4"}, {"device", device}, {"o", "nosuid,nodev"}};
}

// A sandbox's disk is fixed when it is created: `asked` (--disk, "" = not asked) must match the
// limit it has (`has`, "" = none).
Status check_disk_unchanged(const std::string& id, const std::string& has,
                            const std::string& asked) {
  if (asked.empty() || asked == (has.empty() ? "none" : has)) return core::ok_status();
  return core::failed_precondition(fmt::format(
      "sandbox \"{}\" has {}; a sandbox's disk is fixed when it is created (remove it with "
      "`codeact sandbox rm {} --volume` to start over with --disk {})",
      id, has.empty() ? "no disk limit" : "a disk of " + has, id, asked));
}

// Whether starting a container failed because the engine's runtime still holds a task for it
// ("task <id>: already exists"), which Docker reports as a conflict (409) or, seen in the chaos
// suite after the engine was killed during a start, as an internal error (500).
bool holds_stale_task(const core::Error& e) {
  const std::string& m = e.message();
  return e.code() == core::Code::kAlreadyExists ||
         (e.code() == core::Code::kInternal && m.find("task ") != std::string::npos &&
          m.find("already exists") != std::string::npos);
}

bool mentions_full_disk(const std::string& text) {
  return text.find("No space left on device") != std::string::npos ||
         text.find("[Errno 28]") != std::string::npos;
}

}  // namespace

// ---- manager ------------------------------------------------------------------------------

// Everything behind SandboxManager's public methods (which forward here).
class SandboxManager::Impl {
 public:
  Impl(std::shared_ptr<DockerClient> docker, SandboxManagerOptions options);

  Result<SandboxInfo> start(const SandboxOptions& options);
  Status stop(const std::string& id);
  Result<SandboxInfo> restart(const std::string& id);
  Status remove(const std::string& id, bool volume);
  Result<SandboxInfo> info(const std::string& id);
  Result<std::vector<SandboxInfo>> list();
  Result<std::vector<std::string>> cleanup(bool volumes);
  Result<std::vector<std::string>> reap_moved();
  Result<ExecuteResult> execute(const std::string& id, const ExecuteRequest& request);
  Result<BashResult> bash(const std::string& id, const std::string& script, double timeout_seconds,
                          const std::string& execution_id);
  Result<Json> variables(const std::string& id);
  Result<Json> variable(const std::string& id, const std::string& name);
  Result<Json> clear(const std::string& id, const std::string& execution_id);
  Result<std::vector<FileEntry>> list_files(const std::string& id, const std::string& path);
  Result<std::string> read_file(const std::string& id, const std::string& path);
  Status write_file(const std::string& id, const std::string& path, std::string_view data,
                    const std::string& execution_id);
  Result<InstallResult> install(const std::string& id, const std::vector<std::string>& packages,
                                bool system, const std::string& execution_id);
  Status register_functions(const std::string& id, const Json& functions);
  Status define(const std::string& id, const std::string& source);
  Result<Json> kernel_call(const std::string& id, const std::string& op, Json fields,
                           std::chrono::milliseconds timeout);
  Result<std::vector<VolumeInfo>> list_volumes();
  Status remove_volume(const std::string& id);
  // Removes the sandbox's state on the shared storage: under CODEACT_SHARED_DIR and under
  // `volume_shared_dir` (its volume's label; "" = none). True when there was some.
  Result<bool> remove_shared_state(const std::string& id, const std::string& volume_shared_dir);
  DockerClient& docker() { return *docker_; }
  std::string socket_path(const std::string& id) const { return kernel_dir(id) + "/kernel.sock"; }
  VolumeSpec volume_spec(const std::string& id) const;

  Result<SandboxOptions> options_of(const std::string& id) {
    auto c = docker_->inspect_container(container_name(id));
    if (!c.ok()) return c.error().with_context(fmt::format("sandbox \"{}\"", id));
    return options_from_labels(id, *c);
  }

 private:
  // Host paths of a sandbox: <data>/sandboxes/<id>/{kernel/ (bind-mounted at /run/codeact, not
  // writable by the sandbox), disk.ext4}.
  std::string sandbox_dir(const std::string& id) const {
    return options_.data_dir + "/sandboxes/" + id;
  }
  std::string kernel_dir(const std::string& id) const { return sandbox_dir(id) + "/kernel"; }
  std::string disk_image(const std::string& id) const { return sandbox_dir(id) + "/disk.ext4"; }
  // Before version 2 the kernel socket lived in <data>/run/<id>, writable by the sandbox.
  std::string legacy_run_dir(const std::string& id) const {
    return options_.data_dir + "/run/" + id;
  }

  Result<std::string> ensure_image(const SandboxOptions& options);
  Result<std::string> ensure_system_image(const std::string& base,
                                          const std::vector<std::string>& packages);
  // `epoch`: the placement's ownership epoch on shared storage (0 = none).
  Result<ContainerSpec> container_spec(const SandboxOptions& options, const std::string& image,
                                       const std::string& token, const std::string& disk,
                                       int64_t epoch = 0);
  // The options a container was created with, read back from its labels.
  SandboxOptions options_from_labels(const std::string& id, const ContainerInfo& c) const;
  // A fresh kernel directory, owned by the host user (the sandbox user cannot write it).
  Status prepare_kernel_dir(const std::string& id);
  // Creates the sandbox's volume if missing (with a disk limit when asked and possible) and
  // returns its limit ("" = none); `notice` says when a default limit could not be applied.
  Result<std::string> ensure_volume(const SandboxOptions& options, std::string* notice);
  // Makes sure the volume's loop device is attached to THIS sandbox's image (after a reboot the
  // number may be free, or another sandbox's); recreates the volume's definition when the device
  // changed, which needs the container gone: returns true when it removed the container.
  Result<bool> ensure_disk_attached(const std::string& id);
  // Creates and starts the container (prepared kernel directory, new token).
  Status create_container(const SandboxOptions& options, const std::string& image,
                          const std::string& disk, int64_t epoch);
  // On shared storage: the placement a new container of sandbox `id` takes on this host (the
  // next epoch); 0 without shared storage.
  Result<int64_t> place_here(const std::string& id);
  // The newest placement of a container's sandbox when it is newer than the container's own
  // (the sandbox moved to another host); nullopt otherwise or without shared storage.
  std::optional<Placement> moved_away(const std::string& id, const ContainerInfo& c);
  // A container whose sandbox moved to another host (or whose kernel exited kExitFenced): it is
  // removed, never started again here. FailedPrecondition saying where the sandbox is.
  core::Error fenced(const std::string& id, const ContainerInfo& c);
  // Starts a stopped container after checking its disk; recreates it when needed.
  Status start_container(const std::string& id);
  // Restarts a running container (`grace` for the kernel to stop by itself).
  Status restart_running(const std::string& id, std::chrono::seconds grace);
  // Recreates the container from its labels (state is on the volume).
  Status recreate_container(const std::string& id, const ContainerInfo& c);
  Result<Json> wait_ready(const std::string& id);
  // Makes sure the container runs and its kernel answers; `notice` says what was done.
  Result<Json> ensure_running(const std::string& id, std::string* notice);
  // Stops and starts the container (the kernel restores its snapshot); `why` goes first in the
  // notice. Returns the new kernel's hello.
  Result<Json> restart_kernel(const std::string& id, const std::string& why, std::string* notice);
  // The recorded reply of `execution_id` when the (restarted) kernel says that execute committed
  // (a ResultLost error reply when it committed but its record is unreadable); nullopt when it
  // says it did not, when there is no id, or when the kernel is too old to say. Unavailable
  // when it could not be asked (the kernel or its engine died again): the cell may have
  // committed, so it must not be reported lost; a retry with the same id finds out.
  Result<std::optional<Json>> committed_reply(const std::string& id,
                                              const std::string& execution_id);
  Result<KernelAuth> auth_for(const std::string& id);
  void forget_auth(const std::string& id);
  Result<std::unique_ptr<KernelChannel>> open_channel(const std::string& id, std::string* notice);
  // One kernel call on a fresh channel. When the peer fails authentication (something else
  // answered at the sandbox's socket; nothing of ours ran there) the sandbox is restarted and the
  // call made once more.
  Result<Json> authenticated_call(const std::string& id, const std::string& op, const Json& fields,
                                  const KernelCallOptions& options, std::string* notice);
  Result<Json> call_with_recovery(const std::string& id, const std::string& op, Json fields,
                                  std::chrono::milliseconds timeout, std::string* notice);
  std::string disk_hint(const std::string& id);
  std::optional<std::string> env(const std::string& name) const;
  std::mutex& lock_for(const std::string& id);

  std::shared_ptr<DockerClient> docker_;
  SandboxManagerOptions options_;
  std::mutex locks_mu_;
  std::map<std::string, std::unique_ptr<std::mutex>> locks_;  // GUARDED_BY(locks_mu_)
  std::mutex auth_mu_;
  std::map<std::string, KernelAuth>
      auth_;  // GUARDED_BY(auth_mu_): sandbox id -> its kernel's token
};

SandboxManager::Impl::Impl(std::shared_ptr<DockerClient> docker, SandboxManagerOptions options)
    : docker_(std::move(docker)), options_(std::move(options)) {
  if (options_.data_dir.empty()) options_.data_dir = core::data_dir();
  if (options_.default_disk.empty()) options_.default_disk = "10g";
}

std::optional<std::string> SandboxManager::Impl::env(const std::string& name) const {
  return options_.env ? options_.env(name) : core::getenv_string(name);
}

std::mutex& SandboxManager::Impl::lock_for(const std::string& id) {
  std::lock_guard lock(locks_mu_);
  auto& m = locks_[id];
  if (!m) m = std::make_unique<std::mutex>();
  return *m;
}

Status SandboxManager::validate_id(const std::string& id) {
  static const std::regex re("^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$");
  if (!std::regex_match(id, re)) {
    return core::invalid_argument(
        fmt::format("\"{}\" is not a valid sandbox id: use 1-63 letters, digits, '_', '.' or '-', "
                    "starting with a letter or digit",
                    id));
  }
  return core::ok_status();
}

Status SandboxManager::validate_python_package(const std::string& name) {
  static const std::regex re(
      R"(^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?((===|==|!=|<=|>=|~=|<|>)[A-Za-z0-9.*+!_-]+(,(===|==|!=|<=|>=|~=|<|>)[A-Za-z0-9.*+!_-]+)*)?$)");
  if (!std::regex_match(name, re)) {
    return core::invalid_argument(
        fmt::format("\"{}\" is not a Python package name (expected e.g. requests, pandas==2.2.0, "
                    "uvicorn[standard]>=0.30)",
                    name));
  }
  return core::ok_status();
}

Status SandboxManager::validate_system_package(const std::string& name) {
  static const std::regex re(R"(^[a-z0-9][a-z0-9+.-]*(=[A-Za-z0-9.+:~-]+)?$)");
  if (!std::regex_match(name, re)) {
    return core::invalid_argument(fmt::format(
        "\"{}\" is not a Debian package name (expected e.g. graphviz, libgomp1)", name));
  }
  return core::ok_status();
}

Status SandboxManager::validate_disk(const std::string& disk) {
  if (disk.empty() || disk == "none") return core::ok_status();
  auto bytes = parse_size(disk);
  if (!bytes.ok())
    return core::invalid_argument(
        fmt::format("--disk {}: {} (or \"none\" for no limit)", disk, bytes.error().message()));
  if (*bytes < (16LL << 20)) {
    return core::invalid_argument(
        fmt::format("--disk {} is too small: a sandbox needs at least 16m", disk));
  }
  return core::ok_status();
}

Result<SandboxManagerOptions> manager_options_from_config(const Json& app_config,
                                                          SandboxManagerOptions base) {
  if (!app_config.is_object() || !app_config.contains("sandbox")) return base;
  const Json& section = app_config["sandbox"];
  if (section.is_null()) return base;
  if (!section.is_object())
    return core::invalid_argument("app_conf.yml: `sandbox` must be a mapping (e.g. `disk: 10g`)");
  if (section.contains("disk") && !section["disk"].is_null()) {
    const Json& disk = section["disk"];
    std::string text = disk.is_string()   ? disk.get<std::string>()
                       : disk.is_number() ? disk.dump()
                                          : "";
    if (text.empty() || !SandboxManager::validate_disk(text).ok()) {
      return core::invalid_argument(fmt::format(
          "app_conf.yml: sandbox.disk is {}; write a size such as 10g, or none", disk.dump()));
    }
    base.default_disk = text;
  }
  if (section.contains("checkpoints") && !section["checkpoints"].is_null()) {
    const Json& v = section["checkpoints"];
    std::string text = v.is_string() ? core::trim(v.get<std::string>()) : "";
    int64_t n = 0;
    bool ok = text == "all";
    if (!ok && text.rfind("last ", 0) == 0) {
      try {
        size_t used = 0;
        n = std::stoll(text.substr(5), &used);
        ok = used == text.size() - 5 && n >= 1;
      } catch (const std::exception&) {
        ok = false;
      }
    }
    if (!ok) {
      return core::invalid_argument(fmt::format(
          "app_conf.yml: sandbox.checkpoints is {}; write all, or last N (N >= 1)", v.dump()));
    }
    base.checkpoints_kept = n;
  }
  if (section.contains("checkpoint_budget") && !section["checkpoint_budget"].is_null()) {
    const Json& v = section["checkpoint_budget"];
    auto bytes = v.is_string() ? parse_size(v.get<std::string>())
                 : v.is_number_integer() && v.get<int64_t>() >= 0
                     ? Result<int64_t>(v.get<int64_t>())
                     : Result<int64_t>(core::invalid_argument("not a size"));
    if (!bytes.ok()) {
      return core::invalid_argument(fmt::format(
          "app_conf.yml: sandbox.checkpoint_budget is {}; write a size such as 1g or 500m",
          v.dump()));
    }
    base.checkpoint_budget = *bytes;
  }
  return base;
}

VolumeSpec SandboxManager::Impl::volume_spec(const std::string& id) const {
  VolumeSpec spec;
  spec.name = volume_name(id);
  spec.labels = {{std::string(kSandboxLabel), "1"}, {std::string(kSandboxIdLabel), id}};
  std::string driver = env("VOLUME_DRIVER").value_or("local");
  auto shared = shared_dir_from([this](const std::string& k) { return env(k); });
  if (shared.ok() && *shared) {
    // ensure_volume refuses CODEACT_SHARED_DIR beside another VOLUME_DRIVER, and a bad value.
    spec.driver = "local";
    spec.driver_opts = shared_volume_options(**shared, id);
    spec.labels[std::string(kSharedDirLabel)] = **shared;
  } else if (driver == "nfs") {
    // Docker's local driver mounts NFS; every host mounting the same export sees the same
    // /persistent-storage/{id} tree, which is why state lives under the id.
    spec.driver = "local";
    std::string server = env("NFS_SERVER").value_or("");
    std::string path = env("NFS_PATH").value_or("/");
    spec.driver_opts = {{"type", "nfs"},
                        {"o", fmt::format("addr={},rw,nfsvers=4", server)},
                        {"device", ":" + path}};
  } else if (!driver.empty()) {
    spec.driver = driver;
  }
  return spec;
}

Result<std::string> SandboxManager::Impl::ensure_image(const SandboxOptions& options) {
  std::string base = options.image;
  if (base.empty()) {
    ImageBuilderOptions bo;
    bo.progress =
        options_.progress ? ProgressFn(options_.progress) : ProgressFn([](std::string_view) {});
    ImageBuilder builder(docker_, bo);
    CODEACT_TRY(base, builder.ensure_image());
  } else {
    CODEACT_TRY_STATUS(docker_->inspect_image(base));
  }
  if (options.system_packages.empty()) return base;
  return ensure_system_image(base, options.system_packages);
}

Result<std::string> SandboxManager::Impl::ensure_system_image(
    const std::string& base, const std::vector<std::string>& packages) {
  for (const auto& p : packages) CODEACT_TRY_STATUS(validate_system_package(p));
  std::vector<std::string> sorted = packages;
  std::sort(sorted.begin(), sorted.end());
  auto [repo, tag] = split_image_reference(base);
  std::string derived_tag = fmt::format("{}-sys-{}", tag.empty() ? "latest" : tag,
                                        core::sha256_hex(core::join(sorted, " ")).substr(0, 12));
  std::string derived = fmt::format("{}:{}", repo, derived_tag);
  if (docker_->inspect_image(derived).ok()) return derived;
  // The derived image keeps the base's user; the sandbox manager sets the container's user.
  std::string dockerfile = fmt::format(
      "FROM {}\nUSER root\n"
      "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
      "--no-install-recommends {} "
      "&& rm -rf /var/lib/apt/lists/*\n"
      "USER {}:{}\nLABEL io.codeact.system-packages=\"{}\"\n",
      base, core::join(sorted, " "), kSandboxUid, kSandboxGid, core::join(sorted, ","));
  TarWriter tar;
  CODEACT_TRY_STATUS(tar.add_file("Dockerfile", dockerfile));
  BuildImageOptions bo;
  bo.tags = {derived};
  bo.context_tar = tar.finish();
  bo.progress =
      options_.progress ? ProgressFn(options_.progress) : ProgressFn([](std::string_view) {});
  auto built = docker_->build_image(bo);
  if (!built.ok()) {
    return built.error().with_context(fmt::format(
        "installing system packages {} (apt-get needs the Debian mirror to be reachable)",
        core::join(sorted, ", ")));
  }
  return derived;
}

Result<ContainerSpec> SandboxManager::Impl::container_spec(const SandboxOptions& options,
                                                           const std::string& image,
                                                           const std::string& token,
                                                           const std::string& disk, int64_t epoch) {
  CODEACT_TRY(int64_t memory, parse_size(options.memory));
  CODEACT_TRY(int64_t tmp_bytes, parse_size(options.tmp_size));
  if (options.cpus <= 0 || options.cpus > 256) {
    return core::invalid_argument(
        fmt::format("--cpus {} is out of range (0 < cpus <= 256)", options.cpus));
  }
  CODEACT_TRY_STATUS(validate_disk(options.disk));
  bool persistence = options.persistence.value_or([&] {
    auto v = env("ENABLE_PERSISTENCE");
    return !(v && (*v == "false" || *v == "0" || *v == "False" || *v == "no"));
  }());
  const std::string& id = options.id;
  ContainerSpec spec;
  spec.name = container_name(id);
  spec.image = image;
  // The kernel starts as root only to create its socket in the host-owned /run/codeact, then
  // drops to the sandbox user for good (setuid: every capability is gone) before any user code
  // runs; no root process is left in the container.
  spec.user = "0:0";
  spec.hostname = "sandbox";
  spec.env = {{"CODEACT_SANDBOX_ID", id},
              {"CODEACT_PERSISTENCE", persistence ? "1" : "0"},
              {"CODEACT_DURABILITY", env("CODEACT_DURABILITY").value_or("fsync")},
              {"CODEACT_SOCKET", std::string(kKernelSocketDir) + "/kernel.sock"},
              {"CODEACT_KERNEL_TOKEN", token},
              {"CODEACT_DISK_LIMIT", disk},
              {"CODEACT_CHECKPOINTS", options_.checkpoints_kept > 0
                                          ? std::to_string(options_.checkpoints_kept)
                                          : std::string("all")},
              {"CODEACT_CHECKPOINT_BUDGET", std::to_string(options_.checkpoint_budget)}};
  spec.labels = {{std::string(kSandboxLabel), "1"},
                 {std::string(kSandboxIdLabel), id},
                 {std::string(kLayoutLabel), std::string(kLayout)},
                 {std::string(kDiskLabel), disk},
                 {"io.codeact.network", options.network ? "1" : "0"},
                 {"io.codeact.persistence", persistence ? "1" : "0"},
                 {"io.codeact.python-packages", core::join(options.python_packages, ",")},
                 {"io.codeact.system-packages", core::join(options.system_packages, ",")},
                 {"io.codeact.memory", options.memory},
                 {"io.codeact.cpus", fmt::format("{}", options.cpus)}};
  if (!options_.host_id.empty()) spec.labels[std::string(kHostLabel)] = options_.host_id;
  if (epoch > 0) {
    CODEACT_TRY(std::optional<std::string> shared,
                shared_dir_from([this](const std::string& k) { return env(k); }));
    if (!shared) {
      return core::failed_precondition(fmt::format(
          "sandbox \"{}\" was placed on shared storage (epoch {}), and CODEACT_SHARED_DIR is not "
          "set here",
          id, epoch));
    }
    spec.env["CODEACT_EPOCH"] = std::to_string(epoch);
    spec.env["CODEACT_OWNER_DIR"] = std::string(kOwnerDirInContainer);
    spec.labels[std::string(kEpochLabel)] = std::to_string(epoch);
    spec.labels[std::string(kSharedDirLabel)] = *shared;
    // Read-only: the sandbox cannot forge or remove a placement.
    spec.binds.push_back({shared_owner_dir(*shared, id), std::string(kOwnerDirInContainer), true});
  }
  spec.binds.push_back({kernel_dir(id), std::string(kKernelSocketDir), false});
  if (persistence) {
    spec.volumes.push_back({volume_name(id), std::string(kPersistentStoragePath), false, false});
  } else {
    spec.tmpfs[std::string(kPersistentStoragePath)] = fmt::format(
        "rw,nosuid,nodev,size={},uid={},gid={},mode=0755", tmp_bytes, kSandboxUid, kSandboxGid);
  }
  spec.tmpfs["/tmp"] = fmt::format("rw,nosuid,nodev,size={},mode=1777", tmp_bytes);
  spec.read_only_rootfs = true;
  spec.cap_drop = {"ALL"};
  // For the drop to the sandbox user, then gone (SETPCAP: to empty the bounding set first).
  spec.cap_add = {"SETUID", "SETGID", "SETPCAP"};
  spec.security_opt = {"no-new-privileges"};
  spec.pids_limit = options.pids_limit;
  spec.memory_bytes = memory;
  spec.memory_swap_bytes = memory;  // no swap beyond the memory limit
  spec.nano_cpus = static_cast<int64_t>(options.cpus * 1e9);
  spec.network_mode = options.network ? "bridge" : "none";
  spec.init = false;  // the kernel's own init is pid 1 (and drops privileges like the kernel)
  spec.stop_timeout_seconds = 5;
  // What the kernel writes outside cells (its log, stray output of background processes) lands
  // in Docker's log file on the host: capped, so it cannot fill the host's disk.
  // MaskedPaths replaces Docker's list, so it is repeated here (moby's oci/defaults.go) before
  // what codeact adds: the host's block devices, where every loop device names its backing file
  // (<data>/sandboxes/<id>/disk.ext4: the ids of every other sandbox on the host).
  spec.extra_host_config = Json{
      {"LogConfig", {{"Type", "json-file"}, {"Config", {{"max-size", "1m"}, {"max-file", "1"}}}}},
      {"MaskedPaths",
       {"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
        "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
        "/sys/devices/virtual/powercap", "/sys/block", "/sys/class/block", "/sys/dev/block",
        "/sys/devices/virtual/block"}}};
  return spec;
}

SandboxOptions SandboxManager::Impl::options_from_labels(const std::string& id,
                                                         const ContainerInfo& c) const {
  SandboxOptions o;
  o.id = id;
  o.network = label_or(c.labels, "io.codeact.network") == "1";
  o.persistence = label_or(c.labels, "io.codeact.persistence", "1") == "1";
  o.python_packages = split_list(label_or(c.labels, "io.codeact.python-packages"));
  o.system_packages = split_list(label_or(c.labels, "io.codeact.system-packages"));
  o.memory = label_or(c.labels, "io.codeact.memory", "512m");
  try {
    o.cpus = std::stod(label_or(c.labels, "io.codeact.cpus", "1"));
  } catch (const std::exception&) {
    o.cpus = 1;
  }
  std::string disk = label_or(c.labels, kDiskLabel);
  o.disk = disk.empty() ? "none" : disk;
  return o;
}

Status SandboxManager::Impl::prepare_kernel_dir(const std::string& id) {
  std::error_code ec;
  fs::create_directories(sandbox_dir(id), ec);
  if (ec)
    return core::internal_error(fmt::format("cannot create {}: {}", sandbox_dir(id), ec.message()));
  ::chmod(sandbox_dir(id).c_str(), 0700);
  // Whatever an earlier container left there goes (remove_all never follows links).
  fs::remove_all(kernel_dir(id), ec);
  if (::mkdir(kernel_dir(id).c_str(), 0755) != 0 || ::chmod(kernel_dir(id).c_str(), 0755) != 0) {
    return core::internal_error(
        fmt::format("cannot create {}: {}", kernel_dir(id), std::strerror(errno)));
  }
  fs::remove_all(legacy_run_dir(id), ec);
  return core::ok_status();
}

Result<std::string> SandboxManager::Impl::ensure_volume(const SandboxOptions& options,
                                                        std::string* notice) {
  const std::string& id = options.id;
  // On shared storage the sandbox's directory is made (or checked) on every start: the volume
  // only binds it, and another host may have removed it.
  CODEACT_TRY(std::optional<std::string> shared,
              shared_dir_from([this](const std::string& k) { return env(k); }));
  if (shared) {
    if (auto driver = env("VOLUME_DRIVER"); driver && !driver->empty() && *driver != "local") {
      return core::invalid_argument(fmt::format(
          "CODEACT_SHARED_DIR and VOLUME_DRIVER={} both name the sandboxes' storage: set one",
          *driver));
    }
    CODEACT_TRY_STATUS(prepare_shared_sandbox_dir(*shared, id, kSandboxUid, kSandboxGid));
  }
  auto existing = docker_->inspect_volume(volume_name(id));
  if (existing.ok() && shared && label_or(existing->labels, kSharedDirLabel) != *shared) {
    return core::failed_precondition(fmt::format(
        "sandbox \"{}\" has a volume ({}) that is not on the shared storage {} (made before "
        "CODEACT_SHARED_DIR was set, or under another directory), so its state is not where "
        "other hosts can reach it: remove it with `codeact sandbox rm {} --volume` (its state "
        "goes with it), or start it without CODEACT_SHARED_DIR",
        id, volume_name(id), *shared, id));
  }
  if (existing.ok()) {
    std::string disk = label_or(existing->labels, kDiskLabel);
    CODEACT_TRY_STATUS(check_disk_unchanged(id, disk, options.disk));
    return disk;
  }
  if (existing.error().code() != core::Code::kNotFound) return existing.error();

  VolumeSpec spec = volume_spec(id);
  const bool explicit_limit = !options.disk.empty();
  const std::string want = explicit_limit ? options.disk : options_.default_disk;
  const bool local = spec.driver_opts.empty() && spec.driver == "local";
  if (want == "none") {
    CODEACT_TRY_STATUS(docker_->create_volume(spec));
    return std::string();
  }
  if (!local) {
    if (explicit_limit) {
      return core::invalid_argument(fmt::format(
          "--disk {}: disk limits need a local volume, and {}; that storage's own quota applies "
          "(use --disk none)",
          want,
          shared
              ? "CODEACT_SHARED_DIR puts this one on the shared storage"
              : "VOLUME_DRIVER makes this one " +
                    (spec.driver_opts.count("type") ? spec.driver_opts.at("type") : spec.driver)));
    }
    CODEACT_TRY_STATUS(docker_->create_volume(spec));
    return std::string();
  }
  CODEACT_TRY(int64_t bytes, parse_size(want));
  std::error_code ec;
  fs::create_directories(sandbox_dir(id), ec);
  ::chmod(sandbox_dir(id).c_str(), 0700);
  const std::string image = disk_image(id);
  if (!fs::exists(image, ec))
    CODEACT_TRY_STATUS(disk::create_image(image, bytes, kSandboxUid, kSandboxGid));
  auto device = disk::attach(image);
  if (!device.ok()) {
    if (explicit_limit || device.error().code() != core::Code::kPermissionDenied) {
      return device.error().with_context(
          fmt::format("sandbox \"{}\": setting up its {} disk", id, want));
    }
    fs::remove(image, ec);
    if (notice) *notice = "no disk limit: " + device.error().message();
    core::log().warn("sandbox \"{}\": {}", id, device.error().message());
    CODEACT_TRY_STATUS(docker_->create_volume(spec));
    return std::string();
  }
  spec.driver_opts = disk_volume_options(*device);
  spec.labels[std::string(kDiskLabel)] = want;
  spec.labels[std::string(kDiskImageLabel)] = image;
  CODEACT_TRY_STATUS(docker_->create_volume(spec));
  return want;
}

Result<bool> SandboxManager::Impl::ensure_disk_attached(const std::string& id) {
  auto vol = docker_->inspect_volume(volume_name(id));
  if (!vol.ok())
    return vol.error().code() == core::Code::kNotFound ? Result<bool>(false)
                                                       : Result<bool>(vol.error());
  const std::string image = label_or(vol->labels, kDiskImageLabel);
  if (image.empty()) return false;  // no disk limit
  const std::string recorded = vol->options.count("device") ? vol->options.at("device") : "";
  CODEACT_TRY(std::string device, disk::attach(image));
  if (device == recorded) return false;
  // The volume names a device that is now free or someone else's: redefine it (the data is in
  // the image, not in the volume's definition), which Docker allows only without containers.
  core::log().info("sandbox \"{}\": its disk is now {} (was {}); redefining volume {}", id, device,
                   recorded, volume_name(id));
  auto c = docker_->inspect_container(container_name(id));
  bool removed = false;
  if (c.ok()) {
    CODEACT_TRY_STATUS(docker_->remove_container(container_name(id), {.force = true}));
    removed = true;
  }
  CODEACT_TRY_STATUS(docker_->remove_volume(volume_name(id), true));
  VolumeSpec spec = volume_spec(id);
  spec.labels = vol->labels;
  spec.driver_opts = disk_volume_options(device);
  CODEACT_TRY_STATUS(docker_->create_volume(spec));
  return removed;
}

Status SandboxManager::Impl::create_container(const SandboxOptions& options,
                                              const std::string& image, const std::string& disk,
                                              int64_t epoch) {
  CODEACT_TRY_STATUS(prepare_kernel_dir(options.id));
  const std::string token = random_token();
  CODEACT_TRY(ContainerSpec spec, container_spec(options, image, token, disk, epoch));
  forget_auth(options.id);
  CODEACT_TRY_STATUS(docker_->create_container(spec));
  {
    std::lock_guard lock(auth_mu_);
    auth_[options.id] = KernelAuth{options.id, token};
  }
  return docker_->start_container(container_name(options.id));
}

Status SandboxManager::Impl::recreate_container(const std::string& id, const ContainerInfo& c) {
  SandboxOptions o = options_from_labels(id, c);
  std::string image = c.config_image;
  std::string disk = label_or(c.labels, kDiskLabel);
  CODEACT_TRY_STATUS(docker_->remove_container(container_name(id), {.force = true}));
  forget_auth(id);
  auto checked = ensure_disk_attached(id);
  if (!checked.ok()) return checked.error();
  if (docker_->inspect_image(image).ok() == false) {
    o.image = "";
    CODEACT_TRY(image, ensure_image(o));
  }
  return create_container(o, image, disk, label_epoch(c));
}

Result<int64_t> SandboxManager::Impl::place_here(const std::string& id) {
  CODEACT_TRY(std::optional<std::string> shared,
              shared_dir_from([this](const std::string& k) { return env(k); }));
  if (!shared) return int64_t{0};
  CODEACT_TRY(Placement placed,
              take_placement(*shared, id, options_.host_id.empty() ? "?" : options_.host_id));
  return placed.epoch;
}

core::Error SandboxManager::Impl::fenced(const std::string& id, const ContainerInfo& c) {
  std::optional<Placement> moved = moved_away(id, c);
  core::log().warn(
      "sandbox \"{}\": placed on host {} since this host's container was made; "
      "removing the container (its state stays on the shared storage)",
      id, moved ? moved->host : "?");
  (void)docker_->remove_container(c.id, {.force = true});  // that container, not a newer one
  forget_auth(id);
  return core::failed_precondition(fmt::format(
      "sandbox \"{}\" was placed on host {}{}, so this host no longer runs it (its container "
      "here was removed without committing anything; the state on the shared storage is the new "
      "owner's)",
      id, moved ? moved->host : "another host",
      moved ? fmt::format(" (ownership epoch {})", moved->epoch) : std::string()));
}

std::optional<Placement> SandboxManager::Impl::moved_away(const std::string& id,
                                                          const ContainerInfo& c) {
  const std::string root = label_or(c.labels, kSharedDirLabel);
  const int64_t mine = label_epoch(c);
  if (root.empty() || mine == 0) return std::nullopt;
  Placement newest = newest_placement(root, id);
  if (newest.epoch > mine) return newest;
  return std::nullopt;
}

Status SandboxManager::Impl::start_container(const std::string& id) {
  auto c = docker_->inspect_container(container_name(id));
  if (!c.ok()) return c.error();
  if (moved_away(id, *c)) return fenced(id, *c);
  if (label_or(c->labels, kLayoutLabel) != kLayout) {
    core::log().info(
        "sandbox \"{}\": recreating its container, made by an older codeact (state kept)", id);
    return recreate_container(id, *c);
  }
  CODEACT_TRY(bool removed, ensure_disk_attached(id));
  if (removed) {
    SandboxOptions o = options_from_labels(id, *c);
    return create_container(o, c->config_image, label_or(c->labels, kDiskLabel), label_epoch(*c));
  }
  ::unlink(socket_path(id).c_str());
  Status started = docker_->start_container(container_name(id));
  if (started.ok() || !holds_stale_task(started.error())) return started;
  // "task ...: already exists": the engine was killed while the container ran (or while it was
  // being started) and its runtime still holds the old task. The state is on the volume: a new
  // container resumes from it.
  core::log().warn("sandbox \"{}\": {}; recreating its container (state kept)", id,
                   started.error().message());
  return recreate_container(id, *c);
}

Status SandboxManager::Impl::restart_running(const std::string& id, std::chrono::seconds grace) {
  // The old socket goes first: until the new kernel binds, nothing is found there (unlink never
  // follows a link), never a stale or planted entry.
  ::unlink(socket_path(id).c_str());
  return docker_->restart_container(container_name(id), grace);
}

Result<KernelAuth> SandboxManager::Impl::auth_for(const std::string& id) {
  {
    std::lock_guard lock(auth_mu_);
    auto it = auth_.find(id);
    if (it != auth_.end()) return it->second;
  }
  auto c = docker_->inspect_container(container_name(id));
  if (!c.ok()) {
    if (c.error().code() == core::Code::kNotFound) {
      return core::not_found(
          fmt::format("no sandbox \"{}\" (start it with `codeact sandbox start --id {}`)", id, id));
    }
    return c.error();
  }
  std::string token;
  const Json env_list = c->raw.value("Config", Json::object()).value("Env", Json::array());
  for (const auto& e : env_list) {
    if (!e.is_string()) continue;
    const std::string& s = e.get_ref<const std::string&>();
    if (s.rfind(kTokenEnv, 0) == 0) token = s.substr(kTokenEnv.size());
  }
  if (token.empty()) {
    return core::failed_precondition(fmt::format(
        "sandbox \"{}\" was created by an older codeact (its kernel cannot prove who it is); it is "
        "recreated, with its state, on its next start: `codeact sandbox restart {}`",
        id, id));
  }
  KernelAuth auth{id, token};
  std::lock_guard lock(auth_mu_);
  auth_[id] = auth;
  return auth;
}

void SandboxManager::Impl::forget_auth(const std::string& id) {
  std::lock_guard lock(auth_mu_);
  auth_.erase(id);
}

Result<Json> SandboxManager::Impl::wait_ready(const std::string& id) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + options_.ready_timeout;
  // Since when the socket has had no listener (steady_clock epoch = it has one).
  std::chrono::steady_clock::time_point unreachable_since{};
  bool restarted_wedged = false;
  while (true) {
    CODEACT_TRY(KernelAuth auth, auth_for(id));
    auto ch = KernelChannel::connect(socket_path(id), 250ms, auth);
    if (ch.ok()) {
      auto hello = (*ch)->call("hello", Json::object(), {.timeout = 10s});
      if (hello.ok()) return hello;
      if ((*ch)->auth_failed()) return hello.error();
    } else if (ch.error().code() == core::Code::kPermissionDenied) {
      return ch.error();
    }
    auto info = docker_->inspect_container(container_name(id));
    if (!info.ok()) return info.error();
    if (!info->state.running) {
      // (76 from a cell's own os._exit is not a fence: no newer placement exists then.)
      if (info->state.exit_code == kExitFenced && moved_away(id, *info)) return fenced(id, *info);
      auto logs = docker_->logs(container_name(id), {.tail = "20"});
      std::string tail = logs.ok() ? logs->stderr_text + logs->stdout_text : "";
      return core::unavailable(fmt::format("sandbox \"{}\": {} before answering{}{}", id,
                                           exit_reason(info->state),
                                           tail.empty() ? "" : "; its last output:\n", tail));
    }
    // Running, but nobody listens on the socket: a kernel still starting binds within a second;
    // one that stays unreachable is wedged (alive, not accepting) and is restarted once.
    auto state = KernelChannel::probe(socket_path(id));
    auto now = std::chrono::steady_clock::now();
    if (state == KernelChannel::SocketState::kListening) {
      unreachable_since = {};
    } else if (unreachable_since == std::chrono::steady_clock::time_point{}) {
      unreachable_since = now;
    } else if (now - unreachable_since > kWedgedAfter && !restarted_wedged) {
      core::log().warn(
          "sandbox \"{}\": its kernel runs but has not accepted connections for {} s; restarting "
          "it",
          id, std::chrono::duration_cast<std::chrono::seconds>(kWedgedAfter).count());
      restarted_wedged = true;
      unreachable_since = {};
      CODEACT_TRY_STATUS(restart_running(id, std::chrono::seconds(0)));
    }
    if (now >= deadline) {
      return core::deadline_exceeded(
          fmt::format("sandbox \"{}\": the kernel did not answer within {} s of starting", id,
                      options_.ready_timeout.count() / 1000));
    }
    std::this_thread::sleep_for(5ms);
  }
}

Result<SandboxInfo> SandboxManager::Impl::start(const SandboxOptions& in) {
  SandboxOptions options = in;
  if (options.id.empty()) options.id = random_id();
  CODEACT_TRY_STATUS(validate_id(options.id));
  for (const auto& p : options.python_packages) CODEACT_TRY_STATUS(validate_python_package(p));
  for (const auto& p : options.system_packages) CODEACT_TRY_STATUS(validate_system_package(p));
  // Bad limits are refused even when the sandbox exists and is only resumed.
  CODEACT_TRY_STATUS(container_spec(options, "validate-only", "", ""));
  const std::string& id = options.id;
  std::unique_lock lock(lock_for(id));

  CODEACT_TRY(std::string image, ensure_image(options));

  bool resumed = false;
  std::string notice;
  auto existing = docker_->inspect_container(container_name(id));
  if (existing.ok()) {
    if (label_or(existing->labels, kSandboxLabel) != "1") {
      return core::already_exists(fmt::format(
          "a container named {} exists but was not created by codeact; remove or rename it",
          container_name(id)));
    }
    std::optional<Placement> moved = moved_away(id, *existing);
    bool network_changed =
        label_or(existing->labels, "io.codeact.network") != (options.network ? "1" : "0");
    bool image_changed = existing->config_image != image;
    bool old_layout = label_or(existing->labels, kLayoutLabel) != kLayout;
    if (moved) {
      // Placed on another host since this container was made: starting it here places it here
      // again, in a new container with a new epoch, from its state on the shared storage.
      CODEACT_TRY_STATUS(docker_->remove_container(container_name(id), {.force = true}));
      forget_auth(id);
      notice = fmt::format(
          "the sandbox had been placed on host {} (epoch {}) since this host last ran it; it is "
          "placed here again, with its state on the shared storage",
          moved->host, moved->epoch);
    } else if (((network_changed || image_changed) &&
                (!in.system_packages.empty() || in.network)) ||
               old_layout) {
      // Asked for something the current container cannot give, or made by an older codeact:
      // recreate it; state is on the volume.
      CODEACT_TRY_STATUS(docker_->remove_container(container_name(id), {.force = true}));
      forget_auth(id);
      if (old_layout) {
        options.network =
            options.network || label_or(existing->labels, "io.codeact.network") == "1";
        notice = "its container was made by an older codeact and was recreated (state kept)";
      }
    } else {
      resumed = true;
      CODEACT_TRY_STATUS(check_disk_unchanged(id, label_or(existing->labels, kDiskLabel), in.disk));
      if (!existing->state.running) CODEACT_TRY_STATUS(start_container(id));
    }
  } else if (existing.error().code() != core::Code::kNotFound) {
    return existing.error();
  }

  if (!resumed) {
    std::string disk;
    bool persistence = true;
    {
      CODEACT_TRY(ContainerSpec probe, container_spec(options, image, "", ""));
      persistence = !probe.volumes.empty();
    }
    if (persistence) {
      std::string volume_notice;
      CODEACT_TRY(disk, ensure_volume(options, &volume_notice));
      if (!volume_notice.empty()) notice += (notice.empty() ? "" : "; ") + volume_notice;
      CODEACT_TRY_STATUS(ensure_disk_attached(id));
    }
    CODEACT_TRY(int64_t epoch, persistence ? place_here(id) : Result<int64_t>(int64_t{0}));
    CODEACT_TRY_STATUS(create_container(options, image, disk, epoch));
  }

  CODEACT_TRY(Json hello, wait_ready(id));
  // The install below may recover the kernel (ensure_running), which takes the lock itself.
  lock.unlock();
  if (!options.python_packages.empty() && !options.network) {
    return no_network_error(id, options.python_packages)
        .with_context(fmt::format("sandbox \"{}\" started", id));
  }
  if (!options.python_packages.empty()) {
    auto r = call_with_recovery(id, "install",
                                Json{{"packages", options.python_packages}, {"timeout", 600}},
                                std::chrono::minutes(11), nullptr);
    if (!r.ok()) return r.error();
    if (core::json_string(*r, "status") != "ok") {
      return core::failed_precondition(
          fmt::format("sandbox \"{}\" started, but installing {} failed:\n{}", id,
                      core::join(options.python_packages, ", "),
                      core::json_string(*r, "stderr") + core::json_string(*r, "stdout")));
    }
  }
  CODEACT_TRY(SandboxInfo info, this->info(id));
  info.resumed = resumed;
  info.cell = core::json_int(hello, "cell");
  info.restore_errors = json_list(hello.value("restore_errors", Json::array()));
  info.lost = json_list(hello.value("lost", Json::array()));
  if (::geteuid() == static_cast<uid_t>(kSandboxUid)) {
    notice += std::string(notice.empty() ? "" : "; ") +
              fmt::format(
                  "codeact runs as uid {}, the sandbox user's uid, so the sandbox can write its "
                  "kernel directory on the host; run codeact as another user (e.g. root)",
                  kSandboxUid);
  }
  info.notice = notice;
  return info;
}

Result<SandboxInfo> SandboxManager::Impl::info(const std::string& id) {
  CODEACT_TRY_STATUS(validate_id(id));
  SandboxInfo info;
  info.id = id;
  info.container_name = container_name(id);
  info.volume = volume_name(id);
  auto c = docker_->inspect_container(container_name(id));
  if (!c.ok()) {
    if (c.error().code() == core::Code::kNotFound) {
      return core::not_found(
          fmt::format("no sandbox \"{}\" (start it with `codeact sandbox start --id {}`)", id, id));
    }
    return c.error();
  }
  if (label_or(c->labels, kSandboxLabel) != "1") {
    return core::not_found(fmt::format("no sandbox \"{}\": container {} was not created by codeact",
                                       id, container_name(id)));
  }
  info.container_id = c->id;
  info.image = c->config_image;
  info.status = c->state.status;
  info.running = c->state.running;
  info.network = label_or(c->labels, "io.codeact.network") == "1";
  info.python_packages = split_list(label_or(c->labels, "io.codeact.python-packages"));
  info.system_packages = split_list(label_or(c->labels, "io.codeact.system-packages"));
  info.disk = label_or(c->labels, kDiskLabel);
  info.host = label_or(c->labels, kHostLabel);
  info.epoch = label_epoch(*c);
  if (info.epoch > 0) info.shared_dir = label_or(c->labels, kSharedDirLabel);
  return info;
}

Status SandboxManager::Impl::stop(const std::string& id) {
  CODEACT_TRY_STATUS(info(id));
  std::lock_guard lock(lock_for(id));
  return docker_->stop_container(container_name(id), std::chrono::seconds(5));
}

Result<SandboxInfo> SandboxManager::Impl::restart(const std::string& id) {
  CODEACT_TRY_STATUS(info(id));
  {
    std::lock_guard lock(lock_for(id));
    auto c = docker_->inspect_container(container_name(id));
    if (!c.ok()) return c.error();
    if (c->state.running && label_or(c->labels, kLayoutLabel) == kLayout) {
      CODEACT_TRY_STATUS(restart_running(id, std::chrono::seconds(5)));
    } else {
      if (c->state.running)
        CODEACT_TRY_STATUS(docker_->stop_container(container_name(id), std::chrono::seconds(5)));
      CODEACT_TRY_STATUS(start_container(id));
    }
  }
  CODEACT_TRY(Json hello, wait_ready(id));
  CODEACT_TRY(SandboxInfo i, info(id));
  i.cell = core::json_int(hello, "cell");
  i.restore_errors = json_list(hello.value("restore_errors", Json::array()));
  i.lost = json_list(hello.value("lost", Json::array()));
  return i;
}

Status SandboxManager::Impl::remove(const std::string& id, bool volume) {
  CODEACT_TRY_STATUS(validate_id(id));
  std::lock_guard lock(lock_for(id));
  auto c = docker_->inspect_container(container_name(id));
  bool had_container = c.ok() && label_or(c->labels, kSandboxLabel) == "1";
  if (c.ok() && !had_container) {
    return core::failed_precondition(fmt::format(
        "container {} was not created by codeact; not removing it", container_name(id)));
  }
  // A container of a sandbox placed on another host since: its state there is the new owner's.
  const bool moved = had_container && moved_away(id, *c).has_value();
  if (had_container)
    CODEACT_TRY_STATUS(docker_->remove_container(container_name(id), {.force = true}));
  forget_auth(id);
  std::error_code ec;
  fs::remove_all(kernel_dir(id), ec);
  fs::remove_all(legacy_run_dir(id), ec);
  bool had_volume = false;
  if (volume) {
    auto v = docker_->inspect_volume(volume_name(id));
    if (v.ok()) {
      if (label_or(v->labels, kSandboxLabel) != "1") {
        return core::failed_precondition(
            fmt::format("volume {} was not created by codeact; not removing it", volume_name(id)));
      }
      had_volume = true;
      CODEACT_TRY_STATUS(docker_->remove_volume(volume_name(id), true));
    }
    if (!moved) {
      CODEACT_TRY(bool had_shared,
                  remove_shared_state(id, v.ok() ? label_or(v->labels, kSharedDirLabel) : ""));
      had_volume = had_volume || had_shared;
    }
    // The disk image (and its loop device) go with the volume.
    const std::string image = disk_image(id);
    if (fs::exists(image, ec)) {
      auto device = disk::find_loop_device(image);
      if (device.ok() && *device) CODEACT_TRY_STATUS(disk::detach(**device));
      had_volume = true;
    }
    fs::remove_all(sandbox_dir(id), ec);
  }
  if (!had_container && !had_volume) {
    return core::not_found(fmt::format("no sandbox \"{}\"{}", id, volume ? " and no volume" : ""));
  }
  return core::ok_status();
}

Result<std::vector<SandboxInfo>> SandboxManager::Impl::list() {
  ContainerListOptions lo;
  lo.filters["label"] = {std::string(kSandboxLabel) + "=1"};
  CODEACT_TRY(auto containers, docker_->list_containers(lo));
  std::vector<SandboxInfo> out;
  for (const auto& c : containers) {
    SandboxInfo i;
    i.id = label_or(c.labels, kSandboxIdLabel);
    i.container_id = c.id;
    i.container_name = c.names.empty() ? "" : c.names[0];
    i.volume = volume_name(i.id);
    i.image = c.image;
    i.status = c.state;
    i.running = c.state == "running";
    i.network = label_or(c.labels, "io.codeact.network") == "1";
    i.python_packages = split_list(label_or(c.labels, "io.codeact.python-packages"));
    i.system_packages = split_list(label_or(c.labels, "io.codeact.system-packages"));
    i.disk = label_or(c.labels, kDiskLabel);
    i.host = label_or(c.labels, kHostLabel);
    out.push_back(std::move(i));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

Result<std::vector<std::string>> SandboxManager::Impl::cleanup(bool volumes) {
  CODEACT_TRY(auto sandboxes, list());
  std::vector<std::string> removed;
  for (const auto& s : sandboxes) {
    CODEACT_TRY_STATUS(remove(s.id, volumes));
    removed.push_back(s.id);
  }
  return removed;
}

Result<std::vector<std::string>> SandboxManager::Impl::reap_moved() {
  ContainerListOptions lo;
  lo.filters["label"] = {std::string(kSandboxLabel) + "=1", std::string(kEpochLabel)};
  CODEACT_TRY(auto containers, docker_->list_containers(lo));
  std::vector<std::string> reaped;
  for (const auto& summary : containers) {
    const std::string id = label_or(summary.labels, kSandboxIdLabel);
    if (id.empty()) continue;
    std::lock_guard lock(lock_for(id));
    auto c = docker_->inspect_container(container_name(id));
    if (!c.ok() || c->id != summary.id || !moved_away(id, *c)) continue;
    (void)fenced(id, *c);
    reaped.push_back(id);
  }
  return reaped;
}

Result<Json> SandboxManager::Impl::ensure_running(const std::string& id, std::string* notice) {
  std::lock_guard lock(lock_for(id));
  auto c = docker_->inspect_container(container_name(id));
  if (!c.ok()) {
    if (c.error().code() == core::Code::kNotFound) {
      return core::not_found(
          fmt::format("no sandbox \"{}\" (start it with `codeact sandbox start --id {}`)", id, id));
    }
    return c.error();
  }
  if (label_or(c->labels, kLayoutLabel) != kLayout) {
    CODEACT_TRY_STATUS(recreate_container(id, *c));
    CODEACT_TRY(Json hello, wait_ready(id));
    if (notice) {
      *notice = fmt::format(
          "sandbox \"{}\" was made by an older codeact; its container was recreated and {}", id,
          restore_clause(hello));
    }
    return hello;
  }
  if (!c->state.running) {
    std::string why = exit_reason(c->state);
    CODEACT_TRY_STATUS(start_container(id));
    CODEACT_TRY(Json hello, wait_ready(id));
    if (notice) {
      *notice = fmt::format("sandbox \"{}\" was not running ({}); it was restarted and {}", id, why,
                            restore_clause(hello));
    }
    return hello;
  }
  auto hello = wait_ready(id);
  if (hello.ok() || hello.error().code() != core::Code::kPermissionDenied) return hello;
  // Something that is not this sandbox's kernel sits at its socket: never talk to it; a
  // restart gives the kernel a fresh socket.
  core::log().warn("sandbox \"{}\": {}; restarting it", id, hello.error().message());
  forget_auth(id);
  CODEACT_TRY_STATUS(restart_running(id, std::chrono::seconds(0)));
  CODEACT_TRY(Json again, wait_ready(id));
  if (notice) {
    *notice = fmt::format("sandbox \"{}\": {}; it was restarted and {}", id,
                          hello.error().message(), restore_clause(again));
  }
  return again;
}

Result<Json> SandboxManager::Impl::restart_kernel(const std::string& id, const std::string& why,
                                                  std::string* notice) {
  {
    std::lock_guard lock(lock_for(id));
    auto c = docker_->inspect_container(container_name(id));
    if (!c.ok()) return c.error();
    if (c->state.running) {
      CODEACT_TRY_STATUS(restart_running(id, std::chrono::seconds(0)));
    } else {
      CODEACT_TRY_STATUS(start_container(id));
    }
  }
  CODEACT_TRY(Json hello, wait_ready(id));
  if (notice)
    *notice = fmt::format("{}; the sandbox was restarted and {}", why, restore_clause(hello));
  return hello;
}

Result<std::unique_ptr<KernelChannel>> SandboxManager::Impl::open_channel(const std::string& id,
                                                                          std::string* notice) {
  auto auth = auth_for(id);
  if (auth.ok()) {
    auto ch = KernelChannel::connect(socket_path(id), 200ms, *auth);
    if (ch.ok()) return ch;
  } else if (auth.error().code() != core::Code::kFailedPrecondition) {
    return auth.error();
  }
  CODEACT_TRY_STATUS(ensure_running(id, notice));
  CODEACT_TRY(KernelAuth fresh, auth_for(id));
  return KernelChannel::connect(socket_path(id), 5s, fresh);
}

Result<Json> SandboxManager::Impl::authenticated_call(const std::string& id, const std::string& op,
                                                      const Json& fields,
                                                      const KernelCallOptions& options,
                                                      std::string* notice) {
  for (int attempt = 0;; ++attempt) {
    CODEACT_TRY(auto ch, open_channel(id, notice));
    auto r = ch->call(op, fields, options);
    if (r.ok() || !ch->auth_failed() || attempt > 0) return r;
    // Not our kernel: nothing of this call ran there. The token may simply be stale (another
    // process recreated the container); else something else took the socket.
    forget_auth(id);
    std::string n;
    CODEACT_TRY_STATUS(
        restart_kernel(id, fmt::format("sandbox \"{}\": {}", id, r.error().message()), &n));
    if (notice) *notice = n;
  }
}

Result<Json> SandboxManager::Impl::call_with_recovery(const std::string& id, const std::string& op,
                                                      Json fields,
                                                      std::chrono::milliseconds timeout,
                                                      std::string* notice) {
  CODEACT_TRY_STATUS(validate_id(id));
  auto r = authenticated_call(id, op, fields, {.timeout = timeout}, notice);
  if (!r.ok() && r.error().code() == core::Code::kUnavailable) {
    std::string n;
    (void)ensure_running(id, &n);
    return r.error().with_context(
        fmt::format("sandbox \"{}\": {} failed because the kernel stopped{}{}", id, op,
                    n.empty() ? "" : "; ", n));
  }
  if (!r.ok()) return r.error().with_context(fmt::format("sandbox \"{}\"", id));
  return r;
}

Result<Json> SandboxManager::Impl::kernel_call(const std::string& id, const std::string& op,
                                               Json fields, std::chrono::milliseconds timeout) {
  return call_with_recovery(id, op, std::move(fields), timeout, nullptr);
}

std::string SandboxManager::Impl::disk_hint(const std::string& id) {
  auto c = docker_->inspect_container(container_name(id));
  std::string disk = c.ok() ? label_or(c->labels, kDiskLabel) : "";
  if (disk.empty()) return "";
  return fmt::format(
      " (the sandbox's disk, limited to {}, is full: delete files under /output, or "
      "recreate the sandbox with a larger --disk; the state saved after the last "
      "cell that fitted is intact)",
      disk);
}

// The request fields of an op that runs once per execution id (the kernel's cells.py, run_once.py).
static Json with_execution_id(Json fields, const std::string& execution_id) {
  if (!execution_id.empty()) fields["execution_id"] = execution_id;
  return fields;
}

Result<ExecuteResult> SandboxManager::Impl::execute(const std::string& id,
                                                    const ExecuteRequest& req) {
  CODEACT_TRY_STATUS(validate_id(id));
  std::string notice;
  Json fields = with_execution_id(Json{{"code", req.code},
                                       {"timeout", req.timeout_seconds},
                                       {"persist", req.persist},
                                       {"max_output_bytes", req.max_output_bytes},
                                       {"stream", static_cast<bool>(req.on_output)}},
                                  req.execution_id);
  if (req.variables.is_object() && !req.variables.empty()) fields["variables"] = req.variables;
  // Capped at 1e9 s (~31 years) so the casts below and twice the budget stay defined.
  const auto cell_budget = req.timeout_seconds > 0
                               ? std::chrono::milliseconds(static_cast<int64_t>(
                                     std::min(req.timeout_seconds, 1e9) * 1000)) +
                                     options_.kill_grace
                               : std::chrono::milliseconds(0);
  // When an earlier cell (whose caller went away) still runs, this one waits in the kernel's
  // queue: the kernel says so ("queued"), and this cell's own timeout starts when it starts.
  // A cell can write forged events on its connection, so they move the deadline only within what
  // this call was given: one "queued" (a wait of at most this cell's own budget), then one
  // "started" (the budget from then on); nothing the sandbox sends makes the host wait longer
  // than twice the budget from the call's start (`hard_end` bounds every move).
  const auto hard_end = std::chrono::steady_clock::now() + 2 * cell_budget;
  auto bounded = [&](std::chrono::milliseconds wait) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        hard_end - std::chrono::steady_clock::now());
    return std::max(std::chrono::milliseconds(1), std::min(wait, left));
  };
  // What of a stream may reach the caller: the honest kernel sends max_output_bytes of output
  // and then its own "[streaming stopped ...]" notice, and invalid bytes arrive as U+FFFD (three
  // bytes each), so the host cuts only past three times that plus room for the notice, and says so.
  // (Past 2^40 bytes there is no cap to keep, and 3x would overflow.)
  const int64_t stream_limit = req.max_output_bytes > 0 && req.max_output_bytes < (int64_t{1} << 40)
                                   ? 3 * req.max_output_bytes + 1024
                                   : 0;
  Json queued_behind;  // the running cell, while this one waits
  bool started = true;
  bool queued_seen = false;
  bool started_seen = false;
  bool wait_capped = false;  // the earlier cell had more time left than this cell's budget
  int64_t streamed_stdout = 0, streamed_stderr = 0;
  KernelCallOptions co;
  co.timeout = cell_budget;
  co.on_event = [&](const Json& ev) -> std::optional<std::chrono::milliseconds> {
    std::string type = core::json_string(ev, "type");
    if (type == "stream") {
      // At most stream_limit bytes per stream reach the caller (see above): a cell writing stream
      // events of its own cannot flood the caller.
      std::string name = core::json_string(ev, "name");
      std::string text = core::json_string(ev, "text");
      if (name != "stdout" && name != "stderr") return std::nullopt;
      int64_t& sent = name == "stdout" ? streamed_stdout : streamed_stderr;
      if (stream_limit > 0) {
        if (sent >= stream_limit) return std::nullopt;  // cut before: nothing more of it
        int64_t room = stream_limit - sent;
        if (static_cast<int64_t>(text.size()) > room) {
          size_t cut = static_cast<size_t>(room);
          while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
          text.resize(cut);  // on a character boundary
          text += "\n... [the host cut this stream: more than max_output_bytes arrived] ...\n";
          sent = stream_limit;
          if (req.on_output) req.on_output(name, text);
          return std::nullopt;
        }
      }
      sent += static_cast<int64_t>(text.size());
      if (req.on_output && !text.empty()) req.on_output(name, text);
      return std::nullopt;
    }
    if (type == "queued") {
      if (queued_seen || started_seen) return std::nullopt;
      queued_seen = true;
      started = false;
      queued_behind = ev.value("running", Json::object());
      if (cell_budget.count() == 0) return std::nullopt;  // no deadline asked for, none set
      // Wait for the earlier cell until its own timeout (plus grace) has passed, at most as long
      // as this cell would have had; when the kernel does not say what its timeout is, or it has
      // none, as long as this cell would have had.
      std::chrono::milliseconds wait = cell_budget;
      double their_timeout = core::json_number(queued_behind, "timeout_s", -1);
      if (their_timeout > 0) {
        // Compared as doubles first: a forged 1e300 must not reach an integer cast.
        double left_s = their_timeout - core::json_number(queued_behind, "running_ms") / 1000;
        double left_ms =
            std::max(0.0, left_s) * 1000 + static_cast<double>(options_.kill_grace.count());
        if (!(left_ms < static_cast<double>(cell_budget.count()))) {
          wait_capped = true;  // also NaN
        } else {
          wait = std::chrono::milliseconds(static_cast<int64_t>(left_ms));
        }
      }
      return bounded(wait);
    }
    if (type == "started") {
      if (!queued_seen || started_seen) return std::nullopt;
      started_seen = true;
      started = true;
      if (cell_budget.count() > 0) return bounded(cell_budget);
    }
    return std::nullopt;
  };
  co.bridge = req.bridge;
  co.cancel = req.cancel;
  auto start = std::chrono::steady_clock::now();
  auto r = authenticated_call(id, "execute", fields, co, &notice);
  if (r.ok()) {
    ExecuteResult out = ExecuteResult::from_json(*r);
    if (!notice.empty()) out.notice = out.notice.empty() ? notice : notice + "; " + out.notice;
    if (out.error && mentions_full_disk(out.error->message + out.error->traceback)) {
      // Where the model and the CLI look: the message, and the traceback's last line.
      std::string hint = disk_hint(id);
      out.error->message += hint;
      if (!out.error->traceback.empty() && !hint.empty()) {
        if (out.error->traceback.back() != '\n') out.error->traceback += '\n';
        out.error->traceback += hint.substr(1) + "\n";
      }
    }
    std::string persist_error = core::json_string(*r, "persist_error");
    if (!persist_error.empty() && mentions_full_disk(persist_error)) {
      out.notice += (out.notice.empty() ? "" : "; ") +
                    ("this cell's state was not saved: " + persist_error + disk_hint(id));
    }
    return out;
  }
  auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  core::Code code = r.error().code();
  if (code != core::Code::kDeadlineExceeded && code != core::Code::kUnavailable &&
      code != core::Code::kCancelled) {
    return r.error().with_context(fmt::format("sandbox \"{}\"", id));
  }
  // The kernel is stuck past the cell's timeout, was cancelled mid-cell, or died: kill what is
  // left and bring it back from its last snapshot, so the sandbox is usable again.
  ExecuteResult out;
  out.execution_id = req.execution_id;
  out.duration_ms = elapsed.count();
  out.kernel_restarted = true;
  std::string why;
  std::string type;
  if (code == core::Code::kUnavailable) {
    // The kernel went away. Its init exits with its status; give the container a moment to stop
    // so the status can be reported.
    std::optional<ContainerState> stopped;
    for (int i = 0; i < 60; ++i) {
      auto c = docker_->inspect_container(container_name(id));
      if (c.ok() && !c->state.running) {
        stopped = c->state;
        break;
      }
      std::this_thread::sleep_for(50ms);
    }
    why =
        stopped ? exit_reason(*stopped) : "the kernel closed its connection and stopped answering";
    type = stopped && stopped->oom_killed ? "MemoryError" : "KernelDied";
  } else if (code == core::Code::kCancelled) {
    why = "the cell was cancelled and the kernel was stopped";
    type = "CancelledError";
  } else if (!started) {
    why = fmt::format(
        "this cell did not run: the sandbox was still busy with an earlier cell (cell {}, "
        "execution id {}, running "
        "for {:.0f} s, whose caller had gone) that {}; the kernel was killed",
        core::json_int(queued_behind, "cell"),
        core::json_string(queued_behind, "execution_id", "none"),
        core::json_number(queued_behind, "running_ms") / 1000 +
            static_cast<double>(elapsed.count()) / 1000,
        wait_capped ? fmt::format("was still running when this cell had waited as long as its "
                                  "own timeout ({} s)",
                                  req.timeout_seconds)
                    : fmt::format("did not stop within its timeout of {} s",
                                  core::json_number(queued_behind, "timeout_s")));
    type = "SandboxBusy";
  } else {
    why = fmt::format("the cell did not stop within its timeout of {}s and the kernel was killed",
                      req.timeout_seconds);
    type = "TimeoutError";
  }
  std::string restarted;
  CODEACT_TRY(Json hello, restart_kernel(id, why, &restarted));
  CODEACT_TRY(std::optional<Json> committed, committed_reply(id, req.execution_id));
  if (committed) {
    // The crash came after the cell's state and reply were saved: the cell is done, and saying
    // it was lost would have the model run it again (applied twice).
    ExecuteResult done = ExecuteResult::from_json(*committed);
    done.replayed = true;
    done.kernel_restarted = true;
    std::string said = fmt::format(
        "{}, after this cell had completed and its state was saved; its recorded reply is "
        "given, and the kernel was restarted from the snapshot of cell {}",
        why, core::json_int(hello, "cell"));
    done.notice = done.notice.empty() ? said : said + "; " + done.notice;
    return done;
  }
  out.cell = core::json_int(hello, "cell");
  out.timed_out = type == "TimeoutError";
  out.error = CellError{
      type,
      fmt::format("{}; it was restarted from the snapshot of cell {}, so {}", why, out.cell,
                  type == "SandboxBusy" ? "run this cell again"
                                        : "changes this cell made after that are lost"),
      ""};
  auto lost = json_list(hello.value("lost", Json::array()));
  if (!lost.empty()) out.error->message += "; not restored: " + names_with_reasons(lost);
  out.notice = out.error->message;
  return out;
}

Result<std::optional<Json>> SandboxManager::Impl::committed_reply(const std::string& id,
                                                                  const std::string& execution_id) {
  if (execution_id.empty()) return std::optional<Json>();
  auto r = authenticated_call(id, "execution.get", Json{{"execution_id", execution_id}},
                              {.timeout = 30s}, nullptr);
  if (!r.ok() && r.error().code() == core::Code::kDataLoss) {
    // Committed, but its recorded reply is unreadable: still done, so not to be run again.
    return std::optional<Json>(
        Json{{"status", "error"},
             {"execution_id", execution_id},
             {"error",
              {{"type", "ResultLost"},
               {"message",
                "this cell completed and its state was saved, but its recorded "
                "reply could not be read (" +
                    r.error().message() + "); do not run it again: look at its variables instead"},
               {"traceback", ""}}}});
  }
  // A kernel too old for the op: it keeps no records to find.
  if (!r.ok() && r.error().code() == core::Code::kUnimplemented) return std::optional<Json>();
  if (!r.ok()) {
    return core::unavailable(fmt::format(
        "sandbox \"{}\": its kernel died during execution {} and was restarted, but whether the "
        "cell had completed could not be asked ({}); run it again with the same execution id "
        "(a completed cell is not run twice)",
        id, execution_id, r.error().message()));
  }
  if (!core::json_bool(*r, "found")) return std::optional<Json>();
  Json reply = r->value("reply", Json());
  if (!reply.is_object()) return std::optional<Json>();
  return std::optional<Json>(std::move(reply));
}

Result<BashResult> SandboxManager::Impl::bash(const std::string& id, const std::string& script,
                                              double timeout_seconds,
                                              const std::string& execution_id) {
  auto timeout = timeout_seconds > 0
                     ? std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000)) +
                           options_.kill_grace
                     : std::chrono::milliseconds(0);
  CODEACT_TRY(Json r, call_with_recovery(
                          id, "bash",
                          with_execution_id(Json{{"script", script}, {"timeout", timeout_seconds}},
                                            execution_id),
                          timeout, nullptr));
  BashResult b;
  b.exit_code = core::json_int(r, "exit_code");
  b.stdout_text = core::json_string(r, "stdout");
  b.stderr_text = core::json_string(r, "stderr");
  b.timed_out = core::json_bool(r, "timed_out");
  b.duration_ms = core::json_int(r, "duration_ms");
  b.replayed = core::json_bool(r, "replayed");
  b.notice = core::json_string(r, "notice");
  if (mentions_full_disk(b.stderr_text)) b.stderr_text += disk_hint(id) + "\n";
  return b;
}

Result<Json> SandboxManager::Impl::variables(const std::string& id) {
  return call_with_recovery(id, "vars", Json::object(), 60s, nullptr);
}

Result<Json> SandboxManager::Impl::variable(const std::string& id, const std::string& name) {
  return call_with_recovery(id, "get", Json{{"name", name}}, 60s, nullptr);
}

Result<Json> SandboxManager::Impl::clear(const std::string& id, const std::string& execution_id) {
  return call_with_recovery(id, "clear", with_execution_id(Json::object(), execution_id), 60s,
                            nullptr);
}

Result<std::vector<FileEntry>> SandboxManager::Impl::list_files(const std::string& id,
                                                                const std::string& path) {
  Json fields = Json::object();
  if (!path.empty()) fields["path"] = path;
  CODEACT_TRY(Json r, call_with_recovery(id, "files.list", fields, 60s, nullptr));
  std::vector<FileEntry> out;
  for (const auto& f : r.value("files", Json::array())) {
    out.push_back(
        {core::json_string(f, "path"), core::json_int(f, "size"), core::json_number(f, "mtime")});
  }
  return out;
}

Result<std::string> SandboxManager::Impl::read_file(const std::string& id,
                                                    const std::string& path) {
  CODEACT_TRY(Json r, call_with_recovery(id, "files.read", Json{{"path", path}}, 120s, nullptr));
  return core::base64_decode(core::json_string(r, "data_b64"));
}

Status SandboxManager::Impl::write_file(const std::string& id, const std::string& path,
                                        std::string_view data, const std::string& execution_id) {
  auto r = call_with_recovery(
      id, "files.write",
      with_execution_id(Json{{"path", path}, {"data_b64", core::base64_encode(data)}},
                        execution_id),
      120s, nullptr);
  if (!r.ok() && mentions_full_disk(r.error().message())) {
    return core::Error(core::Code::kResourceExhausted, r.error().message() + disk_hint(id));
  }
  if (!r.ok()) return std::move(r).error();
  return core::ok_status();
}

Result<InstallResult> SandboxManager::Impl::install(const std::string& id,
                                                    const std::vector<std::string>& packages,
                                                    bool system, const std::string& execution_id) {
  if (packages.empty()) return core::invalid_argument("no packages given to install");
  InstallResult out;
  if (system) {
    for (const auto& p : packages) CODEACT_TRY_STATUS(validate_system_package(p));
    CODEACT_TRY(SandboxInfo current, info(id));
    auto c = docker_->inspect_container(container_name(id));
    if (!c.ok()) return c.error();
    SandboxOptions opts = options_from_labels(id, *c);
    for (const auto& p : packages) {
      if (std::find(opts.system_packages.begin(), opts.system_packages.end(), p) ==
          opts.system_packages.end()) {
        opts.system_packages.push_back(p);
      }
    }
    // Recreate on the derived image; the state is on the volume, the kernel restores it.
    {
      std::lock_guard lock(lock_for(id));
      CODEACT_TRY_STATUS(docker_->remove_container(container_name(id), {.force = true}));
      forget_auth(id);
    }
    opts.python_packages.clear();  // already on the volume
    CODEACT_TRY(SandboxInfo started, start(opts));
    out.ok = true;
    out.installed = packages;
    out.image = started.image;
    return out;
  }
  for (const auto& p : packages) CODEACT_TRY_STATUS(validate_python_package(p));
  CODEACT_TRY(SandboxInfo current, info(id));
  if (!current.network) return no_network_error(id, packages);
  CODEACT_TRY(Json r,
              call_with_recovery(
                  id, "install",
                  with_execution_id(Json{{"packages", packages}, {"timeout", 600}}, execution_id),
                  std::chrono::minutes(11), nullptr));
  out.ok = core::json_string(r, "status") == "ok";
  out.installed = string_list(r.value("installed", Json::array()));
  out.output = core::json_string(r, "stdout") + core::json_string(r, "stderr");
  return out;
}

Status SandboxManager::Impl::register_functions(const std::string& id, const Json& functions) {
  CODEACT_TRY_STATUS(
      call_with_recovery(id, "bridge.register", Json{{"functions", functions}}, 60s, nullptr));
  return core::ok_status();
}

Status SandboxManager::Impl::define(const std::string& id, const std::string& source) {
  CODEACT_TRY_STATUS(call_with_recovery(id, "define", Json{{"source", source}}, 120s, nullptr));
  return core::ok_status();
}

Result<bool> SandboxManager::Impl::remove_shared_state(const std::string& id,
                                                       const std::string& volume_shared_dir) {
  CODEACT_TRY(std::optional<std::string> shared,
              shared_dir_from([this](const std::string& k) { return env(k); }));
  bool removed = false;
  for (const std::string& root : {shared.value_or(""), volume_shared_dir}) {
    if (root.empty()) continue;
    CODEACT_TRY(bool here, remove_shared_sandbox_dir(root, id));
    removed = removed || here;
  }
  return removed;
}

Result<std::vector<VolumeInfo>> SandboxManager::Impl::list_volumes() {
  return docker_->list_volumes({{"label", {std::string(kSandboxLabel) + "=1"}}});
}

Status SandboxManager::Impl::remove_volume(const std::string& id) {
  CODEACT_TRY_STATUS(validate_id(id));
  auto c = docker_->inspect_container(container_name(id));
  if (c.ok()) {
    return core::failed_precondition(fmt::format(
        "sandbox \"{}\" still uses volume {}; run `codeact sandbox rm {} --volume` instead", id,
        volume_name(id), id));
  }
  auto v = docker_->inspect_volume(volume_name(id));
  if (!v.ok()) {
    if (v.error().code() == core::Code::kNotFound)
      return core::not_found(fmt::format("no volume {} (sandbox \"{}\")", volume_name(id), id));
    return v.error();
  }
  if (label_or(v->labels, kSandboxLabel) != "1") {
    return core::failed_precondition(
        fmt::format("volume {} was not created by codeact; not removing it", volume_name(id)));
  }
  CODEACT_TRY_STATUS(docker_->remove_volume(volume_name(id), true));
  CODEACT_TRY_STATUS(remove_shared_state(id, label_or(v->labels, kSharedDirLabel)));
  std::error_code ec;
  const std::string image = disk_image(id);
  if (fs::exists(image, ec)) {
    auto device = disk::find_loop_device(image);
    if (device.ok() && *device) CODEACT_TRY_STATUS(disk::detach(**device));
  }
  fs::remove_all(sandbox_dir(id), ec);
  return core::ok_status();
}

// ---- SandboxManager: forwards to Impl -------------------------------------------------------

SandboxManager::SandboxManager(std::shared_ptr<DockerClient> docker, SandboxManagerOptions options)
    : impl_(std::make_unique<Impl>(std::move(docker), std::move(options))) {}
SandboxManager::~SandboxManager() = default;

Result<SandboxInfo> SandboxManager::start(const SandboxOptions& o) { return impl_->start(o); }
Status SandboxManager::stop(const std::string& id) { return impl_->stop(id); }
Result<SandboxInfo> SandboxManager::restart(const std::string& id) { return impl_->restart(id); }
Status SandboxManager::remove(const std::string& id, bool volume) {
  return impl_->remove(id, volume);
}
Result<SandboxInfo> SandboxManager::info(const std::string& id) { return impl_->info(id); }
Result<std::vector<SandboxInfo>> SandboxManager::list() { return impl_->list(); }
Result<std::vector<std::string>> SandboxManager::cleanup(bool volumes) {
  return impl_->cleanup(volumes);
}
Result<std::vector<std::string>> SandboxManager::reap_moved() { return impl_->reap_moved(); }
Result<ExecuteResult> SandboxManager::execute(const std::string& id, const ExecuteRequest& r) {
  return impl_->execute(id, r);
}
Result<BashResult> SandboxManager::bash(const std::string& id, const std::string& script,
                                        double timeout_seconds, const std::string& execution_id) {
  return impl_->bash(id, script, timeout_seconds, execution_id);
}
Result<Json> SandboxManager::variables(const std::string& id) { return impl_->variables(id); }
Result<Json> SandboxManager::variable(const std::string& id, const std::string& name) {
  return impl_->variable(id, name);
}
Result<Json> SandboxManager::clear(const std::string& id, const std::string& execution_id) {
  return impl_->clear(id, execution_id);
}
Result<std::vector<FileEntry>> SandboxManager::list_files(const std::string& id,
                                                          const std::string& path) {
  return impl_->list_files(id, path);
}
Result<std::string> SandboxManager::read_file(const std::string& id, const std::string& path) {
  return impl_->read_file(id, path);
}
Status SandboxManager::write_file(const std::string& id, const std::string& path,
                                  std::string_view data, const std::string& execution_id) {
  return impl_->write_file(id, path, data, execution_id);
}
Result<InstallResult> SandboxManager::install(const std::string& id,
                                              const std::vector<std::string>& packages, bool system,
                                              const std::string& execution_id) {
  return impl_->install(id, packages, system, execution_id);
}
Status SandboxManager::register_functions(const std::string& id, const Json& functions) {
  return impl_->register_functions(id, functions);
}
Status SandboxManager::define(const std::string& id, const std::string& source) {
  return impl_->define(id, source);
}
Result<Json> SandboxManager::kernel_call(const std::string& id, const std::string& op, Json fields,
                                         std::chrono::milliseconds timeout) {
  return impl_->kernel_call(id, op, std::move(fields), timeout);
}
Result<CheckpointHistory> SandboxManager::history(const std::string& id) {
  CODEACT_TRY(Json r, impl_->kernel_call(id, "checkpoints", Json::object(), 60s));
  CheckpointHistory h;
  for (const auto& c : r.value("checkpoints", Json::array())) {
    h.checkpoints.push_back(Checkpoint::from_json(c));
  }
  h.current = core::json_int(r, "current");
  if (r.contains("keep_last") && r["keep_last"].is_number()) h.keep_last = r["keep_last"];
  h.budget = core::json_int(r, "budget");
  return h;
}
Result<RewindResult> SandboxManager::rewind(const std::string& id, int64_t to,
                                            const std::string& execution_id) {
  CODEACT_TRY(Json r,
              impl_->kernel_call(id, "rewind", with_execution_id(Json{{"to", to}}, execution_id),
                                 std::chrono::minutes(30)));
  return RewindResult::from_json(r);
}
Result<SandboxOptions> SandboxManager::options_of(const std::string& id) {
  CODEACT_TRY_STATUS(validate_id(id));
  return impl_->options_of(id);
}
Result<std::vector<VolumeInfo>> SandboxManager::list_volumes() { return impl_->list_volumes(); }
Status SandboxManager::remove_volume(const std::string& id) { return impl_->remove_volume(id); }
DockerClient& SandboxManager::docker() { return impl_->docker(); }
std::string SandboxManager::socket_path(const std::string& id) const {
  return impl_->socket_path(id);
}
VolumeSpec SandboxManager::volume_spec(const std::string& id) const {
  return impl_->volume_spec(id);
}

}  // namespace codeact::sandbox
