#include "codeact/llm/model.hpp"

#include "codeact/core/json_reader.hpp"
#include "codeact/core/overloaded.hpp"

namespace codeact::llm {

using core::Overloaded;
using core::Result;

std::string_view output_mode_name(OutputMode mode) {
  switch (mode) {
    case OutputMode::kText:
      return "text";
    case OutputMode::kTool:
      return "tool";
    case OutputMode::kNative:
      return "native";
    case OutputMode::kPrompted:
      return "prompted";
  }
  return "text";
}

Result<OutputMode> output_mode_from_name(std::string_view name) {
  for (auto mode :
       {OutputMode::kText, OutputMode::kTool, OutputMode::kNative, OutputMode::kPrompted}) {
    if (output_mode_name(mode) == name) return mode;
  }
  return core::invalid_argument("unknown output mode \"" + std::string(name) +
                                "\" (expected text, tool, native or prompted)");
}

std::vector<ToolDefinition> ModelRequestParameters::all_tools() const {
  std::vector<ToolDefinition> tools = function_tools;
  tools.insert(tools.end(), output_tools.begin(), output_tools.end());
  return tools;
}

ModelSettings ModelSettings::merged(const ModelSettings& o) const {
  ModelSettings s = *this;
  if (o.max_tokens) s.max_tokens = o.max_tokens;
  if (o.temperature) s.temperature = o.temperature;
  if (o.top_p) s.top_p = o.top_p;
  if (o.timeout_seconds) s.timeout_seconds = o.timeout_seconds;
  if (o.parallel_tool_calls) s.parallel_tool_calls = o.parallel_tool_calls;
  if (o.seed) s.seed = o.seed;
  if (o.presence_penalty) s.presence_penalty = o.presence_penalty;
  if (o.frequency_penalty) s.frequency_penalty = o.frequency_penalty;
  if (!o.stop_sequences.empty()) s.stop_sequences = o.stop_sequences;
  for (const auto& h : o.extra_headers) s.extra_headers.push_back(h);
  if (!o.extra_body.is_null()) {
    if (s.extra_body.is_null()) s.extra_body = Json::object();
    s.extra_body.merge_patch(o.extra_body);
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Streaming

bool replay_as_stream(const ModelResponse& response, const StreamHandler& on_event) {
  for (size_t i = 0; i < response.parts.size(); ++i) {
    const int index = static_cast<int>(i);
    const auto& part = response.parts[i];
    bool ok = std::visit(
        Overloaded{
            [&](const TextPart& p) {
              return on_event(PartStartEvent{index, TextPart{}}) &&
                     on_event(PartDeltaEvent{index, TextPartDelta{p.content}});
            },
            [&](const ToolCallPart& p) {
              ToolCallPart start{p.tool_name, Json::object(), p.tool_call_id, "",
                                 p.provider_details};
              std::string args = p.args_raw.empty() ? core::dump_json(p.args) : p.args_raw;
              return on_event(PartStartEvent{index, start}) &&
                     on_event(PartDeltaEvent{index, ToolCallPartDelta{"", args, ""}});
            },
            [&](const ThinkingPart& p) {
              ThinkingPart start{"", "", p.provider_name};
              return on_event(PartStartEvent{index, start}) &&
                     on_event(PartDeltaEvent{index, ThinkingPartDelta{p.content, p.signature}});
            },
        },
        part);
    if (!ok || !on_event(PartEndEvent{index, part})) return false;
  }
  return on_event(FinalResponseEvent{response});
}

Result<ModelResponse> Model::request_stream(const std::vector<ModelMessage>& messages,
                                            const ModelSettings& settings,
                                            const ModelRequestParameters& params,
                                            const StreamHandler& on_event,
                                            const core::CancelToken* cancel) {
  CODEACT_TRY(auto response, request(messages, settings, params, cancel));
  if (!replay_as_stream(response, on_event)) {
    return core::cancelled("model stream stopped by its consumer");
  }
  return response;
}

// ---------------------------------------------------------------------------------------------
// JSON

Json to_json(const ToolDefinition& tool) {
  Json j{{"name", tool.name},
         {"description", tool.description},
         {"parameters_json_schema", tool.parameters_json_schema},
         {"kind", tool.kind}};
  j["strict"] = tool.strict ? Json(*tool.strict) : Json(nullptr);
  return j;
}

Json to_json(const OutputObjectDefinition& output) {
  Json j{{"name", output.name},
         {"description", output.description},
         {"json_schema", output.json_schema}};
  j["strict"] = output.strict ? Json(*output.strict) : Json(nullptr);
  return j;
}

Json to_json(const ModelRequestParameters& params) {
  Json function_tools = Json::array();
  for (const auto& t : params.function_tools) function_tools.push_back(to_json(t));
  Json output_tools = Json::array();
  for (const auto& t : params.output_tools) output_tools.push_back(to_json(t));
  Json j{{"function_tools", std::move(function_tools)},
         {"output_mode", output_mode_name(params.output_mode)},
         {"output_tools", std::move(output_tools)},
         {"allow_text_output", params.allow_text_output}};
  j["output_object"] = params.output_object ? to_json(*params.output_object) : Json(nullptr);
  return j;
}

Json to_json(const ModelSettings& s) {
  Json j = Json::object();
  if (s.max_tokens) j["max_tokens"] = *s.max_tokens;
  if (s.temperature) j["temperature"] = *s.temperature;
  if (s.top_p) j["top_p"] = *s.top_p;
  if (s.timeout_seconds) j["timeout"] = *s.timeout_seconds;
  if (s.parallel_tool_calls) j["parallel_tool_calls"] = *s.parallel_tool_calls;
  if (s.seed) j["seed"] = *s.seed;
  if (s.presence_penalty) j["presence_penalty"] = *s.presence_penalty;
  if (s.frequency_penalty) j["frequency_penalty"] = *s.frequency_penalty;
  if (!s.stop_sequences.empty()) j["stop_sequences"] = s.stop_sequences;
  if (!s.extra_headers.empty()) {
    Json headers = Json::array();
    for (const auto& [name, value] : s.extra_headers) headers.push_back(Json::array({name, value}));
    j["extra_headers"] = std::move(headers);
  }
  if (!s.extra_body.is_null()) j["extra_body"] = s.extra_body;
  return j;
}

Json to_json(const ModelResponsePartDelta& delta) {
  return std::visit(
      Overloaded{
          [](const TextPartDelta& d) {
            return Json{{"part_delta_kind", "text"}, {"content_delta", d.content_delta}};
          },
          [](const ToolCallPartDelta& d) {
            return Json{{"part_delta_kind", "tool_call"},
                        {"tool_name_delta", d.tool_name_delta},
                        {"args_delta", d.args_delta},
                        {"tool_call_id", d.tool_call_id}};
          },
          [](const ThinkingPartDelta& d) {
            return Json{{"part_delta_kind", "thinking"},
                        {"content_delta", d.content_delta},
                        {"signature_delta", d.signature_delta}};
          },
      },
      delta);
}

Json to_json(const ModelStreamEvent& event) {
  return std::visit(
      Overloaded{
          [](const PartStartEvent& e) {
            return Json{
                {"event_kind", "part_start"}, {"index", e.index}, {"part", to_json(e.part)}};
          },
          [](const PartDeltaEvent& e) {
            return Json{
                {"event_kind", "part_delta"}, {"index", e.index}, {"delta", to_json(e.delta)}};
          },
          [](const PartEndEvent& e) {
            return Json{{"event_kind", "part_end"}, {"index", e.index}, {"part", to_json(e.part)}};
          },
          [](const FinalResponseEvent& e) {
            return Json{{"event_kind", "final_response"}, {"response", to_json(e.response)}};
          },
      },
      event);
}

namespace {

Result<ToolDefinition> tool_at(const Json& j, const std::string& path) {
  core::JsonReader r(j, path);
  CODEACT_TRY_STATUS(r.valid());
  ToolDefinition t;
  CODEACT_TRY_STATUS(r.required("name", t.name));
  CODEACT_TRY_STATUS(r.optional("description", t.description));
  CODEACT_TRY_STATUS(r.optional("kind", t.kind));
  CODEACT_TRY_STATUS(r.optional("strict", t.strict));
  if (auto it = j.find("parameters_json_schema"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return r.wrong("parameters_json_schema", "an object");
    t.parameters_json_schema = *it;
  }
  return t;
}

Result<OutputObjectDefinition> output_object_at(const Json& j, const std::string& path) {
  core::JsonReader r(j, path);
  CODEACT_TRY_STATUS(r.valid());
  OutputObjectDefinition o;
  CODEACT_TRY_STATUS(r.optional("name", o.name));
  CODEACT_TRY_STATUS(r.optional("description", o.description));
  CODEACT_TRY_STATUS(r.optional("strict", o.strict));
  if (auto it = j.find("json_schema"); it != j.end() && !it->is_null()) o.json_schema = *it;
  return o;
}

Result<std::vector<ToolDefinition>> tools_at(core::JsonReader& r, const char* key) {
  std::vector<ToolDefinition> tools;
  const Json* list = r.raw(key);
  if (list == nullptr) return tools;
  if (!list->is_array()) return r.wrong(key, "an array");
  for (size_t i = 0; i < list->size(); ++i) {
    CODEACT_TRY(auto t, tool_at((*list)[i], r.what() + "." + key + "[" + std::to_string(i) + "]"));
    tools.push_back(std::move(t));
  }
  return tools;
}

}  // namespace

Result<ToolDefinition> tool_definition_from_json(const Json& j) { return tool_at(j, "tool"); }
Result<OutputObjectDefinition> output_object_from_json(const Json& j) {
  return output_object_at(j, "output_object");
}

Result<ModelRequestParameters> request_parameters_from_json(const Json& j) {
  const std::string path = "params";
  core::JsonReader r(j, path);
  CODEACT_TRY_STATUS(r.valid());
  ModelRequestParameters p;
  CODEACT_TRY(p.function_tools, tools_at(r, "function_tools"));
  CODEACT_TRY(p.output_tools, tools_at(r, "output_tools"));
  std::string mode = "text";
  CODEACT_TRY_STATUS(r.optional("output_mode", mode));
  CODEACT_TRY(p.output_mode, output_mode_from_name(mode));
  CODEACT_TRY_STATUS(r.optional("allow_text_output", p.allow_text_output));
  if (auto it = j.find("output_object"); it != j.end() && !it->is_null()) {
    CODEACT_TRY(auto o, output_object_at(*it, path + ".output_object"));
    p.output_object = std::move(o);
  }
  return p;
}

Result<ModelSettings> settings_from_json(const Json& j) {
  const std::string path = "settings";
  ModelSettings s;
  if (j.is_null()) return s;
  core::JsonReader r(j, path);
  CODEACT_TRY_STATUS(r.valid());
  CODEACT_TRY_STATUS(r.optional("max_tokens", s.max_tokens));
  CODEACT_TRY_STATUS(r.optional("temperature", s.temperature));
  CODEACT_TRY_STATUS(r.optional("top_p", s.top_p));
  CODEACT_TRY_STATUS(r.optional("timeout", s.timeout_seconds));
  CODEACT_TRY_STATUS(r.optional("parallel_tool_calls", s.parallel_tool_calls));
  CODEACT_TRY_STATUS(r.optional("seed", s.seed));
  CODEACT_TRY_STATUS(r.optional("presence_penalty", s.presence_penalty));
  CODEACT_TRY_STATUS(r.optional("frequency_penalty", s.frequency_penalty));
  CODEACT_TRY_STATUS(r.optional("stop_sequences", s.stop_sequences));
  if (auto it = j.find("extra_headers"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return r.wrong("extra_headers", "an array of [name, value]");
    for (const auto& h : *it) {
      if (!h.is_array() || h.size() != 2 || !h[0].is_string() || !h[1].is_string()) {
        return r.wrong("extra_headers", "an array of [name, value]");
      }
      s.extra_headers.emplace_back(h[0].get<std::string>(), h[1].get<std::string>());
    }
  }
  if (auto it = j.find("extra_body"); it != j.end()) s.extra_body = *it;
  return s;
}

Result<ModelResponsePartDelta> part_delta_from_json(const Json& j) {
  const std::string path = "delta";
  core::JsonReader r(j, path);
  CODEACT_TRY_STATUS(r.valid());
  std::string kind;
  CODEACT_TRY_STATUS(r.required("part_delta_kind", kind));
  if (kind == "text") {
    TextPartDelta d;
    CODEACT_TRY_STATUS(r.optional("content_delta", d.content_delta));
    return ModelResponsePartDelta(std::move(d));
  }
  if (kind == "tool_call") {
    ToolCallPartDelta d;
    CODEACT_TRY_STATUS(r.optional("tool_name_delta", d.tool_name_delta));
    CODEACT_TRY_STATUS(r.optional("args_delta", d.args_delta));
    CODEACT_TRY_STATUS(r.optional("tool_call_id", d.tool_call_id));
    return ModelResponsePartDelta(std::move(d));
  }
  if (kind == "thinking") {
    ThinkingPartDelta d;
    CODEACT_TRY_STATUS(r.optional("content_delta", d.content_delta));
    CODEACT_TRY_STATUS(r.optional("signature_delta", d.signature_delta));
    return ModelResponsePartDelta(std::move(d));
  }
  return core::invalid_argument(path + ": unknown part_delta_kind \"" + kind + "\"");
}

Result<ModelStreamEvent> stream_event_from_json(const Json& j) {
  const std::string path = "event";
  core::JsonReader r(j, path);
  CODEACT_TRY_STATUS(r.valid());
  std::string kind;
  CODEACT_TRY_STATUS(r.required("event_kind", kind));
  int64_t index = 0;
  CODEACT_TRY_STATUS(r.optional("index", index));
  if (kind == "part_start" || kind == "part_end") {
    auto it = j.find("part");
    if (it == j.end()) return core::invalid_argument(path + ": \"part\" is required");
    CODEACT_TRY(auto part, response_part_from_json(*it));
    if (kind == "part_start")
      return ModelStreamEvent(PartStartEvent{static_cast<int>(index), std::move(part)});
    return ModelStreamEvent(PartEndEvent{static_cast<int>(index), std::move(part)});
  }
  if (kind == "part_delta") {
    auto it = j.find("delta");
    if (it == j.end()) return core::invalid_argument(path + ": \"delta\" is required");
    CODEACT_TRY(auto delta, part_delta_from_json(*it));
    return ModelStreamEvent(PartDeltaEvent{static_cast<int>(index), std::move(delta)});
  }
  if (kind == "final_response") {
    auto it = j.find("response");
    if (it == j.end()) return core::invalid_argument(path + ": \"response\" is required");
    CODEACT_TRY(auto response, response_from_json(*it));
    return ModelStreamEvent(FinalResponseEvent{std::move(response)});
  }
  return core::invalid_argument(path + ": unknown event_kind \"" + kind +
                                "\" (expected part_start, part_delta, part_end or final_response)");
}

}  // namespace codeact::llm
