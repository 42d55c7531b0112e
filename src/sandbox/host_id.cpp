// Host ids (host_id.hpp).
#include "codeact/sandbox/host_id.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include "codeact/core/config.hpp"

namespace codeact::sandbox {

std::string default_host_id() {
  if (auto env = core::getenv_string("CODEACT_HOST_ID"); env && !env->empty()) return *env;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0') return name;
  return "localhost";
}

core::Status validate_host_id(std::string_view host) {
  const bool fits = !host.empty() && host.size() <= 64 &&
                    host.find_first_not_of(
                        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                        "0123456789._-") == std::string_view::npos;
  if (fits) return core::ok_status();
  return core::invalid_argument(fmt::format(
      "host id \"{}\" must be 1 to 64 letters, digits, '.', '_' or '-' (like a host name)", host));
}

}  // namespace codeact::sandbox
