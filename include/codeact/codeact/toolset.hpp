// Deprecated forwarding header: the sandbox functions moved to the `functions` layer
// (codeact/functions/sandbox_functions.hpp, namespace codeact::functions, class SandboxFunctions).
// It keeps bench/mcp/mcp_bench.cpp building until that file includes the new header; remove it
// then. New code must not include it.
#pragma once

#include "codeact/functions/sandbox_functions.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"  // the old header brought it in

namespace codeact::codeact {

using CodeActToolset = functions::SandboxFunctions;
using CodeActToolsetOptions = functions::SandboxFunctionsOptions;
using functions::host_function;

}  // namespace codeact::codeact
