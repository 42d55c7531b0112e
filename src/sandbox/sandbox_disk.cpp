#include <fcntl.h>
#include <fmt/format.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "codeact/core/files.hpp"
#include "codeact/core/subprocess.hpp"
#include "sandbox_disk_internal.hpp"

namespace codeact::sandbox::disk {
namespace {

namespace fs = std::filesystem;

// Closes a file descriptor at scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

std::string canonical(const std::string& path) {
  std::error_code ec;
  auto p = fs::canonical(path, ec);
  return ec ? path : p.string();
}

core::Error loop_error(const std::string& what, int err) {
  if (err == EPERM || err == EACCES) {
    return core::permission_denied(fmt::format(
        "{}: {} (attaching a loop device for the sandbox's disk limit needs root; run codeact as "
        "root, or start the sandbox with --disk none)",
        what, std::strerror(err)));
  }
  return core::internal_error(fmt::format("{}: {}", what, std::strerror(err)));
}

}  // namespace

core::Status create_image(const std::string& path, int64_t bytes, int uid, int gid) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec))) {
    return core::already_exists(fmt::format("disk image {} exists already", path));
  }
  fs::create_directories(fs::path(path).parent_path(), ec);
  std::string tmp = path + ".new";
  fs::remove(tmp, ec);
  {
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
      return core::internal_error(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
    Fd guard(fd);
    if (::ftruncate(fd, bytes) != 0) {
      return core::internal_error(
          fmt::format("cannot size {} to {} bytes: {}", tmp, bytes, std::strerror(errno)));
    }
  }
  // -m 0: no blocks reserved for root (the sandbox user gets the whole limit);
  // root_owner: the sandbox user owns the file system's root, as it owned the image's directory.
  auto r = core::run_process({"mkfs.ext4", "-q", "-F", "-m", "0", "-L", "codeact", "-E",
                              fmt::format("root_owner={}:{},lazy_itable_init=1", uid, gid), tmp},
                             std::chrono::minutes(2));
  if (!r.ok()) {
    fs::remove(tmp, ec);
    return r.error().with_context("formatting the sandbox disk (mkfs.ext4, from e2fsprogs)");
  }
  if (r->exit_code != 0) {
    fs::remove(tmp, ec);
    return core::internal_error(fmt::format("mkfs.ext4 {} failed (exit {}): {}", tmp, r->exit_code,
                                            r->stderr_text + r->stdout_text));
  }
  fs::rename(tmp, path, ec);
  if (ec)
    return core::internal_error(fmt::format("cannot rename {} to {}: {}", tmp, path, ec.message()));
  return core::ok_status();
}

core::Result<int64_t> image_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return core::not_found(fmt::format("disk image {}: {}", path, std::strerror(errno)));
  }
  return static_cast<int64_t>(st.st_size);
}

std::optional<std::string> attached_image(const std::string& device) {
  std::string name = fs::path(device).filename().string();
  std::string backing = core::read_first_line("/sys/block/" + name + "/loop/backing_file");
  if (backing.empty()) return std::nullopt;
  return backing;
}

core::Result<std::optional<std::string>> find_loop_device(const std::string& image) {
  const std::string want = canonical(image);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/block", ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("loop", 0) != 0) continue;
    auto backing = attached_image("/dev/" + name);
    if (backing && canonical(*backing) == want) return std::optional<std::string>("/dev/" + name);
  }
  if (ec) return core::internal_error(fmt::format("cannot list /sys/block: {}", ec.message()));
  return std::optional<std::string>();
}

core::Result<std::string> attach(const std::string& image) {
  CODEACT_TRY(auto existing, find_loop_device(image));
  if (existing) return *existing;
  int file = ::open(image.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (file < 0) return loop_error(fmt::format("cannot open disk image {}", image), errno);
  Fd file_guard(file);
  int control = ::open("/dev/loop-control", O_RDWR | O_CLOEXEC);
  if (control < 0) return loop_error("cannot open /dev/loop-control", errno);
  Fd control_guard(control);
  // Another process may take the free device between GET_FREE and CONFIGURE: try again.
  for (int attempt = 0; attempt < 20; ++attempt) {
    int n = ::ioctl(control, LOOP_CTL_GET_FREE);
    if (n < 0) return loop_error("no free loop device (LOOP_CTL_GET_FREE)", errno);
    std::string device = fmt::format("/dev/loop{}", n);
    int dev = ::open(device.c_str(), O_RDWR | O_CLOEXEC);
    if (dev < 0) return loop_error(fmt::format("cannot open {}", device), errno);
    Fd dev_guard(dev);
    loop_config config{};
    config.fd = static_cast<uint32_t>(file);
    std::string canon = canonical(image);
    std::strncpy(reinterpret_cast<char*>(config.info.lo_file_name), canon.c_str(),
                 LO_NAME_SIZE - 1);
    if (::ioctl(dev, LOOP_CONFIGURE, &config) == 0) return device;
    int err = errno;
    if (err == EBUSY) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    if (err == EINVAL || err == ENOTTY) {
      // Kernels before 5.8 have no LOOP_CONFIGURE.
      if (::ioctl(dev, LOOP_SET_FD, file) == 0) {
        loop_info64 info{};
        std::strncpy(reinterpret_cast<char*>(info.lo_file_name), canon.c_str(), LO_NAME_SIZE - 1);
        (void)::ioctl(dev, LOOP_SET_STATUS64, &info);
        return device;
      }
      err = errno;
      if (err == EBUSY) continue;
    }
    return loop_error(fmt::format("cannot attach {} to {}", image, device), err);
  }
  return core::unavailable(
      fmt::format("cannot attach {}: every free loop device was taken meanwhile", image));
}

core::Status detach(const std::string& device) {
  int dev = ::open(device.c_str(), O_RDWR | O_CLOEXEC);
  if (dev < 0) {
    if (errno == ENOENT || errno == ENXIO) return core::ok_status();
    return loop_error(fmt::format("cannot open {}", device), errno);
  }
  Fd guard(dev);
  // The file system may still be unmounting right after its container stopped: retry briefly.
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (::ioctl(dev, LOOP_CLR_FD, 0) == 0) return core::ok_status();
    if (errno == ENXIO) return core::ok_status();  // not attached
    if (errno != EBUSY) return loop_error(fmt::format("cannot detach {}", device), errno);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return core::unavailable(fmt::format("{} is still in use; it was not detached", device));
}

}  // namespace codeact::sandbox::disk
