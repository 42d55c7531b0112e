#include "codeact/sandbox/sandbox_manager.hpp"

#include <fmt/format.h>
#include <openssl/sha.h>
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
#include "codeact/sandbox/image_builder.hpp"
#include "codeact/sandbox/kernel_channel.hpp"
#include "codeact/sandbox/tar_archive.hpp"

namespace codeact::sandbox {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using core::Result;
using core::Status;

std::string random_id() {
  std::random_device rd;
  return fmt::format("sbx-{:08x}", rd());
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
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

std::string sha_hex12(std::string_view data) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), md);
  std::string out;
  for (int i = 0; i < 6; ++i) out += fmt::format("{:02x}", md[i]);
  return out;
}

std::vector<std::string> string_list(const Json& j) {
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const auto& v : j) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::vector<Json> json_list(const Json& j) {
  std::vector<Json> out;
  if (j.is_array()) {
    for (const auto& v : j) out.push_back(v);
  }
  return out;
}

core::Error no_network_error(const std::string& id, const std::vector<std::string>& packages) {
  return core::failed_precondition(fmt::format(
      "cannot install {}: sandbox \"{}\" has no network access, so pip cannot download packages; "
      "recreate it with network (`codeact sandbox rm {}` then `codeact sandbox start --id {} --network`; "
      "its state is kept on the volume)",
      join(packages, ", "), id, id, id));
}

}  // namespace

// ---- value types --------------------------------------------------------------------------

Json SandboxInfo::to_json() const {
  return Json{{"id", id},
              {"container_id", container_id},
              {"container_name", container_name},
              {"volume", volume},
              {"image", image},
              {"status", status},
              {"running", running},
              {"network", network},
              {"resumed", resumed},
              {"python_packages", python_packages},
              {"system_packages", system_packages},
              {"cell", cell},
              {"restore_errors", restore_errors}};
}

Json ExecuteResult::to_json() const {
  Json err = nullptr;
  if (error) err = Json{{"type", error->type}, {"message", error->message}, {"traceback", error->traceback}};
  return Json{{"ok", ok},
              {"stdout", stdout_text},
              {"stderr", stderr_text},
              {"result", result ? Json(*result) : Json(nullptr)},
              {"error", err},
              {"outputs", outputs},
              {"files", files},
              {"not_persisted", not_persisted},
              {"duration_ms", duration_ms},
              {"execution_id", execution_id.empty() ? Json(nullptr) : Json(execution_id)},
              {"cell", cell},
              {"replayed", replayed},
              {"timed_out", timed_out},
              {"kernel_restarted", kernel_restarted},
              {"notice", notice.empty() ? Json(nullptr) : Json(notice)},
              {"truncated", truncated}};
}

ExecuteResult ExecuteResult::from_json(const Json& j) {
  ExecuteResult r;
  const Json& err = j.contains("error") ? j["error"] : Json();
  r.stdout_text = core::json_string(j, "stdout");
  r.stderr_text = core::json_string(j, "stderr");
  if (j.contains("result") && j["result"].is_string()) r.result = j["result"].get<std::string>();
  if (err.is_object()) {
    r.error = CellError{core::json_string(err, "type"), core::json_string(err, "message"),
                        core::json_string(err, "traceback")};
  }
  std::string status = core::json_string(j, "status");
  r.ok = j.contains("ok") && j["ok"].is_boolean() && !j.contains("status") ? j["ok"].get<bool>()
                                                                          : (status.empty() ? !r.error : status == "ok");
  r.outputs = json_list(j.value("outputs", Json::array()));
  r.files = string_list(j.value("files", Json::array()));
  r.not_persisted = json_list(j.value("not_persisted", Json::array()));
  r.duration_ms = core::json_int(j, "duration_ms");
  r.execution_id = core::json_string(j, "execution_id");
  r.cell = core::json_int(j, "cell");
  r.replayed = core::json_bool(j, "replayed");
  r.timed_out = core::json_bool(j, "timed_out");
  r.kernel_restarted = core::json_bool(j, "kernel_restarted");
  r.notice = core::json_string(j, "notice");
  r.truncated = j.value("truncated", Json());
  if (r.truncated.is_object() && r.truncated.empty()) r.truncated = nullptr;
  return r;
}

Json BashResult::to_json() const {
  return Json{{"exit_code", exit_code}, {"stdout", stdout_text}, {"stderr", stderr_text},
              {"timed_out", timed_out}, {"duration_ms", duration_ms}};
}

Json InstallResult::to_json() const {
  return Json{{"ok", ok}, {"installed", installed}, {"output", output}, {"image", image.empty() ? Json() : Json(image)}};
}

Result<int64_t> parse_size(const std::string& text) {
  static const std::regex re(R"(^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMgGtT]?)[iI]?[bB]?\s*$)");
  std::smatch m;
  if (!std::regex_match(text, m, re)) {
    return core::invalid_argument(fmt::format("\"{}\" is not a size; write e.g. 512m or 2g", text));
  }
  double v = std::stod(m[1].str());
  switch (m[2].str().empty() ? ' ' : std::tolower(m[2].str()[0])) {
    case 'k': v *= 1024; break;
    case 'm': v *= 1024 * 1024; break;
    case 'g': v *= 1024.0 * 1024 * 1024; break;
    case 't': v *= 1024.0 * 1024 * 1024 * 1024; break;
    default: break;
  }
  return static_cast<int64_t>(v);
}

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
  Result<ExecuteResult> execute(const std::string& id, const ExecuteRequest& request);
  Result<BashResult> bash(const std::string& id, const std::string& script, double timeout_seconds,
                          const std::string& execution_id);
  Result<Json> variables(const std::string& id);
  Result<Json> variable(const std::string& id, const std::string& name);
  Result<Json> clear(const std::string& id);
  Result<std::vector<FileEntry>> list_files(const std::string& id, const std::string& path);
  Result<std::string> read_file(const std::string& id, const std::string& path);
  Status write_file(const std::string& id, const std::string& path, std::string_view data);
  Result<InstallResult> install(const std::string& id, const std::vector<std::string>& packages,
                                bool system);
  Status register_functions(const std::string& id, const Json& functions);
  Status define(const std::string& id, const std::string& source);
  Result<Json> kernel_call(const std::string& id, const std::string& op, Json fields,
                           std::chrono::milliseconds timeout);
  Result<std::vector<VolumeInfo>> list_volumes();
  Status remove_volume(const std::string& id);
  DockerClient& docker() { return *docker_; }
  std::string socket_path(const std::string& id) const;
  VolumeSpec volume_spec(const std::string& id) const;

 private:
  Result<std::string> ensure_image(const SandboxOptions& options);
  Result<std::string> ensure_system_image(const std::string& base,
                                          const std::vector<std::string>& packages);
  Result<ContainerSpec> container_spec(const SandboxOptions& options, const std::string& image);
  Result<Json> wait_ready(const std::string& id);
  // Makes sure the container runs and its kernel answers; `notice` says what was done.
  Result<Json> ensure_running(const std::string& id, std::string* notice);
  Result<std::unique_ptr<KernelChannel>> open_channel(const std::string& id, std::string* notice);
  Result<Json> call_with_recovery(const std::string& id, const std::string& op, Json fields,
                                  std::chrono::milliseconds timeout, std::string* notice);
  std::optional<std::string> env(const std::string& name) const;
  std::mutex& lock_for(const std::string& id);

  std::shared_ptr<DockerClient> docker_;
  SandboxManagerOptions options_;
  std::mutex locks_mu_;
  std::map<std::string, std::unique_ptr<std::mutex>> locks_;  // GUARDED_BY(locks_mu_)
};

SandboxManager::Impl::Impl(std::shared_ptr<DockerClient> docker, SandboxManagerOptions options)
    : docker_(std::move(docker)), options_(std::move(options)) {
  if (options_.data_dir.empty()) options_.data_dir = core::data_dir();
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

std::string SandboxManager::Impl::socket_path(const std::string& id) const {
  return fmt::format("{}/run/{}/kernel.sock", options_.data_dir, id);
}

Status SandboxManager::validate_id(const std::string& id) {
  static const std::regex re("^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$");
  if (!std::regex_match(id, re)) {
    return core::invalid_argument(fmt::format(
        "\"{}\" is not a valid sandbox id: use 1-63 letters, digits, '_', '.' or '-', starting with a letter or digit",
        id));
  }
  return core::ok_status();
}

Status SandboxManager::validate_python_package(const std::string& name) {
  static const std::regex re(
      R"(^[A-Za-z0-9][A-Za-z0-9._-]*(\[[A-Za-z0-9._,-]+\])?((===|==|!=|<=|>=|~=|<|>)[A-Za-z0-9.*+!_-]+(,(===|==|!=|<=|>=|~=|<|>)[A-Za-z0-9.*+!_-]+)*)?$)");
  if (!std::regex_match(name, re)) {
    return core::invalid_argument(fmt::format(
        "\"{}\" is not a Python package name (expected e.g. requests, pandas==2.2.0, uvicorn[standard]>=0.30)", name));
  }
  return core::ok_status();
}

Status SandboxManager::validate_system_package(const std::string& name) {
  static const std::regex re(R"(^[a-z0-9][a-z0-9+.-]*(=[A-Za-z0-9.+:~-]+)?$)");
  if (!std::regex_match(name, re)) {
    return core::invalid_argument(
        fmt::format("\"{}\" is not a Debian package name (expected e.g. graphviz, libgomp1)", name));
  }
  return core::ok_status();
}

VolumeSpec SandboxManager::Impl::volume_spec(const std::string& id) const {
  VolumeSpec spec;
  spec.name = volume_name(id);
  spec.labels = {{std::string(kSandboxLabel), "1"}, {std::string(kSandboxIdLabel), id}};
  std::string driver = env("VOLUME_DRIVER").value_or("local");
  if (driver == "nfs") {
    // Docker's local driver mounts NFS; every host mounting the same export sees the same
    // /persistent-storage/{id} tree, which is why state lives under the id.
    spec.driver = "local";
    std::string server = env("NFS_SERVER").value_or("");
    std::string path = env("NFS_PATH").value_or("/");
    spec.driver_opts = {{"type", "nfs"}, {"o", fmt::format("addr={},rw,nfsvers=4", server)}, {"device", ":" + path}};
  } else if (!driver.empty()) {
    spec.driver = driver;
  }
  return spec;
}

Result<std::string> SandboxManager::Impl::ensure_image(const SandboxOptions& options) {
  std::string base = options.image;
  if (base.empty()) {
    ImageBuilderOptions bo;
    bo.progress = options_.progress ? ProgressFn(options_.progress) : ProgressFn([](std::string_view) {});
    ImageBuilder builder(docker_, bo);
    CODEACT_TRY(base, builder.ensure_image());
  } else {
    CODEACT_TRY_STATUS(docker_->inspect_image(base));
  }
  if (options.system_packages.empty()) return base;
  return ensure_system_image(base, options.system_packages);
}

Result<std::string> SandboxManager::Impl::ensure_system_image(const std::string& base,
                                                         const std::vector<std::string>& packages) {
  for (const auto& p : packages) CODEACT_TRY_STATUS(validate_system_package(p));
  std::vector<std::string> sorted = packages;
  std::sort(sorted.begin(), sorted.end());
  auto [repo, tag] = split_image_reference(base);
  std::string derived_tag = fmt::format("{}-sys-{}", tag.empty() ? "latest" : tag, sha_hex12(join(sorted, " ")));
  std::string derived = fmt::format("{}:{}", repo, derived_tag);
  if (docker_->inspect_image(derived).ok()) return derived;
  std::string dockerfile = fmt::format(
      "FROM {}\nUSER root\n"
      "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {} "
      "&& rm -rf /var/lib/apt/lists/*\n"
      "USER {}:{}\nLABEL io.codeact.system-packages=\"{}\"\n",
      base, join(sorted, " "), kSandboxUid, kSandboxGid, join(sorted, ","));
  TarWriter tar;
  CODEACT_TRY_STATUS(tar.add_file("Dockerfile", dockerfile));
  BuildImageOptions bo;
  bo.tags = {derived};
  bo.context_tar = tar.finish();
  bo.progress = options_.progress ? ProgressFn(options_.progress) : ProgressFn([](std::string_view) {});
  auto built = docker_->build_image(bo);
  if (!built.ok()) {
    return built.error().with_context(
        fmt::format("installing system packages {} (apt-get needs the Debian mirror to be reachable)", join(sorted, ", ")));
  }
  return derived;
}

Result<ContainerSpec> SandboxManager::Impl::container_spec(const SandboxOptions& options, const std::string& image) {
  CODEACT_TRY(int64_t memory, parse_size(options.memory));
  CODEACT_TRY(int64_t tmp_bytes, parse_size(options.tmp_size));
  if (options.cpus <= 0 || options.cpus > 256) {
    return core::invalid_argument(fmt::format("--cpus {} is out of range (0 < cpus <= 256)", options.cpus));
  }
  bool persistence = options.persistence.value_or([&] {
    auto v = env("ENABLE_PERSISTENCE");
    return !(v && (*v == "false" || *v == "0" || *v == "False" || *v == "no"));
  }());
  const std::string& id = options.id;
  ContainerSpec spec;
  spec.name = container_name(id);
  spec.image = image;
  spec.user = fmt::format("{}:{}", kSandboxUid, kSandboxGid);
  spec.hostname = "sandbox";
  spec.env = {{"CODEACT_SANDBOX_ID", id},
              {"CODEACT_PERSISTENCE", persistence ? "1" : "0"},
              {"CODEACT_DURABILITY", env("CODEACT_DURABILITY").value_or("fsync")},
              {"CODEACT_SOCKET", std::string(kKernelSocketDir) + "/kernel.sock"}};
  spec.labels = {{std::string(kSandboxLabel), "1"},
                 {std::string(kSandboxIdLabel), id},
                 {"io.codeact.network", options.network ? "1" : "0"},
                 {"io.codeact.persistence", persistence ? "1" : "0"},
                 {"io.codeact.python-packages", join(options.python_packages, ",")},
                 {"io.codeact.system-packages", join(options.system_packages, ",")},
                 {"io.codeact.memory", options.memory},
                 {"io.codeact.cpus", fmt::format("{}", options.cpus)}};
  spec.binds.push_back({fmt::format("{}/run/{}", options_.data_dir, id), std::string(kKernelSocketDir), false});
  if (persistence) {
    spec.volumes.push_back({volume_name(id), std::string(kPersistentStoragePath), false, false});
  } else {
    spec.tmpfs[std::string(kPersistentStoragePath)] =
        fmt::format("rw,nosuid,nodev,size={},uid={},gid={},mode=0755", tmp_bytes, kSandboxUid, kSandboxGid);
  }
  spec.tmpfs["/tmp"] = fmt::format("rw,nosuid,nodev,size={},mode=1777", tmp_bytes);
  spec.read_only_rootfs = true;
  spec.cap_drop = {"ALL"};
  spec.security_opt = {"no-new-privileges"};
  spec.pids_limit = options.pids_limit;
  spec.memory_bytes = memory;
  spec.memory_swap_bytes = memory;  // no swap beyond the memory limit
  spec.nano_cpus = static_cast<int64_t>(options.cpus * 1e9);
  spec.network_mode = options.network ? "bridge" : "none";
  spec.init = true;
  spec.stop_timeout_seconds = 5;
  return spec;
}

Result<Json> SandboxManager::Impl::wait_ready(const std::string& id) {
  auto deadline = std::chrono::steady_clock::now() + options_.ready_timeout;
  while (true) {
    auto ch = KernelChannel::connect(socket_path(id), 250ms);
    if (ch.ok()) {
      auto hello = (*ch)->call("hello", Json::object(), {.timeout = 10s});
      if (hello.ok()) return hello;
    }
    auto info = docker_->inspect_container(container_name(id));
    if (!info.ok()) return info.error();
    if (!info->state.running) {
      auto logs = docker_->logs(container_name(id), {.tail = "20"});
      std::string tail = logs.ok() ? logs->stderr_text + logs->stdout_text : "";
      return core::unavailable(fmt::format(
          "sandbox \"{}\": the kernel exited (code {}{}) before answering{}{}", id, info->state.exit_code,
          info->state.oom_killed ? ", killed for running out of memory" : "", tail.empty() ? "" : "; its last output:\n",
          tail));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return core::deadline_exceeded(fmt::format("sandbox \"{}\": the kernel did not answer within {} s of starting", id,
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
  CODEACT_TRY_STATUS(container_spec(options, "validate-only"));
  const std::string& id = options.id;
  std::lock_guard lock(lock_for(id));

  CODEACT_TRY(std::string image, ensure_image(options));

  bool resumed = false;
  auto existing = docker_->inspect_container(container_name(id));
  if (existing.ok()) {
    if (label_or(existing->labels, kSandboxLabel) != "1") {
      return core::already_exists(fmt::format(
          "a container named {} exists but was not created by codeact; remove or rename it", container_name(id)));
    }
    bool network_changed = label_or(existing->labels, "io.codeact.network") != (options.network ? "1" : "0");
    bool image_changed = existing->config_image != image;
    if ((network_changed || image_changed) && (!in.system_packages.empty() || in.network)) {
      // Asked for something the current container cannot give: recreate it; state is on the volume.
      CODEACT_TRY_STATUS(docker_->remove_container(container_name(id), {.force = true}));
    } else {
      resumed = true;
      if (!existing->state.running) CODEACT_TRY_STATUS(docker_->start_container(container_name(id)));
    }
  } else if (existing.error().code() != core::Code::kNotFound) {
    return existing.error();
  }

  if (!resumed) {
    std::error_code ec;
    std::string run_dir = fmt::format("{}/run/{}", options_.data_dir, id);
    fs::create_directories(run_dir, ec);
    if (ec) return core::internal_error(fmt::format("cannot create {}: {}", run_dir, ec.message()));
    // The kernel (uid 1000) creates its socket here.
    if (::chown(run_dir.c_str(), kSandboxUid, kSandboxGid) != 0) ::chmod(run_dir.c_str(), 0777);
    fs::remove(run_dir + "/kernel.sock", ec);
    CODEACT_TRY(ContainerSpec spec, container_spec(options, image));
    if (!spec.volumes.empty()) {
      auto vol = docker_->inspect_volume(volume_name(id));
      if (!vol.ok()) CODEACT_TRY_STATUS(docker_->create_volume(volume_spec(id)));
    }
    CODEACT_TRY_STATUS(docker_->create_container(spec));
    CODEACT_TRY_STATUS(docker_->start_container(container_name(id)));
  }

  CODEACT_TRY(Json hello, wait_ready(id));
  if (!options.python_packages.empty() && !options.network) {
    return no_network_error(id, options.python_packages).with_context(fmt::format("sandbox \"{}\" started", id));
  }
  if (!options.python_packages.empty()) {
    CODEACT_TRY(InstallResult ir, [&]() -> Result<InstallResult> {
      auto r = call_with_recovery(id, "install", Json{{"packages", options.python_packages}, {"timeout", 600}},
                                  std::chrono::minutes(11), nullptr);
      if (!r.ok()) return r.error();
      InstallResult out;
      out.ok = core::json_string(*r, "status") == "ok";
      out.installed = string_list(r->value("installed", Json::array()));
      out.output = core::json_string(*r, "stderr") + core::json_string(*r, "stdout");
      return out;
    }());
    if (!ir.ok) {
      return core::failed_precondition(fmt::format("sandbox \"{}\" started, but installing {} failed{}:\n{}", id,
                                                   join(options.python_packages, ", "),
                                                   options.network ? "" : " (it has no network; start it with --network)",
                                                   ir.output));
    }
  }
  CODEACT_TRY(SandboxInfo info, this->info(id));
  info.resumed = resumed;
  info.cell = core::json_int(hello, "cell");
  info.restore_errors = json_list(hello.value("restore_errors", Json::array()));
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
      return core::not_found(fmt::format("no sandbox \"{}\" (start it with `codeact sandbox start --id {}`)", id, id));
    }
    return c.error();
  }
  if (label_or(c->labels, kSandboxLabel) != "1") {
    return core::not_found(fmt::format("no sandbox \"{}\": container {} was not created by codeact", id, container_name(id)));
  }
  info.container_id = c->id;
  info.image = c->config_image;
  info.status = c->state.status;
  info.running = c->state.running;
  info.network = label_or(c->labels, "io.codeact.network") == "1";
  info.python_packages = split_list(label_or(c->labels, "io.codeact.python-packages"));
  info.system_packages = split_list(label_or(c->labels, "io.codeact.system-packages"));
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
    CODEACT_TRY_STATUS(docker_->restart_container(container_name(id), std::chrono::seconds(5)));
  }
  CODEACT_TRY(Json hello, wait_ready(id));
  CODEACT_TRY(SandboxInfo i, info(id));
  i.cell = core::json_int(hello, "cell");
  i.restore_errors = json_list(hello.value("restore_errors", Json::array()));
  return i;
}

Status SandboxManager::Impl::remove(const std::string& id, bool volume) {
  CODEACT_TRY_STATUS(validate_id(id));
  std::lock_guard lock(lock_for(id));
  auto c = docker_->inspect_container(container_name(id));
  bool had_container = c.ok() && label_or(c->labels, kSandboxLabel) == "1";
  if (c.ok() && !had_container) {
    return core::failed_precondition(fmt::format("container {} was not created by codeact; not removing it", container_name(id)));
  }
  if (had_container) CODEACT_TRY_STATUS(docker_->remove_container(container_name(id), {.force = true}));
  bool had_volume = false;
  if (volume) {
    auto v = docker_->inspect_volume(volume_name(id));
    if (v.ok()) {
      if (label_or(v->labels, kSandboxLabel) != "1") {
        return core::failed_precondition(fmt::format("volume {} was not created by codeact; not removing it", volume_name(id)));
      }
      had_volume = true;
      CODEACT_TRY_STATUS(docker_->remove_volume(volume_name(id), true));
    }
  }
  std::error_code ec;
  fs::remove_all(fmt::format("{}/run/{}", options_.data_dir, id), ec);
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

Result<Json> SandboxManager::Impl::ensure_running(const std::string& id, std::string* notice) {
  std::lock_guard lock(lock_for(id));
  auto c = docker_->inspect_container(container_name(id));
  if (!c.ok()) {
    if (c.error().code() == core::Code::kNotFound) {
      return core::not_found(fmt::format("no sandbox \"{}\" (start it with `codeact sandbox start --id {}`)", id, id));
    }
    return c.error();
  }
  if (!c->state.running) {
    std::string why = c->state.oom_killed ? "it ran out of memory"
                                          : fmt::format("its container had stopped (exit code {})", c->state.exit_code);
    CODEACT_TRY_STATUS(docker_->start_container(container_name(id)));
    CODEACT_TRY(Json hello, wait_ready(id));
    if (notice) {
      *notice = fmt::format("sandbox \"{}\" was not running ({}); it was restarted and its state restored from the "
                            "snapshot of cell {}",
                            id, why, core::json_int(hello, "cell"));
    }
    return hello;
  }
  return wait_ready(id);
}

Result<std::unique_ptr<KernelChannel>> SandboxManager::Impl::open_channel(const std::string& id, std::string* notice) {
  auto ch = KernelChannel::connect(socket_path(id), 200ms);
  if (ch.ok()) return ch;
  CODEACT_TRY_STATUS(ensure_running(id, notice));
  return KernelChannel::connect(socket_path(id), 5s);
}

Result<Json> SandboxManager::Impl::call_with_recovery(const std::string& id, const std::string& op, Json fields,
                                                std::chrono::milliseconds timeout, std::string* notice) {
  CODEACT_TRY_STATUS(validate_id(id));
  CODEACT_TRY(auto ch, open_channel(id, notice));
  auto r = ch->call(op, std::move(fields), {.timeout = timeout});
  if (!r.ok() && r.error().code() == core::Code::kUnavailable) {
    std::string n;
    (void)ensure_running(id, &n);
    return r.error().with_context(fmt::format("sandbox \"{}\": {} failed because the kernel stopped{}{}", id, op,
                                              n.empty() ? "" : "; ", n));
  }
  if (!r.ok()) return r.error().with_context(fmt::format("sandbox \"{}\"", id));
  return r;
}

Result<Json> SandboxManager::Impl::kernel_call(const std::string& id, const std::string& op, Json fields,
                                         std::chrono::milliseconds timeout) {
  return call_with_recovery(id, op, std::move(fields), timeout, nullptr);
}

Result<ExecuteResult> SandboxManager::Impl::execute(const std::string& id, const ExecuteRequest& req) {
  CODEACT_TRY_STATUS(validate_id(id));
  std::string notice;
  CODEACT_TRY(auto ch, open_channel(id, &notice));
  Json fields{{"code", req.code},
              {"timeout", req.timeout_seconds},
              {"persist", req.persist},
              {"max_output_bytes", req.max_output_bytes},
              {"stream", static_cast<bool>(req.on_output)}};
  if (!req.execution_id.empty()) fields["execution_id"] = req.execution_id;
  if (req.variables.is_object() && !req.variables.empty()) fields["variables"] = req.variables;
  KernelCallOptions co;
  if (req.timeout_seconds > 0) {
    co.timeout = std::chrono::milliseconds(static_cast<int64_t>(req.timeout_seconds * 1000)) + options_.kill_grace;
  }
  if (req.on_output) {
    co.on_event = [&](const Json& ev) { req.on_output(core::json_string(ev, "name"), core::json_string(ev, "text")); };
  }
  co.bridge = req.bridge;
  co.cancel = req.cancel;
  auto start = std::chrono::steady_clock::now();
  auto r = ch->call("execute", fields, co);
  if (r.ok()) {
    ExecuteResult out = ExecuteResult::from_json(*r);
    out.notice = notice;
    return out;
  }
  auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  core::Code code = r.error().code();
  if (code != core::Code::kDeadlineExceeded && code != core::Code::kUnavailable && code != core::Code::kCancelled) {
    return r.error().with_context(fmt::format("sandbox \"{}\"", id));
  }
  // The kernel is stuck past the cell's timeout, was cancelled mid-cell, or died: kill what is
  // left and bring it back from its last snapshot, so the sandbox is usable again.
  ExecuteResult out;
  out.execution_id = req.execution_id;
  out.duration_ms = elapsed.count();
  out.kernel_restarted = true;
  std::string why;
  {
    std::lock_guard lock(lock_for(id));
    auto c = docker_->inspect_container(container_name(id));
    if (code == core::Code::kUnavailable && c.ok() && !c->state.running) {
      why = c->state.oom_killed ? "the sandbox ran out of memory (limit reached) and its kernel was killed"
                                : fmt::format("the kernel died (exit code {})", c->state.exit_code);
      CODEACT_TRY_STATUS(docker_->start_container(container_name(id)));
    } else {
      if (code == core::Code::kDeadlineExceeded) {
        why = fmt::format("the cell did not stop within its timeout of {}s and the kernel was killed", req.timeout_seconds);
      } else if (code == core::Code::kCancelled) {
        why = "the cell was cancelled and the kernel was killed";
      } else {
        why = "the kernel stopped answering and was killed";
      }
      CODEACT_TRY_STATUS(docker_->restart_container(container_name(id), std::chrono::seconds(0)));
    }
  }
  CODEACT_TRY(Json hello, wait_ready(id));
  int64_t cell = core::json_int(hello, "cell");
  out.cell = cell;
  out.timed_out = code == core::Code::kDeadlineExceeded;
  out.error = CellError{code == core::Code::kDeadlineExceeded ? "TimeoutError"
                        : code == core::Code::kCancelled     ? "CancelledError"
                                                             : "KernelDied",
                        fmt::format("{}; it was restarted from the snapshot of cell {}, so changes this cell made "
                                    "after that are lost",
                                    why, cell),
                        ""};
  out.notice = out.error->message;
  return out;
}

Result<BashResult> SandboxManager::Impl::bash(const std::string& id, const std::string& script, double timeout_seconds,
                                        const std::string& execution_id) {
  auto timeout = timeout_seconds > 0
                     ? std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000)) + options_.kill_grace
                     : std::chrono::milliseconds(0);
  Json fields{{"script", script}, {"timeout", timeout_seconds}};
  if (!execution_id.empty()) fields["execution_id"] = execution_id;
  CODEACT_TRY(Json r, call_with_recovery(id, "bash", fields, timeout, nullptr));
  BashResult b;
  b.exit_code = core::json_int(r, "exit_code");
  b.stdout_text = core::json_string(r, "stdout");
  b.stderr_text = core::json_string(r, "stderr");
  b.timed_out = core::json_bool(r, "timed_out");
  b.duration_ms = core::json_int(r, "duration_ms");
  b.replayed = core::json_bool(r, "replayed");
  return b;
}

Result<Json> SandboxManager::Impl::variables(const std::string& id) {
  return call_with_recovery(id, "vars", Json::object(), 60s, nullptr);
}

Result<Json> SandboxManager::Impl::variable(const std::string& id, const std::string& name) {
  return call_with_recovery(id, "get", Json{{"name", name}}, 60s, nullptr);
}

Result<Json> SandboxManager::Impl::clear(const std::string& id) {
  return call_with_recovery(id, "clear", Json::object(), 60s, nullptr);
}

Result<std::vector<FileEntry>> SandboxManager::Impl::list_files(const std::string& id, const std::string& path) {
  Json fields = Json::object();
  if (!path.empty()) fields["path"] = path;
  CODEACT_TRY(Json r, call_with_recovery(id, "files.list", fields, 60s, nullptr));
  std::vector<FileEntry> out;
  for (const auto& f : r.value("files", Json::array())) {
    out.push_back({core::json_string(f, "path"), core::json_int(f, "size"), core::json_number(f, "mtime")});
  }
  return out;
}

Result<std::string> SandboxManager::Impl::read_file(const std::string& id, const std::string& path) {
  CODEACT_TRY(Json r, call_with_recovery(id, "files.read", Json{{"path", path}}, 120s, nullptr));
  return core::base64_decode(core::json_string(r, "data_b64"));
}

Status SandboxManager::Impl::write_file(const std::string& id, const std::string& path, std::string_view data) {
  CODEACT_TRY_STATUS(call_with_recovery(id, "files.write", Json{{"path", path}, {"data_b64", core::base64_encode(data)}}, 120s, nullptr));
  return core::ok_status();
}

Result<InstallResult> SandboxManager::Impl::install(const std::string& id, const std::vector<std::string>& packages,
                                              bool system) {
  if (packages.empty()) return core::invalid_argument("no packages given to install");
  InstallResult out;
  if (system) {
    for (const auto& p : packages) CODEACT_TRY_STATUS(validate_system_package(p));
    CODEACT_TRY(SandboxInfo current, info(id));
    std::vector<std::string> all = current.system_packages;
    for (const auto& p : packages) {
      if (std::find(all.begin(), all.end(), p) == all.end()) all.push_back(p);
    }
    auto c = docker_->inspect_container(container_name(id));
    if (!c.ok()) return c.error();
    SandboxOptions opts;
    opts.id = id;
    opts.system_packages = all;
    opts.network = current.network;
    opts.memory = label_or(c->labels, "io.codeact.memory", "512m");
    opts.cpus = std::stod(label_or(c->labels, "io.codeact.cpus", "1"));
    opts.persistence = label_or(c->labels, "io.codeact.persistence", "1") == "1";
    opts.python_packages = current.python_packages;
    // Recreate on the derived image; the state is on the volume, the kernel restores it.
    {
      std::lock_guard lock(lock_for(id));
      CODEACT_TRY_STATUS(docker_->remove_container(container_name(id), {.force = true}));
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
  CODEACT_TRY(Json r, call_with_recovery(id, "install", Json{{"packages", packages}, {"timeout", 600}},
                                         std::chrono::minutes(11), nullptr));
  out.ok = core::json_string(r, "status") == "ok";
  out.installed = string_list(r.value("installed", Json::array()));
  out.output = core::json_string(r, "stdout") + core::json_string(r, "stderr");
  return out;
}

Status SandboxManager::Impl::register_functions(const std::string& id, const Json& functions) {
  CODEACT_TRY_STATUS(call_with_recovery(id, "bridge.register", Json{{"functions", functions}}, 60s, nullptr));
  return core::ok_status();
}

Status SandboxManager::Impl::define(const std::string& id, const std::string& source) {
  CODEACT_TRY_STATUS(call_with_recovery(id, "define", Json{{"source", source}}, 120s, nullptr));
  return core::ok_status();
}

Result<std::vector<VolumeInfo>> SandboxManager::Impl::list_volumes() {
  return docker_->list_volumes({{"label", {std::string(kSandboxLabel) + "=1"}}});
}

Status SandboxManager::Impl::remove_volume(const std::string& id) {
  CODEACT_TRY_STATUS(validate_id(id));
  auto c = docker_->inspect_container(container_name(id));
  if (c.ok()) {
    return core::failed_precondition(
        fmt::format("sandbox \"{}\" still uses volume {}; run `codeact sandbox rm {} --volume` instead", id, volume_name(id), id));
  }
  auto v = docker_->inspect_volume(volume_name(id));
  if (!v.ok()) {
    if (v.error().code() == core::Code::kNotFound) return core::not_found(fmt::format("no volume {} (sandbox \"{}\")", volume_name(id), id));
    return v.error();
  }
  if (label_or(v->labels, kSandboxLabel) != "1") {
    return core::failed_precondition(fmt::format("volume {} was not created by codeact; not removing it", volume_name(id)));
  }
  return docker_->remove_volume(volume_name(id), true);
}

// ---- SandboxManager: forwards to Impl -------------------------------------------------------

SandboxManager::SandboxManager(std::shared_ptr<DockerClient> docker, SandboxManagerOptions options)
    : impl_(std::make_unique<Impl>(std::move(docker), std::move(options))) {}
SandboxManager::~SandboxManager() = default;

Result<SandboxInfo> SandboxManager::start(const SandboxOptions& o) { return impl_->start(o); }
Status SandboxManager::stop(const std::string& id) { return impl_->stop(id); }
Result<SandboxInfo> SandboxManager::restart(const std::string& id) { return impl_->restart(id); }
Status SandboxManager::remove(const std::string& id, bool volume) { return impl_->remove(id, volume); }
Result<SandboxInfo> SandboxManager::info(const std::string& id) { return impl_->info(id); }
Result<std::vector<SandboxInfo>> SandboxManager::list() { return impl_->list(); }
Result<std::vector<std::string>> SandboxManager::cleanup(bool volumes) { return impl_->cleanup(volumes); }
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
Result<Json> SandboxManager::clear(const std::string& id) { return impl_->clear(id); }
Result<std::vector<FileEntry>> SandboxManager::list_files(const std::string& id, const std::string& path) {
  return impl_->list_files(id, path);
}
Result<std::string> SandboxManager::read_file(const std::string& id, const std::string& path) {
  return impl_->read_file(id, path);
}
Status SandboxManager::write_file(const std::string& id, const std::string& path, std::string_view data) {
  return impl_->write_file(id, path, data);
}
Result<InstallResult> SandboxManager::install(const std::string& id,
                                              const std::vector<std::string>& packages, bool system) {
  return impl_->install(id, packages, system);
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
Result<std::vector<VolumeInfo>> SandboxManager::list_volumes() { return impl_->list_volumes(); }
Status SandboxManager::remove_volume(const std::string& id) { return impl_->remove_volume(id); }
DockerClient& SandboxManager::docker() { return impl_->docker(); }
std::string SandboxManager::socket_path(const std::string& id) const { return impl_->socket_path(id); }
VolumeSpec SandboxManager::volume_spec(const std::string& id) const { return impl_->volume_spec(id); }

}  // namespace codeact::sandbox
