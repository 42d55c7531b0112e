// Internals of the Jinja-subset engine (include/codeact/core/template.hpp): tokens (lexer),
// syntax tree (parser) and the parsed Program the renderer walks. Used only by template_*.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/core/template.hpp"

namespace codeact::core::template_internal {

struct Position {
  int line = 1;
  int column = 1;
};

// Lexer output. Text between tags is one kText token; a tag is its begin token, the expression
// tokens inside it and its end token.
enum class TokenKind {
  kText,
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,
  kInteger,
  kFloat,
  kOperator,  // value holds the operator text: "==", "(", "|", ...
  kEnd,       // end of source
};

struct Token {
  TokenKind kind;
  std::string value;  // text, name, string contents (unescaped), number text or operator
  Position pos;
};

// Splits `source` into tokens, applying whitespace control ({%- -%} {{- -}} {#- -#}), comments,
// {% raw %} and the trim/lstrip/trailing-newline options.
Result<std::vector<Token>> tokenize(std::string_view source, const std::string& name,
                                    const TemplateOptions& options);

// ---------------------------------------------------------------------------------------------
// Syntax tree

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,  // literal
    kName,     // name
    kAttr,     // args[0].name
    kIndex,    // args[0][args[1]]
    kCall,     // args[0](args[1..], kwargs)
    kFilter,   // args[0] | name(args[1..], kwargs)
    kTest,     // args[0] is [not] name(args[1..])
    kNeg,      // -args[0]
    kNot,      // not args[0]
    kBinary,   // args[0] name args[1]; name is the operator ("+", "==", "in", "not in", "~", ...)
    kAnd,
    kOr,
    kCond,  // args[0] if args[1] else args[2] (args[2] may be absent)
    kList,  // [args...]
    kDict,  // {args[0]: args[1], args[2]: args[3], ...}
  };
  Kind kind;
  Position pos;
  Json literal;
  std::string name;
  bool negated = false;  // `is not`
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

struct Node;
using Body = std::vector<Node>;

struct Node {
  enum class Kind { kText, kOutput, kIf, kFor, kSet };
  Kind kind;
  Position pos;
  std::string text;  // kText
  ExprPtr expr;      // kOutput value, kFor iterable, kSet value (null for a block set)
  // kIf: one (condition, body) per if/elif; else_body for else.
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;                         // kFor body, kSet block body
  Body else_body;                    // kIf else, kFor else (runs when nothing was iterated)
  std::vector<std::string> targets;  // kFor loop variables, kSet names
  ExprPtr filter;                    // kFor `if` condition
};

struct Program {
  std::string name;
  TemplateOptions options;
  Body body;
};

// Builds the tree from tokens.
Result<std::shared_ptr<Program>> parse_tokens(std::vector<Token> tokens, std::string name,
                                              TemplateOptions options);

// Error helper: InvalidArgument `template "<name>": line L, column C: <message>`.
Error template_error(const std::string& name, Position pos, const std::string& message);

// ---------------------------------------------------------------------------------------------
// Rendering

// A value during rendering: a Json value, or undefined (a missing variable, attribute or key;
// `hint` says which, for strict-mode errors).
struct Value {
  Json json;
  bool undefined = false;
  std::string hint;

  static Value undef(std::string hint) {
    Value v;
    v.undefined = true;
    v.hint = std::move(hint);
    return v;
  }
};

// What one render may make in all (TemplateOptions::render_budget_bytes), so that a template
// that grows without bound (a loop that doubles a string, `indent(2147483647)`, a join with a huge
// separator, loops in loops) ends in an error instead of taking the machine's memory or time.
// Counted in bytes of the text and values it makes: every evaluated expression as kStepWeight
// plus its value's json_weight, every printed text, every loop pass as kStepWeight plus the
// json_weight of its `loop` variable (about 360); so 16 MiB is at most 262144 steps and under
// 40000 loop passes. A prompt listing a thousand tools uses a few MiB.
inline constexpr size_t kStepWeight = 64;

class RenderBudget {
 public:
  explicit RenderBudget(size_t total) : total_(total), left_(total) {}
  // Spends `bytes`; false, spending nothing, when that is more than is left.
  bool spend(size_t bytes) {
    if (bytes > left_) return false;
    left_ -= bytes;
    return true;
  }
  size_t left() const { return left_; }
  size_t total() const { return total_; }

 private:
  size_t total_;
  size_t left_;
};

// Bytes a value takes, roughly: what spending it against a RenderBudget counts.
size_t json_weight(const Json& value);
// python_repr cut to about 100 characters (for messages and hints, which may hold any value).
std::string short_repr(const Json& value);

// Everything a filter, test or method needs to know about the call site.
struct CallSite {
  const std::string& template_name;
  bool strict;
  Position pos;
  RenderBudget& budget;

  Error error(const std::string& message) const {
    return template_error(template_name, pos, message);
  }
  // Spends `bytes` of the render's budget before making `what` that large; too_large(what) when
  // the render cannot afford it.
  Status spend(size_t bytes, std::string_view what) const;
  // The error for `what` growing past the render's budget.
  Error too_large(std::string_view what) const;
};

struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index` or named `name`, or nullptr.
  const Value* get(size_t index, std::string_view name) const;
};

// Decimal digits as an int64_t; nullopt when out of range (no exception, unlike std::stoll).
std::optional<int64_t> parse_int64(std::string_view digits);
// A float truncated toward zero as Python's int() does, when the result fits an int64_t; nullopt
// for NaN, infinities and values outside it (a plain cast would be undefined behaviour).
std::optional<int64_t> truncate_to_int64(double d);

// An integer value as int64_t (JSON's non-negative integers are stored unsigned); nullopt above
// INT64_MAX.
std::optional<int64_t> signed_int(const Json& integer);

// Python truthiness (None, False, 0, "", [] and {} are false).
bool truthy(const Json& value);
// Python type name of a value: 'str', 'int', 'float', 'bool', 'NoneType', 'list', 'dict'.
std::string type_name(const Json& value);
// json.dumps(value, sort_keys=True, indent=indent) as Python prints it (ensure_ascii, ", " and
// ": " separators); `html_safe` escapes < > & ' like jinja2's tojson. indent < 0: one line.
// nullopt when the text would be longer than `max_size`.
std::optional<std::string> python_json_dumps(const Json& value, int64_t indent, bool html_safe,
                                             size_t max_size);
// Splits a UTF-8 string into code points (each as its UTF-8 bytes).
std::vector<std::string> utf8_chars(const std::string& s);
// s.find(part, from) in time linear in the sizes (std::string::find can take |s| * |part|).
size_t find_text(std::string_view s, std::string_view part, size_t from = 0);
// len() of a UTF-8 string: its code points, counted without splitting it.
size_t utf8_length(const std::string& s);
// s[index] in Python: the code point at `index` (negative counts from the end), or nullopt.
std::optional<std::string> utf8_char_at(const std::string& s, int64_t index);
// Elements of an iterable value: list items, dict keys, string characters (spent against the
// render's budget: a character becomes a value of its own).
Result<std::vector<Json>> iterate(const Json& v, const CallSite& site);

Result<Value> apply_filter(const std::string& name, Value input, const Args& args,
                           const CallSite& site);
Result<bool> apply_test(const std::string& name, const Value& input, const Args& args,
                        const CallSite& site);
Result<Value> call_method(const Value& self, const std::string& name, const Args& args,
                          const CallSite& site);

}  // namespace codeact::core::template_internal
