// ImageBuilder: builds (or finds) the sandbox image `codeact-sandbox:<hash>`.
//
// The recipe (src/sandbox/image/: packages.txt, bootstrap.sh, Dockerfile, entrypoint.sh) and the
// kernel package (src/sandbox/kernel/codeact_kernel/) are embedded in the library at build time, so
// the binary builds the image from anywhere. The tag is the first 12 hex digits of a SHA-256 over
// every recipe file's name and content: changing the kernel or the recipe changes the tag, and
// ensure_image() builds the new image on next use. The image is also tagged `:latest` and labelled
// `io.codeact.recipe-hash=<full hash>`.
//
// Two ways, one recipe (the same Dockerfile builds the top layer in both):
//   - from a base image (`debian:bookworm-slim` present locally, or $CODEACT_BASE_IMAGE, which is
//     pulled when missing): the Dockerfile apt-installs packages.txt on it;
//   - without a registry: debootstrap (on the host, as root, in a tmpfs) makes a minimal bookworm
//     root file system, apt-get installs packages.txt inside it, `docker import` makes it
//     `codeact-rootfs:<bootstrap hash>` (kept, so a kernel change does not redo debootstrap), and
//     the Dockerfile builds on that.
// Every step and every line of debootstrap/build output goes to the progress callback.
//
// Builds are serialized per host by a file lock (<work_dir>/codeact-image-build.lock): a second
// builder waits, then finds the image the first one built. An ImageBuilder object itself is not
// thread-safe; use one per thread.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "codeact/core/cancel.hpp"
#include "codeact/core/result.hpp"
#include "codeact/sandbox/docker_client.hpp"

namespace codeact::sandbox {

inline constexpr std::string_view kSandboxRepository = "codeact-sandbox";
inline constexpr std::string_view kRootfsRepository = "codeact-rootfs";
inline constexpr std::string_view kRecipeHashLabel = "io.codeact.recipe-hash";
// Where things are inside the image (contracts with the kernel and the sandbox manager).
inline constexpr std::string_view kKernelPathInImage = "/opt/codeact/codeact_kernel";
inline constexpr std::string_view kPersistentStoragePath = "/persistent-storage";
inline constexpr std::string_view kKernelSocketDir = "/run/codeact";
inline constexpr int kSandboxUid = 1000;
inline constexpr int kSandboxGid = 1000;

// The files the image is made from: name -> content. Names used: "packages.txt",
// "bootstrap.sh", "Dockerfile", "entrypoint.sh", and "codeact_kernel/<file>.py" for every file of
// the kernel package.
struct ImageRecipe {
  std::map<std::string, std::string> files;

  // The files compiled into this binary.
  static const ImageRecipe& embedded();
  // Hex SHA-256 over the (sorted) names and contents of every file.
  std::string content_hash() const;
  // Hex SHA-256 over what the root filesystem depends on (packages.txt, bootstrap.sh, suite).
  std::string rootfs_hash(std::string_view suite) const;
  // Non-comment, non-empty lines of packages.txt.
  std::vector<std::string> packages() const;
};

enum class BuildMethod {
  kAuto,         // base image if available locally (or $CODEACT_BASE_IMAGE), else debootstrap
  kBaseImage,    // FROM a Debian bookworm image + apt-get
  kDebootstrap,  // host debootstrap + docker import
};

struct ImageBuilderOptions {
  std::string repository = std::string(kSandboxRepository);
  BuildMethod method = BuildMethod::kAuto;
  // Base image for kBaseImage. "" = $CODEACT_BASE_IMAGE, else "debian:bookworm-slim".
  std::string base_image;
  std::string suite = "bookworm";
  std::string debian_mirror = "http://deb.debian.org/debian";
  // Network for the build's RUN steps (apt-get on a base image, `pip install uv`).
  // "" = daemon default (bridge). uv is skipped with a warning when PyPI is unreachable.
  std::string build_network_mode;
  // Scratch space for the root file system tar (~0.7 GB) and the build lock. "" = /var/tmp.
  std::string work_dir;
  bool no_cache = false;
  ProgressFn progress;  // null = log at info level
  const core::CancelToken* cancel = nullptr;
};

struct BuildReport {
  std::string tag;  // "codeact-sandbox:0123456789ab"
  std::string image_id;
  BuildMethod method = BuildMethod::kAuto;  // the one actually used
  bool built = false;                       // false when the image already existed
  bool rootfs_built = false;
  std::chrono::milliseconds duration{0};
  int64_t size_bytes = 0;
};

class ImageBuilder {
 public:
  explicit ImageBuilder(std::shared_ptr<DockerClient> docker, ImageBuilderOptions options = {},
                        ImageRecipe recipe = ImageRecipe::embedded());

  // "0123456789ab": first 12 hex digits of the recipe's content hash.
  std::string short_hash() const;
  // "codeact-sandbox:0123456789ab"
  std::string image_tag() const;

  // The image's tag, building it first only if it does not exist.
  core::Result<std::string> ensure_image();
  // Builds (even if present when `force`), reporting what happened.
  core::Result<BuildReport> build(bool force = false);
  // The image if it exists (NotFound with the hint "run `codeact image build`" otherwise).
  core::Result<ImageInfo> find_image();

  // The build context tar for the Dockerfile (exposed for tests): the Dockerfile, entrypoint.sh,
  // the codeact_kernel/ package, build/apt-packages (what to apt-get install, "" on
  // codeact-rootfs) and build/ca.crt (this host's CA bundle, for downloading uv behind a
  // TLS-inspecting proxy).
  core::Result<std::string> build_context(const std::string& apt_packages = "") const;

 private:
  core::Result<BuildMethod> choose_method(std::string* base_image);
  core::Result<std::string> ensure_rootfs(bool* built);
  void progress(std::string_view line) const;

  std::shared_ptr<DockerClient> docker_;
  ImageBuilderOptions options_;
  ImageRecipe recipe_;
};

std::string_view build_method_name(BuildMethod method);

}  // namespace codeact::sandbox
