// Tar archives in memory: what the Docker Engine API speaks for build contexts, image imports and
// copying files into and out of containers (PUT/GET /containers/{id}/archive).
//
// The writer produces POSIX ustar with PAX extended headers for names, link targets or sizes that
// do not fit ustar fields. The reader understands ustar, PAX ('x', 'g') and GNU long-name ('L',
// 'K') headers, which covers what Docker and GNU tar emit. Regular files, directories and symbolic
// links are represented; other entry types (devices, FIFOs, hard links) are read with their
// metadata and no data. Values of these types are plain data: thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/core/result.hpp"

namespace codeact::sandbox {

enum class TarEntryType { kFile, kDirectory, kSymlink, kHardLink, kOther };

struct TarEntry {
  // Relative path, '/'-separated, without a leading "./" or "/"; directories without a
  // trailing '/'.
  std::string path;
  TarEntryType type = TarEntryType::kFile;
  std::string data;         // contents of a kFile
  std::string link_target;  // kSymlink / kHardLink
  uint32_t mode = 0644;     // permission bits (07777)
  uint32_t uid = 0;
  uint32_t gid = 0;
  int64_t mtime = 0;  // seconds since the epoch
};

// Builds an archive in memory. Entries are written in the order added.
class TarWriter {
 public:
  // REQUIRES: path is relative and has no ".." component (InvalidArgument otherwise).
  core::Status add(const TarEntry& entry);
  core::Status add_file(std::string_view path, std::string_view data, uint32_t mode = 0644,
                        uint32_t uid = 0, uint32_t gid = 0);
  core::Status add_directory(std::string_view path, uint32_t mode = 0755, uint32_t uid = 0,
                             uint32_t gid = 0);
  core::Status add_symlink(std::string_view path, std::string_view target, uint32_t uid = 0,
                           uint32_t gid = 0);

  // Appends the end-of-archive marker and returns the archive; the writer is empty afterwards.
  std::string finish();
  size_t size() const { return out_.size(); }

 private:
  void write_header(const TarEntry& entry, std::string_view data);
  std::string out_;
};

// Convenience: an archive holding `entries`.
core::Result<std::string> write_tar(const std::vector<TarEntry>& entries);

// Parses a whole archive. DataLoss when a header checksum is wrong or the archive is truncated.
core::Result<std::vector<TarEntry>> read_tar(std::string_view archive);

}  // namespace codeact::sandbox
