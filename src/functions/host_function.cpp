#include "codeact/functions/host_function.hpp"

namespace codeact::functions {

HostFunction raw_host_function(
    std::string name, std::string signature, std::string doc,
    std::function<core::Result<Json>(const Json& args, const Json& kwargs)> call) {
  return HostFunction{std::move(name), std::move(signature), std::move(doc), std::move(call)};
}

}  // namespace codeact::functions
