#include "codeact/llm/test_model.hpp"

#include <algorithm>
#include <sstream>

#include "codeact/core/time.hpp"

namespace codeact::llm {

using core::Result;

namespace {

const Json* resolve_ref(const Json& root, const Json& schema) {
  std::string ref = core::json_string(schema, "$ref");
  if (ref.rfind("#/", 0) != 0) return nullptr;
  const Json* node = &root;
  std::stringstream path(ref.substr(2));
  std::string token;
  while (std::getline(path, token, '/')) {
    if (!node->is_object() || !node->contains(token)) return nullptr;
    node = &(*node)[token];
  }
  return node;
}

Json generate(const Json& root, const Json& schema, int seed, int depth) {
  if (!schema.is_object() || depth > 16) return nullptr;
  if (schema.contains("$ref")) {
    const Json* target = resolve_ref(root, schema);
    return target ? generate(root, *target, seed, depth + 1) : Json(nullptr);
  }
  if (schema.contains("const")) return schema["const"];
  if (schema.contains("default")) return schema["default"];
  if (auto e = schema.find("enum"); e != schema.end() && e->is_array() && !e->empty()) {
    return (*e)[0];
  }
  for (const char* key : {"anyOf", "oneOf", "allOf"}) {
    if (auto it = schema.find(key); it != schema.end() && it->is_array() && !it->empty()) {
      // Prefer the first non-null alternative.
      for (const auto& alt : *it) {
        if (core::json_string(alt, "type") != "null") return generate(root, alt, seed, depth + 1);
      }
      return generate(root, (*it)[0], seed, depth + 1);
    }
  }
  std::string type;
  if (auto t = schema.find("type"); t != schema.end()) {
    if (t->is_string()) {
      type = t->get<std::string>();
    } else if (t->is_array()) {
      for (const auto& v : *t) {
        if (v.is_string() && v != "null") {
          type = v.get<std::string>();
          break;
        }
      }
    }
  }
  if (type.empty() && schema.contains("properties")) type = "object";
  if (type == "string") return std::string(1, static_cast<char>('a' + seed % 26));
  if (type == "integer") return seed;
  if (type == "number") return seed + 0.5;
  if (type == "boolean") return seed % 2 == 0;
  if (type == "null") return nullptr;
  if (type == "array") {
    Json items = schema.value("items", Json::object());
    int64_t n = std::max<int64_t>(1, core::json_int(schema, "minItems", 1));
    Json out = Json::array();
    for (int64_t i = 0; i < n; ++i)
      out.push_back(generate(root, items, seed + static_cast<int>(i), depth + 1));
    return out;
  }
  if (type == "object") {
    Json out = Json::object();
    if (auto props = schema.find("properties"); props != schema.end() && props->is_object()) {
      int i = 0;
      for (auto& [name, sub] : props->items())
        out[name] = generate(root, sub, seed + i++, depth + 1);
    }
    return out;
  }
  return "a";  // no type: any value will do
}

std::string estimate_tokens_text(const std::vector<ModelMessage>& messages) {
  std::string all;
  for (const auto& m : messages) all += core::dump_json(to_json(m));
  return all;
}

int64_t word_count(const std::string& text) {
  std::stringstream ss(text);
  std::string w;
  int64_t n = 0;
  while (ss >> w) ++n;
  return n;
}

}  // namespace

Json generate_from_schema(const Json& schema, int seed) {
  return generate(schema, schema, seed, 0);
}

TestModel::TestModel(TestModelOptions options) : options_(std::move(options)) {}

Result<ModelResponse> TestModel::request(const std::vector<ModelMessage>& messages,
                                         const ModelSettings& /*settings*/,
                                         const ModelRequestParameters& params,
                                         const core::CancelToken* cancel) {
  if (cancel != nullptr && cancel->cancelled())
    return core::cancelled("test model: request cancelled");
  ModelResponse response;
  response.model_name = options_.model_name;
  response.provider_name = "test";
  response.timestamp = core::now_rfc3339();
  int call_counter = 0;
  auto make_call = [&](const ToolDefinition& tool, Json args) {
    ToolCallPart call;
    call.tool_name = tool.name;
    call.args = args.is_object() ? std::move(args) : Json::object();
    call.tool_call_id = "pyd_ai_tool_call_id__" + tool.name + "_" + std::to_string(call_counter++);
    response.parts.push_back(std::move(call));
  };

  const bool first_turn = std::none_of(messages.begin(), messages.end(), [](const ModelMessage& m) {
    return std::holds_alternative<ModelResponse>(m);
  });
  const ModelRequest* last =
      messages.empty() ? nullptr : std::get_if<ModelRequest>(&messages.back());

  // Tools that asked for a retry are called again with other arguments.
  std::vector<std::string> retry_tools;
  if (last != nullptr) {
    for (const auto& part : last->parts) {
      if (auto* retry = std::get_if<RetryPromptPart>(&part); retry && !retry->tool_name.empty()) {
        retry_tools.push_back(retry->tool_name);
      }
    }
  }
  if (!retry_tools.empty()) {
    for (const auto& tool : params.all_tools()) {
      if (std::find(retry_tools.begin(), retry_tools.end(), tool.name) != retry_tools.end()) {
        make_call(tool, generate_from_schema(tool.parameters_json_schema, options_.seed + 1));
      }
    }
  } else if (first_turn) {
    for (const auto& tool : params.function_tools) {
      if (options_.call_tools && std::find(options_.call_tools->begin(), options_.call_tools->end(),
                                           tool.name) == options_.call_tools->end()) {
        continue;
      }
      make_call(tool, generate_from_schema(tool.parameters_json_schema, options_.seed));
    }
  }

  if (response.parts.empty()) {
    // The final answer.
    if (params.output_mode == OutputMode::kTool && !params.output_tools.empty()) {
      const auto& tool = params.output_tools.front();
      make_call(tool, options_.custom_output_args
                          ? *options_.custom_output_args
                          : generate_from_schema(tool.parameters_json_schema, options_.seed));
    } else if ((params.output_mode == OutputMode::kNative ||
                params.output_mode == OutputMode::kPrompted) &&
               params.output_object) {
      Json value = options_.custom_output_args
                       ? *options_.custom_output_args
                       : generate_from_schema(params.output_object->json_schema, options_.seed);
      response.parts.push_back(TextPart{core::dump_json(value)});
    } else if (options_.custom_output_text) {
      response.parts.push_back(TextPart{*options_.custom_output_text});
    } else {
      // Summarize the tool returns of the conversation, like pydantic-ai.
      Json summary = Json::object();
      for (const auto& m : messages) {
        if (auto* request = std::get_if<ModelRequest>(&m)) {
          for (const auto& part : request->parts) {
            if (auto* ret = std::get_if<ToolReturnPart>(&part))
              summary[ret->tool_name] = ret->content;
          }
        }
      }
      response.parts.push_back(TextPart{summary.empty() ? std::string("success (no tool calls)")
                                                        : core::dump_json(summary)});
    }
    response.finish_reason = response.tool_calls().empty() ? std::string(finish_reason::kStop)
                                                           : std::string(finish_reason::kToolCall);
  } else {
    response.finish_reason = std::string(finish_reason::kToolCall);
  }
  response.usage.requests = 1;
  response.usage.input_tokens = 50 + word_count(estimate_tokens_text(messages));
  response.usage.output_tokens = word_count(core::dump_json(to_json(ModelMessage(response))));
  return response;
}

}  // namespace codeact::llm
