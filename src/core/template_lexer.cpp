// Lexer of the Jinja-subset engine: source text -> tokens, with whitespace control applied here so
// the parser and renderer never see stripped whitespace.
#include <algorithm>
#include <cctype>

#include "template_internal.hpp"

namespace codeact::core::template_internal {

Error template_error(const std::string& name, Position pos, const std::string& message) {
  return invalid_argument("template \"" + name + "\": line " + std::to_string(pos.line) +
                          ", column " + std::to_string(pos.column) + ": " + message);
}

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  Lexer(std::string_view src, const std::string& name, const TemplateOptions& options)
      : src_(src), name_(name), options_(options) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  Result<std::vector<Token>> run() {
    size_t i = 0;
    bool strip_leading = false;  // the previous tag ended with '-'
    bool trim_newline = false;   // trim_blocks after the previous block tag or comment
    while (i <= src_.size()) {
      size_t j = find_tag(i);
      std::string_view text = src_.substr(i, (j == std::string_view::npos ? src_.size() : j) - i);
      size_t text_offset = i;
      char tag = j == std::string_view::npos ? 0 : src_[j + 1];
      char modifier = (j != std::string_view::npos && j + 2 < src_.size()) ? src_[j + 2] : 0;
      if (strip_leading) {
        size_t k = 0;
        while (k < text.size() && is_space(text[k])) ++k;
        text.remove_prefix(k);
        text_offset += k;
      } else if (trim_newline) {
        if (!text.empty() && text[0] == '\n') {
          text.remove_prefix(1);
          ++text_offset;
        } else if (text.size() >= 2 && text[0] == '\r' && text[1] == '\n') {
          text.remove_prefix(2);
          text_offset += 2;
        }
      }
      if (j != std::string_view::npos) {
        if (modifier == '-') {
          while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
        } else if (options_.lstrip_blocks && modifier != '+' && (tag == '%' || tag == '#')) {
          size_t k = text.size();
          while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t')) --k;
          bool at_line_start = line_start_of(text_offset + k) == text_offset + k;
          if (at_line_start) text = text.substr(0, k);
        }
      } else if (!options_.keep_trailing_newline && !text.empty() &&
                 text_offset + text.size() == src_.size()) {
        if (text.back() == '\n') {
          text.remove_suffix(1);
          if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
        }
      }
      if (!text.empty())
        tokens_.push_back({TokenKind::kText, std::string(text), pos_at(text_offset)});
      if (j == std::string_view::npos) break;

      size_t body = j + 2 + ((modifier == '-' || modifier == '+') ? 1 : 0);
      bool stripped_end = false;
      if (tag == '#') {
        size_t close = src_.find("#}", body);
        if (close == std::string_view::npos) {
          return template_error(name_, pos_at(j), "unclosed comment, expected '#}'");
        }
        stripped_end = close > body && src_[close - 1] == '-';
        i = close + 2;
      } else {
        auto end = lex_tag(j, body, tag == '{');
        if (!end.ok()) return std::move(end).error();
        i = end->first;
        stripped_end = end->second;
        if (tag == '%' && is_raw_open()) {
          auto raw_end = lex_raw(i, stripped_end);
          if (!raw_end.ok()) return std::move(raw_end).error();
          i = raw_end->first;
          stripped_end = raw_end->second;
        }
      }
      strip_leading = stripped_end;
      trim_newline = options_.trim_blocks && (tag == '%' || tag == '#');
    }
    tokens_.push_back({TokenKind::kEnd, "", pos_at(src_.size())});
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    size_t i = from;
    while (true) {
      size_t j = src_.find('{', i);
      if (j == std::string_view::npos || j + 1 >= src_.size()) return std::string_view::npos;
      char c = src_[j + 1];
      if (c == '{' || c == '%' || c == '#') return j;
      i = j + 1;
    }
  }

  size_t line_start_of(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    return *(it - 1);
  }

  Position pos_at(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    return {static_cast<int>(line), static_cast<int>(offset - *(it - 1) + 1)};
  }

  // Lexes the inside of a {{ }} or {% %} tag starting at `i`; returns the offset after the tag and
  // whether it ended with '-'.
  Result<std::pair<size_t, bool>> lex_tag(size_t open, size_t i, bool variable) {
    tokens_.push_back({variable ? TokenKind::kVariableBegin : TokenKind::kBlockBegin,
                       variable ? "{{" : "{%", pos_at(open)});
    const char close_char = variable ? '}' : '%';
    int depth = 0;
    while (true) {
      while (i < src_.size() && is_space(src_[i])) ++i;
      if (i >= src_.size()) {
        return template_error(
            name_, pos_at(open),
            std::string("unclosed tag, expected '") + (variable ? "}}" : "%}") + "'");
      }
      char c = src_[i];
      if (depth == 0) {
        if (c == '-' && i + 2 < src_.size() && src_[i + 1] == close_char && src_[i + 2] == '}') {
          tokens_.push_back(
              {variable ? TokenKind::kVariableEnd : TokenKind::kBlockEnd, "", pos_at(i)});
          return std::make_pair(i + 3, true);
        }
        if (c == close_char && i + 1 < src_.size() && src_[i + 1] == '}') {
          tokens_.push_back(
              {variable ? TokenKind::kVariableEnd : TokenKind::kBlockEnd, "", pos_at(i)});
          return std::make_pair(i + 2, false);
        }
      }
      Position p = pos_at(i);
      if (is_name_start(c)) {
        size_t k = i;
        while (k < src_.size() && is_name_char(src_[k])) ++k;
        tokens_.push_back({TokenKind::kName, std::string(src_.substr(i, k - i)), p});
        i = k;
      } else if (is_digit(c)) {
        size_t k = i;
        bool is_float = false;
        while (k < src_.size() && (is_digit(src_[k]) || src_[k] == '_')) ++k;
        if (k + 1 < src_.size() && src_[k] == '.' && is_digit(src_[k + 1])) {
          is_float = true;
          ++k;
          while (k < src_.size() && is_digit(src_[k])) ++k;
        }
        if (k < src_.size() && (src_[k] == 'e' || src_[k] == 'E')) {
          size_t m = k + 1;
          if (m < src_.size() && (src_[m] == '+' || src_[m] == '-')) ++m;
          if (m < src_.size() && is_digit(src_[m])) {
            is_float = true;
            k = m;
            while (k < src_.size() && is_digit(src_[k])) ++k;
          }
        }
        std::string text(src_.substr(i, k - i));
        text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
        tokens_.push_back({is_float ? TokenKind::kFloat : TokenKind::kInteger, text, p});
        i = k;
      } else if (c == '\'' || c == '"') {
        std::string value;
        size_t k = i + 1;
        bool closed = false;
        while (k < src_.size()) {
          char d = src_[k];
          if (d == c) {
            closed = true;
            break;
          }
          if (d == '\\' && k + 1 < src_.size()) {
            char e = src_[k + 1];
            switch (e) {
              case 'n':
                value += '\n';
                break;
              case 't':
                value += '\t';
                break;
              case 'r':
                value += '\r';
                break;
              case '\\':
                value += '\\';
                break;
              case '\'':
                value += '\'';
                break;
              case '"':
                value += '"';
                break;
              case '0':
                value += '\0';
                break;
              default:
                value += '\\';
                value += e;
                break;
            }
            k += 2;
            continue;
          }
          value += d;
          ++k;
        }
        if (!closed) return template_error(name_, p, "unterminated string literal");
        tokens_.push_back({TokenKind::kString, std::move(value), p});
        i = k + 1;
      } else {
        static const char* const kTwo[] = {"==", "!=", "<=", ">=", "//", "**"};
        std::string op;
        for (const char* two : kTwo) {
          if (src_.substr(i, 2) == two) {
            op = two;
            break;
          }
        }
        if (op.empty()) {
          if (std::string_view("+-*/%~|.,:()[]{}<>=").find(c) == std::string_view::npos) {
            return template_error(name_, p, std::string("unexpected character '") + c + "'");
          }
          op = std::string(1, c);
          if (c == '(' || c == '[' || c == '{') ++depth;
          if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        }
        tokens_.push_back({TokenKind::kOperator, op, p});
        i += op.size();
      }
    }
  }

  // True when the tokens just lexed are `{% raw %}`.
  bool is_raw_open() const {
    size_t n = tokens_.size();
    return n >= 3 && tokens_[n - 1].kind == TokenKind::kBlockEnd &&
           tokens_[n - 2].kind == TokenKind::kName && tokens_[n - 2].value == "raw" &&
           tokens_[n - 3].kind == TokenKind::kBlockBegin;
  }

  // After `{% raw %}` at `i`: emits the verbatim text up to `{% endraw %}`.
  Result<std::pair<size_t, bool>> lex_raw(size_t i, bool strip_leading) {
    Position open = tokens_[tokens_.size() - 3].pos;
    tokens_.resize(tokens_.size() - 3);
    size_t k = i;
    while (true) {
      size_t j = src_.find("{%", k);
      if (j == std::string_view::npos) {
        return template_error(name_, open, "unclosed {% raw %}, expected '{% endraw %}'");
      }
      size_t m = j + 2;
      bool strip_before = false;
      if (m < src_.size() && (src_[m] == '-' || src_[m] == '+')) {
        strip_before = src_[m] == '-';
        ++m;
      }
      while (m < src_.size() && is_space(src_[m])) ++m;
      if (src_.substr(m, 6) != "endraw") {
        k = j + 2;
        continue;
      }
      m += 6;
      while (m < src_.size() && is_space(src_[m])) ++m;
      bool strip_after = false;
      if (m < src_.size() && src_[m] == '-') {
        strip_after = true;
        ++m;
      }
      if (src_.substr(m, 2) != "%}") {
        k = j + 2;
        continue;
      }
      std::string_view text = src_.substr(i, j - i);
      size_t offset = i;
      if (strip_leading) {
        while (!text.empty() && is_space(text.front())) {
          text.remove_prefix(1);
          ++offset;
        }
      }
      if (strip_before) {
        while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
      }
      if (!text.empty()) tokens_.push_back({TokenKind::kText, std::string(text), pos_at(offset)});
      return std::make_pair(m + 2, strip_after);
    }
  }

  std::string_view src_;
  const std::string& name_;
  const TemplateOptions& options_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

Result<std::vector<Token>> tokenize(std::string_view source, const std::string& name,
                                    const TemplateOptions& options) {
  return Lexer(source, name, options).run();
}

}  // namespace codeact::core::template_internal
