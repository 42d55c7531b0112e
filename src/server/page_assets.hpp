// The chat page's files (src/server/page/), compiled in by cmake/embed_files.cmake.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "codeact/server/http.hpp"

namespace codeact::server {

struct EmbeddedFile {
  const char* name;
  const unsigned char* data;
  size_t size;
};
const std::vector<EmbeddedFile>& embedded_files();

// The asset `name` ("index.html", "app.js", ...) with its Content-Type and the page's
// Content-Security-Policy; 404 when there is none.
HttpResponse page_asset(const std::string& name);

}  // namespace codeact::server
