// FileLock: an exclusive advisory lock (flock) on a file, held while the object lives. Processes
// that take it on the same path run one at a time (e.g. two commands starting the same local
// server). The file is created when missing and never removed. A lock that cannot be taken (an
// unwritable directory) is not held, silently: callers use it to avoid races, not for safety.
#pragma once

#include <string>

namespace codeact::core {

class FileLock {
 public:
  explicit FileLock(const std::string& path);  // blocks until the lock is held
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

}  // namespace codeact::core
