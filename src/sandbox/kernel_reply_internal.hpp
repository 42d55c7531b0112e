// Reading lists out of kernel replies, which are lenient JSON: a missing or mistyped field is an
// empty list (the kernel's protocol documents every field; old kernels omit newer ones).
#pragma once

#include <string>
#include <vector>

#include "codeact/core/json.hpp"

namespace codeact::sandbox {

inline std::vector<std::string> string_list(const core::Json& j) {
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const auto& v : j) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

inline std::vector<core::Json> json_list(const core::Json& j) {
  std::vector<core::Json> out;
  if (j.is_array()) {
    for (const auto& v : j) out.push_back(v);
  }
  return out;
}

}  // namespace codeact::sandbox
