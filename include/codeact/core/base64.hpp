// Base64 (RFC 4648, standard alphabet, padded): how binary data travels in JSON.
#pragma once

#include <string>
#include <string_view>

#include "codeact/core/result.hpp"
#include "codeact/core/strings.hpp"  // is_valid_utf8, which lived here before

namespace codeact::core {

std::string base64_encode(std::string_view data);
// Ignores line breaks; InvalidArgument on any other character outside the alphabet.
Result<std::string> base64_decode(std::string_view text);

}  // namespace codeact::core
