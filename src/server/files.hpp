// A sandbox's files over HTTP: downloads confined to /output (the kernel resolves symlinks; a
// path that resolves elsewhere is refused), with Content-Type, Content-Disposition and single
// byte ranges; uploads into /output.
#pragma once

#include <string>

#include "codeact/core/result.hpp"
#include "codeact/sandbox/sandbox_backend.hpp"
#include "codeact/server/http.hpp"

namespace codeact::server {

// "/output/<rest>" for "output/<rest>", "/output/<rest>", "<rest>" (relative to /output);
// PermissionDenied for "..", NUL, a backslash, or an absolute path elsewhere.
core::Result<std::string> output_path(const std::string& path);
// By extension; "application/octet-stream" when unknown.
std::string content_type_of(const std::string& path);

// GET: the file's bytes (?inline=1 shows images inline; Range: bytes=a-b gives 206).
HttpResponse download(sandbox::SandboxBackend& sandboxes, const std::string& sandbox_id,
                      const std::string& path, const HttpRequest& request);
// PUT: writes `data` to output_path(path); 201 {path, size}.
HttpResponse upload(sandbox::SandboxBackend& sandboxes, const std::string& sandbox_id,
                    const std::string& path, const std::string& data);

}  // namespace codeact::server
