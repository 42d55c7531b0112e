// Small file reads every layer needs, written once. Thread-safe.
#pragma once

#include <string>

namespace codeact::core {

// The first line of the file at `path`, without its newline; "" when the file is missing,
// unreadable or empty (for the one-value files codeact keeps: a pid, a port, an address).
std::string read_first_line(const std::string& path);

}  // namespace codeact::core
