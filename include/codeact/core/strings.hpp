// String helpers every layer needs, written once: trimming, joining, splitting, indenting,
// abbreviating, UTF-8 validation, byte sizes. Pure functions on bytes (no locale); thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace codeact::core {

// `s` without leading and trailing ASCII white space (space, \t, \n, \v, \f, \r).
std::string trim(std::string_view s);
// The items with `separator` between them: join({"a", "b"}, ", ") == "a, b"; "" for none.
std::string join(const std::vector<std::string>& items, std::string_view separator);
// The pieces of `s` between `separator`s: split("a,,b", ',') == {"a", "", "b"}; {} for "".
std::vector<std::string> split(std::string_view s, char separator);
// Every line of `text` prefixed with `pad` (empty lines stay empty), each ending in "\n"; a final
// "\n" ends the last line, it does not start another: indent("a\n\nb", "  ") == "  a\n\n  b\n".
std::string indent(std::string_view text, std::string_view pad);
// `s` when it has at most `max` bytes, otherwise its start and "..." in `max` bytes in all (for
// quoting a value or body in an error message). The cut never splits a UTF-8 sequence, so valid
// UTF-8 stays valid. REQUIRES: max >= 3.
std::string abbreviate(std::string_view s, size_t max);
// `s` as Python's repr() of a str writes it, so generated Python and rendered prompts read as
// Python would print them: in single quotes, or double quotes when `s` has a ' and no ";
// backslash, the quote used, \n, \r, \t escaped, other control bytes as \xNN; bytes >= 0x80
// kept as they are (UTF-8 text stays readable).
std::string python_repr_string(std::string_view s);
// True when `data` is valid UTF-8 (so it can travel as a JSON string): no overlong forms, no
// surrogates, nothing above U+10FFFF, no truncated sequence.
bool is_valid_utf8(std::string_view data);
// A byte count as people read it, in powers of 1024: "512 B", "1.5 KiB", "200.0 MiB", "2.1 GiB".
std::string byte_size_text(int64_t bytes);

}  // namespace codeact::core
