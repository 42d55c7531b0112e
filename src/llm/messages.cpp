#include "codeact/llm/messages.hpp"

#include "codeact/core/json_reader.hpp"
#include "codeact/core/overloaded.hpp"
#include "codeact/core/time.hpp"

namespace codeact::llm {

using core::Error;
using core::Overloaded;
using core::Result;
using core::Status;

std::string now_timestamp() { return core::now_rfc3339(); }

std::string ToolReturnPart::content_text() const {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return "";
  return core::dump_json(content);
}

std::string RetryPromptPart::model_response() const {
  return content + "\n\nFix the errors and try again.";
}

Result<Json> ToolCallPart::args_object() const {
  if (args_raw.empty()) return args;
  auto parsed = core::parse_json(args_raw, "arguments of tool call \"" + tool_name + "\"");
  if (!parsed.ok()) return parsed.error();
  if (!parsed->is_object()) {
    return core::invalid_argument("arguments of tool call \"" + tool_name +
                                  "\" must be a JSON object, got: " + args_raw);
  }
  return parsed;
}

ToolCallPart ToolCallPart::from_args_text(std::string tool_name, std::string_view args_text,
                                          std::string tool_call_id) {
  ToolCallPart part;
  part.tool_name = std::move(tool_name);
  part.tool_call_id = std::move(tool_call_id);
  if (args_text.find_first_not_of(" \t\r\n") == std::string_view::npos) return part;  // "" -> {}
  auto parsed = core::parse_json(args_text, "tool call arguments");
  if (parsed.ok() && parsed->is_object()) {
    part.args = std::move(parsed).value();
  } else {
    part.args_raw = std::string(args_text);
  }
  return part;
}

Usage& Usage::operator+=(const Usage& other) {
  requests += other.requests;
  input_tokens += other.input_tokens;
  output_tokens += other.output_tokens;
  cache_read_tokens += other.cache_read_tokens;
  cache_write_tokens += other.cache_write_tokens;
  if (!details.is_object()) details = Json::object();
  if (other.details.is_object()) {
    for (auto& [key, value] : other.details.items()) {
      if (!value.is_number_integer()) continue;
      auto it = details.find(key);
      int64_t base = (it != details.end() && it->is_number_integer()) ? it->get<int64_t>() : 0;
      details[key] = base + value.get<int64_t>();
    }
  }
  return *this;
}

ModelRequest ModelRequest::user_prompt(std::string content) {
  ModelRequest request;
  request.parts.push_back(UserPromptPart{std::move(content), core::now_rfc3339()});
  return request;
}

std::string ModelResponse::text() const {
  std::string out;
  for (const auto& part : parts) {
    if (auto* text = std::get_if<TextPart>(&part)) out += text->content;
  }
  return out;
}

std::vector<ToolCallPart> ModelResponse::tool_calls() const {
  std::vector<ToolCallPart> out;
  for (const auto& part : parts) {
    if (auto* call = std::get_if<ToolCallPart>(&part)) out.push_back(*call);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// to_json

Json to_json(const ModelRequestPart& part) {
  return std::visit(
      Overloaded{
          [](const SystemPromptPart& p) {
            return Json{
                {"part_kind", "system-prompt"}, {"content", p.content}, {"timestamp", p.timestamp}};
          },
          [](const UserPromptPart& p) {
            return Json{
                {"part_kind", "user-prompt"}, {"content", p.content}, {"timestamp", p.timestamp}};
          },
          [](const ToolReturnPart& p) {
            Json j{{"part_kind", "tool-return"},
                   {"tool_name", p.tool_name},
                   {"content", p.content},
                   {"tool_call_id", p.tool_call_id},
                   {"timestamp", p.timestamp}};
            if (!p.metadata.is_null()) j["metadata"] = p.metadata;
            return j;
          },
          [](const RetryPromptPart& p) {
            Json j{
                {"part_kind", "retry-prompt"}, {"content", p.content}, {"timestamp", p.timestamp}};
            j["tool_name"] = p.tool_name.empty() ? Json(nullptr) : Json(p.tool_name);
            j["tool_call_id"] = p.tool_call_id.empty() ? Json(nullptr) : Json(p.tool_call_id);
            return j;
          },
      },
      part);
}

Json to_json(const ModelResponsePart& part) {
  return std::visit(Overloaded{
                        [](const TextPart& p) {
                          return Json{{"part_kind", "text"}, {"content", p.content}};
                        },
                        [](const ToolCallPart& p) {
                          Json j{{"part_kind", "tool-call"},
                                 {"tool_name", p.tool_name},
                                 {"args", p.args},
                                 {"tool_call_id", p.tool_call_id}};
                          if (!p.args_raw.empty()) j["args_raw"] = p.args_raw;
                          if (!p.provider_details.is_null())
                            j["provider_details"] = p.provider_details;
                          return j;
                        },
                        [](const ThinkingPart& p) {
                          Json j{{"part_kind", "thinking"}, {"content", p.content}};
                          if (!p.signature.empty()) j["signature"] = p.signature;
                          if (!p.provider_name.empty()) j["provider_name"] = p.provider_name;
                          return j;
                        },
                    },
                    part);
}

Json to_json(const Usage& usage) {
  return Json{{"requests", usage.requests},
              {"input_tokens", usage.input_tokens},
              {"output_tokens", usage.output_tokens},
              {"cache_read_tokens", usage.cache_read_tokens},
              {"cache_write_tokens", usage.cache_write_tokens},
              {"details", usage.details}};
}

Json to_json(const ModelRequest& message) {
  Json parts = Json::array();
  for (const auto& part : message.parts) parts.push_back(to_json(part));
  Json j{{"kind", "request"}, {"parts", std::move(parts)}};
  if (!message.instructions.empty()) j["instructions"] = message.instructions;
  return j;
}

Json to_json(const ModelResponse& message) {
  Json parts = Json::array();
  for (const auto& part : message.parts) parts.push_back(to_json(part));
  Json j{{"kind", "response"},
         {"parts", std::move(parts)},
         {"usage", to_json(message.usage)},
         {"model_name", message.model_name},
         {"timestamp", message.timestamp},
         {"provider_name", message.provider_name},
         {"provider_response_id", message.provider_response_id}};
  j["finish_reason"] = message.finish_reason.empty() ? Json(nullptr) : Json(message.finish_reason);
  if (!message.provider_details.is_null()) j["provider_details"] = message.provider_details;
  return j;
}

Json to_json(const ModelMessage& message) {
  return std::visit([](const auto& m) { return to_json(m); }, message);
}

Json to_json(const std::vector<ModelMessage>& messages) {
  Json out = Json::array();
  for (const auto& m : messages) out.push_back(to_json(m));
  return out;
}

// ---------------------------------------------------------------------------------------------
// from_json

namespace {

Result<ModelRequestPart> request_part_at(const Json& j, const std::string& path) {
  core::JsonReader r(j, path);
  CODEACT_TRY_STATUS(r.valid());
  std::string kind;
  CODEACT_TRY_STATUS(r.required("part_kind", kind));
  if (kind == "system-prompt") {
    SystemPromptPart p;
    CODEACT_TRY_STATUS(r.required("content", p.content));
    CODEACT_TRY_STATUS(r.optional("timestamp", p.timestamp));
    return ModelRequestPart(std::move(p));
  }
  if (kind == "user-prompt") {
    UserPromptPart p;
    CODEACT_TRY_STATUS(r.required("content", p.content));
    CODEACT_TRY_STATUS(r.optional("timestamp", p.timestamp));
    return ModelRequestPart(std::move(p));
  }
  if (kind == "tool-return") {
    ToolReturnPart p;
    CODEACT_TRY_STATUS(r.required("tool_name", p.tool_name));
    CODEACT_TRY_STATUS(r.optional("tool_call_id", p.tool_call_id));
    CODEACT_TRY_STATUS(r.optional("timestamp", p.timestamp));
    if (auto it = j.find("content"); it != j.end()) p.content = *it;
    if (auto it = j.find("metadata"); it != j.end()) p.metadata = *it;
    return ModelRequestPart(std::move(p));
  }
  if (kind == "retry-prompt") {
    RetryPromptPart p;
    auto it = j.find("content");
    if (it != j.end() && !it->is_string() && !it->is_null()) {
      p.content = core::dump_json(*it);  // pydantic-ai sends validation errors as a list
    } else {
      CODEACT_TRY_STATUS(r.required("content", p.content));
    }
    CODEACT_TRY_STATUS(r.optional("tool_name", p.tool_name));
    CODEACT_TRY_STATUS(r.optional("tool_call_id", p.tool_call_id));
    CODEACT_TRY_STATUS(r.optional("timestamp", p.timestamp));
    return ModelRequestPart(std::move(p));
  }
  return core::invalid_argument(
      path + ": unknown request part_kind \"" + kind +
      "\" (expected system-prompt, user-prompt, tool-return or retry-prompt)");
}

Result<ModelResponsePart> response_part_at(const Json& j, const std::string& path) {
  core::JsonReader r(j, path);
  CODEACT_TRY_STATUS(r.valid());
  std::string kind;
  CODEACT_TRY_STATUS(r.required("part_kind", kind));
  if (kind == "text") {
    TextPart p;
    CODEACT_TRY_STATUS(r.required("content", p.content));
    return ModelResponsePart(std::move(p));
  }
  if (kind == "tool-call") {
    ToolCallPart p;
    CODEACT_TRY_STATUS(r.required("tool_name", p.tool_name));
    CODEACT_TRY_STATUS(r.optional("tool_call_id", p.tool_call_id));
    CODEACT_TRY_STATUS(r.optional("args_raw", p.args_raw));
    auto it = j.find("args");
    if (it != j.end() && it->is_string()) {
      // pydantic-ai keeps streamed arguments as text.
      p = ToolCallPart::from_args_text(p.tool_name, it->get<std::string>(), p.tool_call_id);
    } else if (it != j.end() && it->is_object()) {
      p.args = *it;
    } else if (it != j.end() && !it->is_null()) {
      return r.wrong("args", "an object or a string");
    }
    if (auto d = j.find("provider_details"); d != j.end()) p.provider_details = *d;
    return ModelResponsePart(std::move(p));
  }
  if (kind == "thinking") {
    ThinkingPart p;
    CODEACT_TRY_STATUS(r.required("content", p.content));
    CODEACT_TRY_STATUS(r.optional("signature", p.signature));
    CODEACT_TRY_STATUS(r.optional("provider_name", p.provider_name));
    return ModelResponsePart(std::move(p));
  }
  return core::invalid_argument(path + ": unknown response part_kind \"" + kind +
                                "\" (expected text, tool-call or thinking)");
}

Result<Usage> usage_at(const Json& j, const std::string& path) {
  Usage u;
  if (j.is_null()) return u;
  core::JsonReader r(j, path);
  CODEACT_TRY_STATUS(r.valid());
  CODEACT_TRY_STATUS(r.optional("requests", u.requests));
  CODEACT_TRY_STATUS(r.optional("input_tokens", u.input_tokens));
  CODEACT_TRY_STATUS(r.optional("output_tokens", u.output_tokens));
  CODEACT_TRY_STATUS(r.optional("cache_read_tokens", u.cache_read_tokens));
  CODEACT_TRY_STATUS(r.optional("cache_write_tokens", u.cache_write_tokens));
  if (auto it = j.find("details"); it != j.end() && it->is_object()) u.details = *it;
  return u;
}

Result<ModelRequest> request_at(const Json& j, const std::string& path) {
  core::JsonReader r(j, path);
  CODEACT_TRY_STATUS(r.valid());
  ModelRequest m;
  auto parts = j.find("parts");
  if (parts == j.end() || !parts->is_array()) return r.wrong("parts", "an array");
  for (size_t i = 0; i < parts->size(); ++i) {
    CODEACT_TRY(auto part,
                request_part_at((*parts)[i], path + ".parts[" + std::to_string(i) + "]"));
    m.parts.push_back(std::move(part));
  }
  CODEACT_TRY_STATUS(r.optional("instructions", m.instructions));
  return m;
}

Result<ModelResponse> response_at(const Json& j, const std::string& path) {
  core::JsonReader r(j, path);
  CODEACT_TRY_STATUS(r.valid());
  ModelResponse m;
  auto parts = j.find("parts");
  if (parts == j.end() || !parts->is_array()) return r.wrong("parts", "an array");
  for (size_t i = 0; i < parts->size(); ++i) {
    CODEACT_TRY(auto part,
                response_part_at((*parts)[i], path + ".parts[" + std::to_string(i) + "]"));
    m.parts.push_back(std::move(part));
  }
  if (auto it = j.find("usage"); it != j.end()) {
    CODEACT_TRY(m.usage, usage_at(*it, path + ".usage"));
  }
  CODEACT_TRY_STATUS(r.optional("model_name", m.model_name));
  CODEACT_TRY_STATUS(r.optional("timestamp", m.timestamp));
  CODEACT_TRY_STATUS(r.optional("provider_name", m.provider_name));
  CODEACT_TRY_STATUS(r.optional("provider_response_id", m.provider_response_id));
  CODEACT_TRY_STATUS(r.optional("finish_reason", m.finish_reason));
  if (auto it = j.find("provider_details"); it != j.end()) m.provider_details = *it;
  return m;
}

Result<ModelMessage> message_at(const Json& j, const std::string& path) {
  core::JsonReader r(j, path);
  CODEACT_TRY_STATUS(r.valid());
  std::string kind;
  CODEACT_TRY_STATUS(r.required("kind", kind));
  if (kind == "request") {
    CODEACT_TRY(auto m, request_at(j, path));
    return ModelMessage(std::move(m));
  }
  if (kind == "response") {
    CODEACT_TRY(auto m, response_at(j, path));
    return ModelMessage(std::move(m));
  }
  return core::invalid_argument(path + ": unknown message kind \"" + kind +
                                "\" (expected request or response)");
}

}  // namespace

Result<ModelRequestPart> request_part_from_json(const Json& j) {
  return request_part_at(j, "part");
}
Result<ModelResponsePart> response_part_from_json(const Json& j) {
  return response_part_at(j, "part");
}
Result<Usage> usage_from_json(const Json& j) { return usage_at(j, "usage"); }
Result<ModelRequest> request_from_json(const Json& j) { return request_at(j, "message"); }
Result<ModelResponse> response_from_json(const Json& j) { return response_at(j, "message"); }
Result<ModelMessage> message_from_json(const Json& j) { return message_at(j, "message"); }

Result<std::vector<ModelMessage>> messages_from_json(const Json& j) {
  if (!j.is_array()) {
    return core::invalid_argument("messages: expected a JSON array, got " +
                                  std::string(j.type_name()));
  }
  std::vector<ModelMessage> out;
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    CODEACT_TRY(auto m, message_at(j[i], "messages[" + std::to_string(i) + "]"));
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace codeact::llm
