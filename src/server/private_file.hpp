// The server's small state files, which only its user may read (the page's sign-ins, the
// sandbox sweeper's journal).
#pragma once

#include <string>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::server {

// Replaces `path` with `text`: written to a temporary file of its own beside it (mode 0600 from
// the first byte on), then renamed over it, so a reader sees the old contents or the new, never
// a part, and two writers at once each replace it whole. Creates the
// parent directories. Unavailable naming the file when it cannot.
core::Status write_private_file(const std::string& path, const std::string& text);

// The JSON in state file `path`: NotFound when there is none yet, InvalidArgument (from
// core::parse_json, naming the file) when it is not JSON.
core::Result<core::Json> read_state_file(const std::string& path);

}  // namespace codeact::server
