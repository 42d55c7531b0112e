#include "codeact/sandbox/shared_storage.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace codeact::sandbox {

namespace fs = std::filesystem;

core::Result<std::optional<std::string>> shared_dir_from(const core::EnvLookup& env) {
  std::optional<std::string> dir = env("CODEACT_SHARED_DIR");
  if (!dir || dir->empty()) return std::optional<std::string>();
  if (dir->front() != '/') {
    return core::invalid_argument(fmt::format(
        "CODEACT_SHARED_DIR must be an absolute path (the directory every host mounts at the same "
        "place), got \"{}\"",
        *dir));
  }
  while (dir->size() > 1 && dir->back() == '/') dir->pop_back();
  return dir;
}

std::string shared_sandbox_dir(const std::string& root, const std::string& id) {
  return root + "/" + id;
}

std::map<std::string, std::string> shared_volume_options(const std::string& root,
                                                         const std::string& id) {
  return {{"type", "none"}, {"o", "bind,nosuid,nodev"}, {"device", shared_sandbox_dir(root, id)}};
}

core::Status prepare_shared_sandbox_dir(const std::string& root, const std::string& id, int uid,
                                        int gid) {
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return core::failed_precondition(fmt::format(
        "CODEACT_SHARED_DIR {} is not a directory on this host: mount the shared storage there "
        "(every host at the same path), or unset CODEACT_SHARED_DIR for local volumes",
        root));
  }
  const std::string dir = shared_sandbox_dir(root, id);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return core::failed_precondition(
        fmt::format("cannot create {}: {}", dir, std::strerror(errno)));
  }
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return core::failed_precondition(
        fmt::format("{} is not a directory: the shared storage holds something else there", dir));
  }
  if ((static_cast<int>(st.st_uid) != uid || static_cast<int>(st.st_gid) != gid) &&
      ::chown(dir.c_str(), uid, gid) != 0) {
    return core::failed_precondition(fmt::format(
        "cannot give {} to the sandbox user ({}:{}): {} (run the worker as root, or create it "
        "owned by {}:{})",
        dir, uid, gid, std::strerror(errno), uid, gid));
  }
  return core::ok_status();
}

core::Result<bool> remove_shared_sandbox_dir(const std::string& root, const std::string& id) {
  const std::string dir = shared_sandbox_dir(root, id);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir, ec))) return false;
  fs::remove_all(dir, ec);
  if (ec) return core::internal_error(fmt::format("cannot remove {}: {}", dir, ec.message()));
  return true;
}

std::string shared_owner_dir(const std::string& root, const std::string& id) {
  return root + "/.owners/" + id;
}

Placement newest_placement(const std::string& root, const std::string& id) {
  Placement newest;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(shared_owner_dir(root, id), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.size() > 18 ||
        name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const int64_t n = std::stoll(name);
    if (n > newest.epoch) newest.epoch = n;
  }
  if (newest.epoch > 0) {
    std::ifstream in(shared_owner_dir(root, id) + "/" + std::to_string(newest.epoch));
    std::getline(in, newest.host);
  }
  return newest;
}

core::Result<Placement> take_placement(const std::string& root, const std::string& id,
                                       const std::string& host) {
  const std::string dir = shared_owner_dir(root, id);
  for (const std::string& d : {root + "/.owners", dir}) {
    if (::mkdir(d.c_str(), 0755) != 0 && errno != EEXIST)
      return core::internal_error(fmt::format("cannot create {}: {}", d, std::strerror(errno)));
  }
  for (int attempt = 0; attempt < 100; ++attempt) {
    Placement next{newest_placement(root, id).epoch + 1, host};
    const std::string path = dir + "/" + std::to_string(next.epoch);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) continue;  // another host took this number: the next one
    if (fd < 0)
      return core::internal_error(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
    const std::string text = host + "\n";
    const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    const bool synced = ::fsync(fd) == 0;
    ::close(fd);
    if (!written || !synced)
      return core::internal_error(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    return next;
  }
  return core::internal_error(fmt::format("{}: too many hosts placing the sandbox at once", dir));
}

}  // namespace codeact::sandbox
