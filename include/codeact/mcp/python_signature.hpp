// From JSON Schema to Python: the signature and docstring an MCP tool (or any function described
// by a JSON Schema for its arguments) shows to the model in `tools_as_func`, and the stub the
// sandbox kernel defines for it.
//
// Types: string/integer/number/boolean/null -> str/int/float/bool/None; arrays -> list[T]
// (prefixItems -> tuple[...]); objects with properties -> a TypedDict class (NotRequired for
// optional keys); objects with additionalProperties -> dict[str, T]; enum/const -> Literal[...];
// anyOf/oneOf/type lists -> unions; $ref into $defs/definitions resolved (a cycle gives the class
// name); allOf merged. Parameters: required first, optional ones get their schema default or
// `T | None = None`. Names that are not Python identifiers are made into identifiers once
// (`from-date` -> `from_date`, `class` -> `class_`); param_names maps them back.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::mcp {

using core::Json;

struct PythonSignature {
  std::string name;                  // the callable name (a valid identifier)
  std::string signature;             // "def name(a: int, b: str | None = None) -> Any"
  std::string doc;                   // description + "Args:" section (raw, unescaped)
  std::vector<std::string> classes;  // TypedDict definitions the annotations refer to
  std::map<std::string, std::string> param_names;  // python name -> schema property name
  bool var_keyword = false;  // takes **kwargs (additionalProperties without properties)

  // The block for tools_as_func: classes, then the def with its docstring and `...` as body.
  std::string text() const;
};

// Makes `name` a valid, non-keyword Python identifier: other characters become '_', a leading
// digit gets a '_' prefix, keywords get a '_' suffix. Deterministic.
std::string python_identifier(std::string_view name);

// The Python annotation for a schema. `root` is where $ref resolves (the whole input schema);
// new TypedDict classes are appended to `classes` (may be null: objects then read dict[str, Any]).
std::string python_type(const Json& schema, const Json& root,
                        std::vector<std::string>* classes = nullptr);

// A Python literal for a JSON value ("None", "True", "'a\\'b'", "[1, 2]", "{'k': 1.5}").
std::string python_literal(const Json& value);

// The signature of a function `name` (already an identifier) taking the arguments described by
// `input_schema` and returning `output_schema` (null = Any). An output schema that only wraps a
// "result" property (how Python SDK servers declare scalar results) returns that property's type.
core::Result<PythonSignature> python_signature(const std::string& name,
                                               const std::string& description,
                                               const Json& input_schema,
                                               const Json& output_schema = Json());

// True when `output_schema` is {"type": "object", "properties": {"result": ...}} with nothing
// else: the structured result is then the value of "result".
bool wraps_result(const Json& output_schema);

}  // namespace codeact::mcp
