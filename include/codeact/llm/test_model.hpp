// TestModel: a model that needs no callback (pydantic-ai's TestModel). On the first request it
// calls every function tool once (or those named in call_tools) with arguments generated from
// each tool's JSON schema; once the tools have returned it answers: with `custom_output_text`,
// or with a summary of the tool returns as JSON text, or, in structured output modes, with
// `custom_output_args` (or schema-generated args) through the output tool / as JSON text.
//
// Deterministic: generated values depend only on the schema and `seed`. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codeact/llm/model.hpp"

namespace codeact::llm {

struct TestModelOptions {
  // Tool names to call; nullopt = all function tools.
  std::optional<std::vector<std::string>> call_tools;
  std::optional<std::string> custom_output_text;
  std::optional<Json> custom_output_args;
  int seed = 0;
  std::string model_name = "test";
};

class TestModel : public Model {
 public:
  explicit TestModel(TestModelOptions options = {});

  core::Result<ModelResponse> request(const std::vector<ModelMessage>& messages,
                                      const ModelSettings& settings,
                                      const ModelRequestParameters& params,
                                      const core::CancelToken* cancel = nullptr) override;
  std::string model_name() const override { return options_.model_name; }
  std::string system() const override { return "test"; }

 private:
  TestModelOptions options_;
};

// A value matching `schema` (objects with all required and optional properties, first enum
// value, `default` when present, strings "a", "b", ... by seed, integers from seed, ...).
// $ref into $defs / definitions is followed.
Json generate_from_schema(const Json& schema, int seed = 0);

}  // namespace codeact::llm
