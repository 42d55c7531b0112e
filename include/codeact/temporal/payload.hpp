// Payloads: every value crossing the wire is a Json value. Json null travels as `binary/null`,
// everything else as `json/plain` (UTF-8 JSON), the encodings of Temporal's default data
// converter, so Python, Go and TypeScript clients read and write them as plain values.
// `json/protobuf` payloads are read as JSON too; `binary/plain` bytes arrive as a Json string.
#pragma once

#include <vector>

#include "codeact/core/json.hpp"

namespace codeact::temporal {

using core::Json;
// Arguments of a workflow, activity, signal or query: one Json value per payload.
using Args = std::vector<Json>;

}  // namespace codeact::temporal
