#include "ids.hpp"

#include <cstdint>
#include <cstdio>
#include <random>

namespace codeact::temporal::internal {

std::string format_uuid(uint64_t hi, uint64_t lo) {
  hi = (hi & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;
  lo = (lo & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;
  char buf[37];
  std::snprintf(buf, sizeof(buf), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFFF),
                static_cast<unsigned>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFULL));
  return buf;
}

std::string random_uuid() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return format_uuid(rng(), rng());
}

}  // namespace codeact::temporal::internal
