// Writing a small state file of the server that only its user may read (the page's sign-ins,
// the sandbox sweeper's journal).
#pragma once

#include <string>

#include "codeact/core/result.hpp"

namespace codeact::server {

// Replaces `path` with `text`: written to `path`.tmp with mode 0600 from the first byte on, then
// renamed over it, so a reader sees the old contents or the new, never a part. Creates the
// parent directories. Unavailable naming the file when it cannot.
core::Status write_private_file(const std::string& path, const std::string& text);

}  // namespace codeact::server
