// How the fuzz targets read their input. Seeds stay readable text: an input that carries several
// documents separates them with a line holding only "%%" (split_parts), and where bytes arrive in
// pieces (a socket, an HTTP body) the piece sizes come from the input itself (ChunkSizes), so one
// input always replays the same way.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace codeact::fuzz {

inline constexpr std::string_view kPartSeparator = "\n%%\n";

// The documents of `input`, split at each "\n%%\n". Always at least one (maybe empty).
inline std::vector<std::string_view> split_parts(std::string_view input) {
  std::vector<std::string_view> parts;
  while (true) {
    size_t at = input.find(kPartSeparator);
    if (at == std::string_view::npos) break;
    parts.push_back(input.substr(0, at));
    input.remove_prefix(at + kPartSeparator.size());
  }
  parts.push_back(input);
  return parts;
}

// A deterministic sequence of piece sizes (1..max) seeded by the bytes of `seed`: the same input
// splits the same way every time, different inputs split differently.
class ChunkSizes {
 public:
  explicit ChunkSizes(std::string_view seed, size_t max = 64) : max_(max) {
    for (unsigned char c : seed) state_ = (state_ ^ c) * 0x100000001b3ull;  // FNV-1a
  }
  size_t next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    // Mostly small pieces (split tokens, CRLFs and UTF-8 sequences), sometimes a whole buffer.
    return (state_ % 8 == 0) ? max_ * 16 : 1 + state_ % max_;
  }

  // `text` cut into pieces of the next sizes.
  std::vector<std::string_view> split(std::string_view text) {
    std::vector<std::string_view> pieces;
    while (!text.empty()) {
      size_t n = std::min(next(), text.size());
      pieces.push_back(text.substr(0, n));
      text.remove_prefix(n);
    }
    return pieces;
  }

 private:
  uint64_t state_ = 0xcbf29ce484222325ull;
  size_t max_;
};

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace codeact::fuzz
