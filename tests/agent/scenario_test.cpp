// Agent-loop scenarios as data: each tests/agent/scenarios/*.{yaml,yml,json} scripts the model's
// turns and states what must happen (tool runs, what the model is sent back, events, output or
// error).
// This runner gives the scenarios a catalogue of real C++ tools (below) and a scripted
// FunctionModel, runs Agent::run (direct mode: tools on threads) and checks every expectation.
//
// Scenario file keys (all optional except prompt and turns):
//   behaviour: one sentence: what the scenario proves
//   agent: {tools: [names], max_tool_retries: n, max_output_retries: n,
//           output: text | {mode: tool|native|prompted, schema: {...}},
//           usage_limits: {request_limit, tool_calls_limit, input_tokens_limit,
//                          output_tokens_limit, total_tokens_limit},
//           instructions: text, system_prompt: text}
//   prompt: the user prompt
//   turns: the model's responses in order; each {text: "...", text_chunks: [...],
//          tool_calls: [{tool, id, args | args_raw}], usage: {input_tokens, output_tokens}}
//   expect:
//     output: the run's output (JSON equality)
//     error: {code: <gRPC code name>, contains: text}
//     tool_runs: [{tool, args}] the calls the tool bodies executed (order-insensitive)
//     sent: [{turn: n, parts: [{kind: tool-return|retry-prompt|user-prompt|system-prompt,
//            tool: name, content: json, contains: text}]}] the request parts turn n received
//     events: [kinds] the run's events (provider part start/end events left out)
//     usage: {requests, input_tokens, output_tokens}
//     tool_calls: n successful tool calls
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <stdexcept>

#include "codeact/agent/agent.hpp"
#include "codeact/core/config.hpp"
#include "codeact/llm/function_model.hpp"

namespace codeact::agent {
namespace {

using core::Json;
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Tool catalogue

struct AddArgs {
  int64_t a = 0;
  int64_t b = 0;
  static auto fields() {
    return std::tuple{field(&AddArgs::a, "a", "first addend"),
                      field(&AddArgs::b, "b", "second addend")};
  }
};

struct SearchFilter {
  double min_score = 0;
  std::optional<std::string> language;
  static auto fields() {
    return std::tuple{
        field(&SearchFilter::min_score, "min_score", "lowest score kept").min(0).max(1),
        field(&SearchFilter::language, "language", "ISO code")};
  }
};

struct SearchArgs {
  std::string query;
  std::optional<int> limit;
  std::string order = "relevance";
  std::vector<std::string> tags;
  SearchFilter filter;
  static auto fields() {
    return std::tuple{
        field(&SearchArgs::query, "query", "what to look for"),
        field(&SearchArgs::limit, "limit", "maximum number of hits"),
        field(&SearchArgs::order, "order", "sort order")
            .choices({"relevance", "date"})
            .with_default(),
        field(&SearchArgs::tags, "tags", "only documents with all these tags").with_default(),
        field(&SearchArgs::filter, "filter", "score and language filter").with_default(),
    };
  }
};

// State shared by the catalogue's tools during one scenario.
struct World {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Json> runs;            // GUARDED_BY(mu): {tool, args}
  std::set<std::string> started;     // GUARDED_BY(mu): rendezvous tools that began
  std::map<std::string, int> calls;  // GUARDED_BY(mu)
  int running = 0;                   // GUARDED_BY(mu): sequential tools running now
  int max_running = 0;               // GUARDED_BY(mu)

  void record(const std::string& tool, const Json& args) {
    std::lock_guard<std::mutex> lock(mu);
    runs.push_back(Json{{"tool", tool}, {"args", args}});
    calls[tool]++;
  }
};

ToolResult ok(Json content) { return ToolOutcome{ToolReturn{std::move(content), std::nullopt}}; }

// A tool that waits (up to 5 s) until its peer has started too: both return "met <peer>" only if
// the loop ran them at the same time.
Tool rendezvous(World& w, const std::string& self, const std::string& peer) {
  return Tool::from_schema(
      self, "Waits for " + peer + " to start.",
      Json{{"type", "object"}, {"properties", Json::object()}},
      [&w, self, peer](const Json& args, const RunContext&) -> ToolResult {
        w.record(self, args);
        std::unique_lock<std::mutex> lock(w.mu);
        w.started.insert(self);
        w.cv.notify_all();
        bool met =
            w.cv.wait_for(lock, std::chrono::seconds(5), [&] { return w.started.count(peer) > 0; });
        if (!met)
          return core::deadline_exceeded(self + ": " + peer + " never started while I waited");
        return ok("met " + peer);
      });
}

// A sequential tool that notes how many of its kind ran at once.
Tool exclusive(World& w, const std::string& name) {
  return std::move(Tool::from_schema(name, "Runs alone.", Json{{"type", "object"}},
                                     [&w, name](const Json& args, const RunContext&) -> ToolResult {
                                       w.record(name, args);
                                       {
                                         std::lock_guard<std::mutex> lock(w.mu);
                                         w.max_running = std::max(w.max_running, ++w.running);
                                       }
                                       std::this_thread::sleep_for(std::chrono::milliseconds(50));
                                       std::lock_guard<std::mutex> lock(w.mu);
                                       --w.running;
                                       return ok("done " + name);
                                     }))
      .sequential();
}

std::shared_ptr<FunctionToolset> catalogue(World& w, const std::vector<std::string>& names) {
  std::map<std::string, std::function<Tool()>> all = {
      {"add",
       [&] {
         return Tool::typed<AddArgs>("add", "Adds two integers.",
                                     [&w](const AddArgs& a, const RunContext&) -> ToolResult {
                                       w.record("add", to_json_value(a));
                                       return ok(a.a + a.b);
                                     });
       }},
      {"search",
       [&] {
         return Tool::typed<SearchArgs>(
             "search", "Searches documents.",
             [&w](const SearchArgs& a, const RunContext&) -> ToolResult {
               Json args = to_json_value(a);
               w.record("search", args);
               return ok(Json{{"hits", Json::array()}, {"query", a.query}});
             });
       }},
      {"fail",
       [&] {
         return Tool::from_schema("fail", "Always fails.", Json{{"type", "object"}},
                                  [&w](const Json& args, const RunContext&) -> ToolResult {
                                    w.record("fail", args);
                                    return core::unavailable("backend is down (try another way)");
                                  });
       }},
      {"throws",
       [&] {
         return Tool::from_schema("throws", "Throws.", Json{{"type", "object"}},
                                  [&w](const Json& args, const RunContext&) -> ToolResult {
                                    w.record("throws", args);
                                    throw std::runtime_error("index 7 out of range");
                                  });
       }},
      {"flaky",
       [&] {
         return Tool::from_schema(
             "flaky", "Asks to be retried once.", Json{{"type", "object"}},
             [&w](const Json& args, const RunContext& ctx) -> ToolResult {
               w.record("flaky", args);
               if (ctx.retry == 0) return ToolOutcome{ModelRetry{"not ready yet, call me again"}};
               return ok("ready after " + std::to_string(ctx.retry) + " retry");
             });
       }},
      {"echo",
       [&] {
         return Tool::from_schema(
             "echo", "Echoes text.",
             Json{{"type", "object"},
                  {"properties",
                   {{"text", {{"type", "string"}}},
                    {"times", {{"type", "integer"}, {"minimum", 1}}}}},
                  {"required", {"text"}},
                  {"additionalProperties", false}},
             [&w](const Json& args, const RunContext&) -> ToolResult {
               w.record("echo", args);
               return ToolOutcome{ToolReturn{args, args["text"].get<std::string>()}};
             });
       }},
      {"meet_a", [&] { return rendezvous(w, "meet_a", "meet_b"); }},
      {"meet_b", [&] { return rendezvous(w, "meet_b", "meet_a"); }},
      {"alone_a", [&] { return exclusive(w, "alone_a"); }},
      {"alone_b", [&] { return exclusive(w, "alone_b"); }},
  };
  auto set = std::make_shared<FunctionToolset>();
  for (const auto& n : names) {
    auto it = all.find(n);
    if (it == all.end())
      throw std::runtime_error("scenario names unknown catalogue tool '" + n + "'");
    set->add(it->second());
  }
  return set;
}

// ---------------------------------------------------------------------------------------------
// Scripted model

llm::ModelResponse response_for(const Json& turn) {
  llm::ModelResponse r;
  if (turn.contains("text")) r.parts.push_back(llm::TextPart{turn["text"].get<std::string>()});
  if (turn.contains("text_chunks")) {
    std::string all;
    for (const auto& c : turn["text_chunks"]) all += c.get<std::string>();
    r.parts.push_back(llm::TextPart{all});
  }
  for (const auto& c : turn.value("tool_calls", Json::array())) {
    std::string id = core::json_string(c, "id");
    if (c.contains("args_raw")) {
      r.parts.push_back(llm::ToolCallPart::from_args_text(c["tool"].get<std::string>(),
                                                          c["args_raw"].get<std::string>(), id));
    } else {
      r.parts.push_back(llm::ToolCallPart{
          c["tool"].get<std::string>(), c.value("args", Json::object()), id, "", {}});
    }
  }
  if (turn.contains("usage")) {
    r.usage.input_tokens = core::json_int(turn["usage"], "input_tokens");
    r.usage.output_tokens = core::json_int(turn["usage"], "output_tokens");
  }
  r.usage.requests = 1;
  return r;
}

struct Script {
  Json turns;
  std::mutex mu;
  size_t next = 0;                                   // GUARDED_BY(mu)
  std::vector<std::vector<llm::ModelMessage>> seen;  // GUARDED_BY(mu): messages at each turn
};

std::shared_ptr<llm::FunctionModel> scripted_model(Script& s) {
  auto stream = [&s](const std::vector<llm::ModelMessage>& messages, const llm::AgentInfo&,
                     const llm::StreamHandler& emit) -> core::Result<llm::ModelResponse> {
    Json turn;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.seen.push_back(messages);
      if (s.next >= s.turns.size()) {
        return core::failed_precondition("scripted model: no turn " + std::to_string(s.next + 1) +
                                         " in the scenario");
      }
      turn = s.turns[s.next++];
    }
    llm::ModelResponse r = response_for(turn);
    if (turn.contains("text_chunks")) {
      emit(llm::PartStartEvent{0, llm::TextPart{}});
      for (const auto& c : turn["text_chunks"])
        emit(llm::PartDeltaEvent{0, llm::TextPartDelta{c.get<std::string>()}});
      emit(llm::PartEndEvent{0, r.parts[0]});
      return r;
    }
    llm::ModelResponse copy = r;
    llm::replay_as_stream(copy, [&](const llm::ModelStreamEvent& e) {
      return std::holds_alternative<llm::FinalResponseEvent>(e) ? true : emit(e);
    });
    return r;
  };
  return std::make_shared<llm::FunctionModel>(nullptr, stream, "scripted");
}

// ---------------------------------------------------------------------------------------------
// Checks

std::string part_kind(const llm::ModelRequestPart& p) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, llm::SystemPromptPart>) return "system-prompt";
        if constexpr (std::is_same_v<T, llm::UserPromptPart>) return "user-prompt";
        if constexpr (std::is_same_v<T, llm::ToolReturnPart>) return "tool-return";
        return "retry-prompt";
      },
      p);
}

// The parts of the last request in `messages`.
std::vector<llm::ModelRequestPart> last_request_parts(
    const std::vector<llm::ModelMessage>& messages) {
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    if (const auto* r = std::get_if<llm::ModelRequest>(&*it)) return r->parts;
  }
  return {};
}

void check_part(const llm::ModelRequestPart& part, const Json& want, const std::string& where) {
  SCOPED_TRACE(where);
  EXPECT_EQ(part_kind(part), want.value("kind", part_kind(part)));
  std::string tool, text;
  Json content;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, llm::ToolReturnPart>) {
          tool = x.tool_name;
          content = x.content;
          text = x.content_text();
        } else if constexpr (std::is_same_v<T, llm::RetryPromptPart>) {
          tool = x.tool_name;
          text = x.content;
          content = x.content;
        } else {
          text = x.content;
          content = x.content;
        }
      },
      part);
  if (want.contains("tool")) {
    EXPECT_EQ(tool, want["tool"].get<std::string>());
  }
  if (want.contains("content")) {
    EXPECT_EQ(content, want["content"]) << core::dump_json(content);
  }
  if (want.contains("contains")) {
    EXPECT_NE(text.find(want["contains"].get<std::string>()), std::string::npos)
        << "actual text: " << text;
  }
}

OutputSpec output_spec(const Json& j) {
  if (!j.is_object()) return OutputSpec::text();
  std::string mode = core::json_string(j, "mode", "tool");
  auto m = llm::output_mode_from_name(mode);
  if (!m.ok()) throw std::runtime_error("bad output mode " + mode);
  return OutputSpec::from_schema(j.value("schema", Json::object()), *m,
                                 core::json_string(j, "name", "final_result"));
}

std::optional<int64_t> opt_int(const Json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_number_integer()) return j[key].get<int64_t>();
  return std::nullopt;
}

class ScenarioTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ScenarioTest, Runs) {
  const fs::path path = fs::path(CODEACT_AGENT_SCENARIO_DIR) / GetParam();
  auto loaded = core::load_yaml_file(path.string());
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  const Json sc = *loaded;
  ASSERT_TRUE(sc.contains("prompt") && sc.contains("turns")) << path << ": needs prompt and turns";
  const Json agent_conf = sc.value("agent", Json::object());
  const Json expect = sc.value("expect", Json::object());

  World world;
  Script script;
  script.turns = sc["turns"];
  AgentOptions options;
  options.name = GetParam();
  std::vector<std::string> tool_names;
  for (const auto& t : agent_conf.value("tools", Json::array()))
    tool_names.push_back(t.get<std::string>());
  options.toolsets.push_back(catalogue(world, tool_names));
  options.max_tool_retries = static_cast<int>(core::json_int(agent_conf, "max_tool_retries", 1));
  options.max_output_retries =
      static_cast<int>(core::json_int(agent_conf, "max_output_retries", 1));
  options.output = output_spec(agent_conf.value("output", Json()));
  options.instructions = core::json_string(agent_conf, "instructions");
  if (agent_conf.contains("system_prompt"))
    options.system_prompts.push_back(agent_conf["system_prompt"].get<std::string>());
  const Json ul = agent_conf.value("usage_limits", Json::object());
  if (ul.contains("request_limit"))
    options.usage_limits.request_limit = opt_int(ul, "request_limit");
  options.usage_limits.tool_calls_limit = opt_int(ul, "tool_calls_limit");
  options.usage_limits.input_tokens_limit = opt_int(ul, "input_tokens_limit");
  options.usage_limits.output_tokens_limit = opt_int(ul, "output_tokens_limit");
  options.usage_limits.total_tokens_limit = opt_int(ul, "total_tokens_limit");

  Agent agent(scripted_model(script), options);
  std::vector<std::string> events;
  std::mutex events_mu;
  RunOptions run;
  run.on_event = [&](const AgentEvent& e) {
    std::string kind = event_kind(e);
    std::lock_guard<std::mutex> lock(events_mu);
    if (kind != "model_stream") events.push_back(kind);
  };
  auto result = agent.run(sc["prompt"].get<std::string>(), std::move(run));

  if (expect.contains("error")) {
    ASSERT_FALSE(result.ok()) << "expected an error, got output "
                              << core::dump_json(result->output);
    EXPECT_EQ(core::code_name(result.error().code()), expect["error"].value("code", ""));
    EXPECT_NE(result.error().message().find(expect["error"].value("contains", "")),
              std::string::npos)
        << result.error().message();
  } else {
    ASSERT_TRUE(result.ok()) << result.error().to_string();
  }
  if (expect.contains("output")) {
    EXPECT_EQ(result->output, expect["output"]) << core::dump_json(result->output);
  }
  if (expect.contains("tool_runs")) {
    std::multiset<std::string> got, want;
    for (const auto& r : world.runs) got.insert(core::dump_json(r));
    for (const auto& r : expect["tool_runs"]) {
      want.insert(
          core::dump_json(Json{{"tool", r["tool"]}, {"args", r.value("args", Json::object())}}));
    }
    EXPECT_EQ(got, want);
  }
  for (const auto& s : expect.value("sent", Json::array())) {
    size_t turn = static_cast<size_t>(s["turn"].get<int>());
    ASSERT_LE(turn, script.seen.size())
        << "the model was asked only " << script.seen.size() << " times";
    auto parts = last_request_parts(script.seen[turn - 1]);
    const Json& want = s["parts"];
    ASSERT_EQ(parts.size(), want.size())
        << "turn " << turn << " got " << core::dump_json(llm::to_json(script.seen[turn - 1]));
    for (size_t i = 0; i < parts.size(); ++i)
      check_part(parts[i], want[i], "turn " + std::to_string(turn) + " part " + std::to_string(i));
  }
  if (expect.contains("events")) {
    std::vector<std::string> want;
    for (const auto& e : expect["events"]) want.push_back(e.get<std::string>());
    EXPECT_EQ(events, want);
  }
  if (expect.contains("usage") && result.ok()) {
    const Json& u = expect["usage"];
    if (u.contains("requests")) {
      EXPECT_EQ(result->usage.requests, u["requests"].get<int64_t>());
    }
    if (u.contains("input_tokens")) {
      EXPECT_EQ(result->usage.input_tokens, u["input_tokens"].get<int64_t>());
    }
    if (u.contains("output_tokens")) {
      EXPECT_EQ(result->usage.output_tokens, u["output_tokens"].get<int64_t>());
    }
  }
  if (expect.contains("tool_calls") && result.ok()) {
    EXPECT_EQ(result->tool_calls, expect["tool_calls"].get<int64_t>());
  }
  if (expect.contains("max_running")) {
    EXPECT_EQ(world.max_running, expect["max_running"].get<int>());
  }
  if (expect.contains("turns_used")) {
    EXPECT_EQ(script.seen.size(), expect["turns_used"].get<size_t>());
  }
}

std::vector<std::string> scenario_files() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(CODEACT_AGENT_SCENARIO_DIR)) {
    auto ext = e.path().extension();
    if (ext == ".yaml" || ext == ".yml" || ext == ".json")
      out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, ScenarioTest, ::testing::ValuesIn(scenario_files()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param.substr(0, info.param.rfind('.'));
                           for (auto& c : n) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace codeact::agent
