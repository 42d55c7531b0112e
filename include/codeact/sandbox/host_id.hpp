// Host ids: the name of the machine (its Docker engine) a sandbox runs on, among several hosts
// behind one Temporal (docs/deploy.md). A worker's --host-id; containers are labelled with it
// (SandboxManagerOptions::host_id), and durable runs route their sandbox's work by it
// (durable/sandbox_host.hpp).
#pragma once

#include <string>
#include <string_view>

#include "codeact/core/result.hpp"

namespace codeact::sandbox {

// $CODEACT_HOST_ID, else the machine's host name (gethostname), else "localhost".
std::string default_host_id();

// InvalidArgument unless `host` can name a host: 1 to 64 of A-Z a-z 0-9 . _ - (a host name is).
core::Status validate_host_id(std::string_view host);

}  // namespace codeact::sandbox
