// The image recipe files and the kernel, compiled into the library by embed_files.cmake.
#pragma once

#include <cstddef>
#include <vector>

namespace codeact::sandbox::internal {

struct EmbeddedFile {
  const char* name;
  const unsigned char* data;
  size_t size;
};

const std::vector<EmbeddedFile>& embedded_files();

}  // namespace codeact::sandbox::internal
