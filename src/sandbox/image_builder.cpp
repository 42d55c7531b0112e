#include "codeact/sandbox/image_builder.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>

#include "codeact/core/config.hpp"
#include "codeact/core/log.hpp"
#include "codeact/core/sha256.hpp"
#include "codeact/core/strings.hpp"
#include "codeact/core/subprocess.hpp"
#include "codeact/sandbox/tar_archive.hpp"
#include "embedded_recipe_internal.hpp"

namespace codeact::sandbox {

using core::Result;
using core::Sha256;
using core::Status;

namespace {

constexpr std::string_view kDefaultBaseImage = "debian:bookworm-slim";
// The kernel package's directory, in the recipe's file names and in the build context.
constexpr std::string_view kKernelPackageDir = "codeact_kernel";

std::string file_or_empty(const ImageRecipe& recipe, const std::string& name) {
  auto it = recipe.files.find(name);
  return it == recipe.files.end() ? std::string() : it->second;
}

bool is_not_found(const core::Error& e) { return e.code() == core::Code::kNotFound; }

}  // namespace

std::string_view build_method_name(BuildMethod method) {
  switch (method) {
    case BuildMethod::kAuto:
      return "auto";
    case BuildMethod::kBaseImage:
      return "base-image";
    case BuildMethod::kDebootstrap:
      return "debootstrap";
  }
  return "auto";
}

// ---- recipe -----------------------------------------------------------------------------------

const ImageRecipe& ImageRecipe::embedded() {
  static const ImageRecipe recipe = [] {
    ImageRecipe r;
    for (const auto& f : internal::embedded_files()) {
      r.files[f.name] = std::string(reinterpret_cast<const char*>(f.data), f.size);
    }
    return r;
  }();
  return recipe;
}

std::string ImageRecipe::content_hash() const {
  Sha256 sha;
  sha.field("codeact-sandbox-image/1");
  for (const auto& [name, content] : files) {  // std::map: sorted by name
    sha.field(name);
    sha.field(content);
  }
  return sha.hex();
}

std::string ImageRecipe::rootfs_hash(std::string_view suite) const {
  Sha256 sha;
  sha.field("codeact-rootfs/1");
  sha.field(suite);
  sha.field(file_or_empty(*this, "bootstrap.sh"));
  // Only the package set matters, not comments or order.
  std::vector<std::string> list = packages();
  std::sort(list.begin(), list.end());
  for (const auto& p : list) sha.field(p);
  return sha.hex();
}

std::vector<std::string> ImageRecipe::packages() const {
  std::vector<std::string> out;
  std::string text = file_or_empty(*this, "packages.txt");
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    line = line.substr(0, line.find('#'));
    size_t b = line.find_first_not_of(" \t\r");
    if (b == std::string::npos) continue;
    size_t e = line.find_last_not_of(" \t\r");
    out.push_back(line.substr(b, e - b + 1));
  }
  return out;
}

// ---- builder ----------------------------------------------------------------------------------

ImageBuilder::ImageBuilder(std::shared_ptr<DockerClient> docker, ImageBuilderOptions options,
                           ImageRecipe recipe)
    : docker_(std::move(docker)), options_(std::move(options)), recipe_(std::move(recipe)) {}

std::string ImageBuilder::short_hash() const { return recipe_.content_hash().substr(0, 12); }

std::string ImageBuilder::image_tag() const { return options_.repository + ":" + short_hash(); }

void ImageBuilder::progress(std::string_view line) const {
  if (options_.progress) {
    options_.progress(line);
  } else {
    core::log().info("image build: {}", line);
  }
}

Result<ImageInfo> ImageBuilder::find_image() {
  auto info = docker_->inspect_image(image_tag());
  if (!info.ok() && is_not_found(info.error())) {
    return core::not_found(fmt::format(
        "the sandbox image {} does not exist (recipe or kernel changed, or never built) — run "
        "`codeact image build`",
        image_tag()));
  }
  return info;
}

Result<std::string> ImageBuilder::ensure_image() {
  auto found = find_image();
  if (found.ok()) return image_tag();
  if (!is_not_found(found.error())) return std::move(found).error();
  CODEACT_TRY(BuildReport report, build(false));
  return report.tag;
}

Result<std::string> ImageBuilder::build_context(const std::string& apt_packages) const {
  TarWriter tar;
  for (const char* name : {"Dockerfile", "entrypoint.sh"}) {
    auto it = recipe_.files.find(name);
    if (it == recipe_.files.end()) {
      return core::internal_error(fmt::format("sandbox image recipe has no {}", name));
    }
    bool executable = std::string_view(name).ends_with(".sh");
    CODEACT_TRY_STATUS(tar.add_file(name, it->second, executable ? 0755 : 0644));
  }
  // The kernel package: every recipe file under codeact_kernel/.
  const std::string kernel_prefix = std::string(kKernelPackageDir) + "/";
  if (!recipe_.files.contains(kernel_prefix + "__main__.py")) {
    return core::internal_error(
        fmt::format("sandbox image recipe has no {}__main__.py (the kernel)", kernel_prefix));
  }
  CODEACT_TRY_STATUS(tar.add_directory(kKernelPackageDir));
  for (const auto& [name, content] : recipe_.files) {
    if (name.starts_with(kernel_prefix)) CODEACT_TRY_STATUS(tar.add_file(name, content, 0644));
  }
  // The host's trust store, so `pip install uv` works behind a TLS-inspecting proxy. Not part of
  // the recipe hash: it changes how uv is downloaded, not what the image is.
  std::string ca_bundle;
  for (const auto& candidate : {core::getenv_string("PIP_CERT").value_or(""),
                                core::getenv_string("SSL_CERT_FILE").value_or(""),
                                std::string("/etc/ssl/certs/ca-certificates.crt")}) {
    if (candidate.empty()) continue;
    std::ifstream in(candidate, std::ios::binary);
    if (!in) continue;
    ca_bundle.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (!ca_bundle.empty()) break;
  }
  CODEACT_TRY_STATUS(tar.add_directory("build"));
  CODEACT_TRY_STATUS(tar.add_file("build/ca.crt", ca_bundle, 0644));
  CODEACT_TRY_STATUS(tar.add_file("build/apt-packages", apt_packages, 0644));
  return tar.finish();
}

Result<BuildMethod> ImageBuilder::choose_method(std::string* base_image) {
  std::string forced = core::getenv_string("CODEACT_BASE_IMAGE").value_or("");
  std::string base = !options_.base_image.empty() ? options_.base_image
                     : !forced.empty()            ? forced
                                                  : std::string(kDefaultBaseImage);
  BuildMethod method = options_.method;
  if (method == BuildMethod::kAuto) {
    if (!options_.base_image.empty() || !forced.empty()) {
      method = BuildMethod::kBaseImage;
    } else {
      auto local = docker_->inspect_image(base);
      if (local.ok()) {
        method = BuildMethod::kBaseImage;
      } else if (is_not_found(local.error())) {
        progress(
            fmt::format("no {} image here; building the Debian root file system with "
                        "debootstrap (set CODEACT_BASE_IMAGE to use a registry image)",
                        base));
        method = BuildMethod::kDebootstrap;
      } else {
        return std::move(local).error();
      }
    }
  }
  if (method == BuildMethod::kBaseImage) {
    auto local = docker_->inspect_image(base);
    if (!local.ok()) {
      if (!is_not_found(local.error())) return std::move(local).error();
      progress(fmt::format("pulling base image {}", base));
      auto pulled = docker_->pull_image(base, options_.progress, options_.cancel);
      if (!pulled.ok()) {
        return core::Error(pulled.error().code(),
                           fmt::format("cannot get the base image {} for the sandbox image: {}. "
                                       "Without a registry, unset CODEACT_BASE_IMAGE and run as "
                                       "root so codeact builds it with debootstrap.",
                                       base, pulled.error().message()));
      }
    }
    *base_image = base;
  }
  return method;
}

Result<std::string> ImageBuilder::ensure_rootfs(bool* built) {
  *built = false;
  std::string tag =
      fmt::format("{}:{}", kRootfsRepository, recipe_.rootfs_hash(options_.suite).substr(0, 12));
  auto existing = docker_->inspect_image(tag);
  if (existing.ok()) {
    progress(fmt::format("root file system {} is present", tag));
    return tag;
  }
  if (!is_not_found(existing.error())) return std::move(existing).error();

  if (::geteuid() != 0) {
    return core::failed_precondition(fmt::format(
        "building the sandbox image without a registry needs debootstrap, which needs root: run "
        "`sudo codeact image build` once (it creates {}), or set CODEACT_BASE_IMAGE=debian:{}-slim "
        "where a registry is reachable",
        tag, options_.suite));
  }
  auto debootstrap = core::find_program("debootstrap");
  if (!debootstrap && ::access("/usr/sbin/debootstrap", X_OK) == 0)
    debootstrap = "/usr/sbin/debootstrap";
  if (!debootstrap) {
    return core::failed_precondition(
        "debootstrap is not installed: run `apt-get install debootstrap` (scripts/setup.sh "
        "installs it), or set CODEACT_BASE_IMAGE to build from a registry image");
  }

  namespace fs = std::filesystem;
  std::string parent = options_.work_dir.empty() ? "/var/tmp" : options_.work_dir;
  std::error_code ec;
  fs::create_directories(parent, ec);
  std::string pattern = parent + "/codeact-rootfs-XXXXXX";
  if (!::mkdtemp(pattern.data())) {
    return core::failed_precondition(
        fmt::format("cannot create a work directory under {}: {}", parent, std::strerror(errno)));
  }
  const std::string work = pattern;
  for (const char* name : {"bootstrap.sh", "packages.txt"}) {
    std::ofstream(work + "/" + name, std::ios::binary) << file_or_empty(recipe_, name);
  }
  const std::string tar_path = work + "/rootfs.tar";

  progress(fmt::format("debootstrap: building a Debian {} root file system in {} (a few minutes)",
                       options_.suite, work));
  core::ProcessOptions popts;
  popts.argv = {"bash",   work + "/bootstrap.sh", work, options_.suite, options_.debian_mirror,
                tar_path, work + "/packages.txt"};
  popts.stderr_to_stdout = true;
  std::string path_env = core::getenv_string("PATH").value_or("/usr/bin:/bin");
  popts.env["PATH"] = "/usr/local/sbin:/usr/sbin:/sbin:" + path_env;
  popts.env["LC_ALL"] = "C";
  CODEACT_TRY(core::Subprocess proc, core::Subprocess::spawn(popts));

  std::deque<std::string> tail;
  std::string pending;
  char buf[4096];
  bool cancelled = false;
  while (true) {
    if (options_.cancel && options_.cancel->cancelled()) {
      proc.kill(SIGTERM);
      cancelled = true;
    }
    pollfd pfd{proc.stdout_fd(), POLLIN, 0};
    int rc = ::poll(&pfd, 1, 200);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) continue;
    ssize_t n = ::read(proc.stdout_fd(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    for (size_t nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      progress(line);
      tail.push_back(line);
      if (tail.size() > 25) tail.pop_front();
    }
  }
  if (!pending.empty()) {
    progress(pending);
    tail.push_back(pending);
  }
  CODEACT_TRY(int exit_code, proc.wait());
  auto cleanup = [&] {
    // bootstrap.sh removes the root file system itself (unmounting first); only the tar and
    // the scripts are left here. Never delete a rootfs that may still have mounts inside.
    if (fs::exists(work + "/rootfs", ec)) {
      core::log().warn("image build: leaving {} in place (its rootfs was not cleaned up)", work);
      return;
    }
    fs::remove_all(work, ec);
  };
  if (cancelled) {
    cleanup();
    return core::cancelled("sandbox image build cancelled during debootstrap");
  }
  if (exit_code != 0) {
    cleanup();
    std::string last;
    for (const auto& l : tail) last += "\n  " + l;
    return core::internal_error(
        fmt::format("debootstrap of Debian {} from {} failed (exit {}); last output:{}",
                    options_.suite, options_.debian_mirror, exit_code, last));
  }

  progress(fmt::format("importing the root file system as {}", tag));
  auto [repo, rtag] = split_image_reference(tag);
  ImportImageOptions import;
  import.repo = repo;
  import.tag = rtag;
  import.tar_file = tar_path;
  import.message = "codeact sandbox root file system (debootstrap " + options_.suite + ")";
  import.changes = {"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    "ENV LANG=C.UTF-8", "CMD [\"/bin/bash\"]"};
  import.progress = [this](std::string_view line) { progress("import: " + std::string(line));
};
import.cancel = options_.cancel;
auto imported = docker_->import_image(import);
cleanup();
if (!imported.ok()) return std::move(imported).error();
*built = true;
return tag;
}  // namespace codeact::sandbox

namespace {

// One image build per host at a time: two builders (a CLI and a test, two workers) would both
// debootstrap and import the same 1 GB root file system. Held for the builder's lifetime.
class BuildLock {
 public:
  ~BuildLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the flock
  }
  Status acquire(const std::string& dir, const core::CancelToken* cancel,
                 const std::function<void(std::string_view)>& progress) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::string path = dir + "/codeact-image-build.lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);  // another user's lock file
    if (fd_ < 0) return core::ok_status();  // no lock possible: build unguarded
    bool told = false;
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (!told) {
        progress(fmt::format("waiting for another codeact image build to finish (lock {})", path));
        told = true;
      }
      if (cancel && cancel->cancelled())
        return core::cancelled("image build cancelled while waiting");
      ::usleep(500 * 1000);
    }
    return core::ok_status();
  }

 private:
  int fd_ = -1;
};

}  // namespace

Result<BuildReport> ImageBuilder::build(bool force) {
  auto start = std::chrono::steady_clock::now();
  BuildReport report;
  report.tag = image_tag();
  BuildLock lock;
  CODEACT_TRY_STATUS(lock.acquire(options_.work_dir.empty() ? "/var/tmp" : options_.work_dir,
                                  options_.cancel, [this](std::string_view l) { progress(l); }));
  if (!force) {
    auto found = find_image();
    if (found.ok()) {
      report.image_id = found->id;
      report.size_bytes = found->size;
      report.method = BuildMethod::kAuto;  // not recorded in the image
      progress(fmt::format("sandbox image {} is up to date", report.tag));
      report.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - start);
      return report;
    }
    if (!is_not_found(found.error())) return std::move(found).error();
  }

  std::string base;
  CODEACT_TRY(BuildMethod method, choose_method(&base));
  report.method = method;
  std::string apt_packages;
  if (method == BuildMethod::kDebootstrap) {
    CODEACT_TRY(base, ensure_rootfs(&report.rootfs_built));
  } else {
    apt_packages = core::join(recipe_.packages(), " ");
  }

  progress(fmt::format("building {} on {} ({})", report.tag, base, build_method_name(method)));
  CODEACT_TRY(std::string context, build_context(apt_packages));
  BuildImageOptions build;
  build.tags = {report.tag, options_.repository + ":latest"};
  build.build_args = {{"BASE_IMAGE", base}};
  // One label: the classic builder adds a committed step per label.
  build.labels = {{std::string(kRecipeHashLabel), recipe_.content_hash()}};
  build.network_mode = options_.build_network_mode;
  build.no_cache = options_.no_cache;
  build.context_tar = std::move(context);
  build.progress = [this](std::string_view line) { progress(line); };
  build.cancel = options_.cancel;
  CODEACT_TRY(BuildResult built, docker_->build_image(build));

  report.image_id = built.image_id;
  report.built = true;
  auto info = docker_->inspect_image(report.tag);
  if (info.ok()) report.size_bytes = info->size;
  report.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  progress(fmt::format("built {} ({}, {:.0f} MB) in {:.1f} s", report.tag, report.image_id,
                       static_cast<double>(report.size_bytes) / 1e6,
                       static_cast<double>(report.duration.count()) / 1000.0));
  return report;
}

}  // namespace codeact::sandbox
