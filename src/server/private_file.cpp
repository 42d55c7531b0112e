#include "private_file.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace codeact::server {

core::Status write_private_file(const std::string& path, const std::string& text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  // A temporary file of its own (mkstemp: mode 0600 from the first byte on), so two writers
  // never write into one.
  std::string tmp = path + ".XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  bool written = fd >= 0 && ::fchmod(fd, 0600) == 0;
  for (size_t off = 0; written && off < text.size();) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n <= 0)
      written = false;
    else
      off += static_cast<size_t>(n);
  }
  if (fd >= 0 && ::close(fd) != 0) written = false;
  if (!written) {
    if (fd >= 0) fs::remove(tmp, ec);
    return core::unavailable("cannot write " + tmp);
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove(tmp, ec);
    return core::unavailable("cannot replace " + path + ": " + why);
  }
  return core::ok_status();
}

core::Result<core::Json> read_state_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return core::not_found(path + ": no such file");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  return core::parse_json(text, path);
}

}  // namespace codeact::server
