#include "private_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace codeact::server {

core::Status write_private_file(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  bool written = fd >= 0 && ::fchmod(fd, 0600) == 0;
  for (size_t off = 0; written && off < text.size();) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n <= 0)
      written = false;
    else
      off += static_cast<size_t>(n);
  }
  if (fd >= 0 && ::close(fd) != 0) written = false;
  if (!written) return core::unavailable("cannot write " + tmp);
  fs::rename(tmp, path, ec);
  if (ec) return core::unavailable("cannot replace " + path + ": " + ec.message());
  return core::ok_status();
}

core::Result<core::Json> read_state_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return core::not_found(path + ": no such file");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  return core::parse_json(text, path);
}

}  // namespace codeact::server
