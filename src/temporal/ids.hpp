// Random request ids (idempotency keys for the server), not for workflow code.
#pragma once

#include <string>

namespace codeact::temporal::internal {

std::string random_uuid();
// Formats 128 random bits as an RFC 4122 version-4 UUID.
std::string format_uuid(uint64_t hi, uint64_t lo);

}  // namespace codeact::temporal::internal
