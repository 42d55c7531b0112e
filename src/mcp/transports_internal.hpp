// Constructors of the three transports (make_transport picks one).
#pragma once

#include <memory>

#include "codeact/core/http_client.hpp"
#include "codeact/mcp/transport.hpp"

namespace codeact::mcp {

std::unique_ptr<McpTransport> make_stdio_transport(const McpServerConfig& config);
std::unique_ptr<McpTransport> make_streamable_http_transport(const McpServerConfig& config);
// Over `http` instead of core::default_transport() (tests and tests/fuzz answer from memory).
std::unique_ptr<McpTransport> make_streamable_http_transport(
    const McpServerConfig& config, std::shared_ptr<core::HttpTransport> http);
std::unique_ptr<McpTransport> make_sse_transport(const McpServerConfig& config);

}  // namespace codeact::mcp
