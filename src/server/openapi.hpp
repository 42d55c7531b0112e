// GET /openapi.json (OpenAPI 3.1, written to match api.cpp's handlers; tests/server checks every
// answer against it) and GET /docs, a readable page of it rendered here (no CDN, no script).
#pragma once

#include "codeact/core/json.hpp"
#include "codeact/server/http.hpp"

namespace codeact::server {

const core::Json& openapi_document();
HttpResponse docs_page();

}  // namespace codeact::server
