// Templates: a documented subset of Jinja2 (docs/templates.md), enough to render the seed's
// `agent_prompts.yml` unchanged.
//
// A Template is parsed once and rendered any number of times with a Json context (an object whose
// members are the template's variables). Values print like Python's str(): `True`, `None`,
// `['a', 'b']`, `{'x': 'int'}`, so prompts written for jinja2 read the same. Undefined variables
// render empty and are falsy, like jinja2's default; with TemplateOptions::strict_undefined any use
// of an undefined value other than `is defined` / `default` is an error.
//
// Errors (syntax at parse time, type errors and strict-undefined at render time) are
// InvalidArgument values whose message names the template, line and column:
//   `template "simple_agent.instructions": line 3, column 12: unexpected end of tag, expected ')'`.
//
// Thread-safety: a parsed Template is immutable; render() may be called from several threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::core {

struct TemplateOptions {
  // Using an undefined variable (printing, iterating, comparing, filtering) is an error.
  // Default: false (renders empty, like jinja2.Undefined).
  bool strict_undefined = false;
  // jinja2's trim_blocks: the first newline after a block tag or comment is removed.
  // Default: false (as jinja2.Template).
  bool trim_blocks = false;
  // jinja2's lstrip_blocks: spaces and tabs before a block tag or comment at the start of a line
  // are removed. Default: false.
  bool lstrip_blocks = false;
  // jinja2's keep_trailing_newline: when false, one trailing newline of the source is dropped.
  // Default: false (as jinja2.Template).
  bool keep_trailing_newline = false;
  // What one render may make in all: every printed text, 64 bytes per evaluated expression plus
  // the value it makes, 64 bytes per loop pass plus its `loop` variable. Going past it is an
  // InvalidArgument naming the place that grows ("this indent would take this render past
  // 16.0 MiB ..."), so a template cannot take the machine's memory or time (docs/templates.md,
  // "Limits"). Default: 16 MiB, a few times what a prompt listing a thousand tools makes.
  size_t render_budget_bytes = size_t{16} << 20;
};

namespace template_internal {
struct Program;
}

class Template {
 public:
  // Parses `source`. `name` appears in error messages. InvalidArgument with line and column on a
  // syntax error.
  static Result<Template> parse(std::string_view source, std::string name = "template",
                                TemplateOptions options = {});

  // Renders with `context` (a Json object, or null for none). InvalidArgument with line and
  // column on a render error.
  Result<std::string> render(const Json& context) const;

  const std::string& name() const;

 private:
  explicit Template(std::shared_ptr<const template_internal::Program> program)
      : program_(std::move(program)) {}
  std::shared_ptr<const template_internal::Program> program_;
};

// Parse + render in one call.
Result<std::string> render_template(std::string_view source, const Json& context,
                                    std::string name = "template", TemplateOptions options = {});

// Python's str() of a JSON value as jinja2 prints it: strings as-is, true -> "True",
// null -> "None", 1.0 -> "1.0", lists and objects in Python repr ("['a', 1]", "{'k': 'v'}").
std::string python_str(const Json& value);
// Python's repr(): like python_str but strings are quoted ('a').
std::string python_repr(const Json& value);

}  // namespace codeact::core
