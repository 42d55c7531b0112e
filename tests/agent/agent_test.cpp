// Unit tests of the agent module: typed-argument schemas and validation, toolset wrappers, the
// loop's structured output / instructions / history / cancellation, and the durable seam — the
// same loop driven by a single-threaded executor whose model requests and tool calls complete
// later, as Temporal activities would.
#include "codeact/agent/agent.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <thread>

#include "codeact/llm/function_model.hpp"

namespace codeact::agent {
namespace {

struct Filter {
  double min_score = 0.5;
  static auto fields() {
    return std::tuple{
        field(&Filter::min_score, "min_score", "lowest score").min(0).max(1).with_default()};
  }
};

struct SearchArgs {
  std::string query;
  std::optional<int32_t> limit;
  std::string order = "relevance";
  std::vector<std::string> tags;
  Filter filter;
  std::map<std::string, int> weights;
  bool exact = false;
  static auto fields() {
    return std::tuple{
        field(&SearchArgs::query, "query", "what to look for"),
        field(&SearchArgs::limit, "limit", "maximum hits"),
        field(&SearchArgs::order, "order").choices({"relevance", "date"}).with_default(),
        field(&SearchArgs::tags, "tags", "required tags").with_default(),
        field(&SearchArgs::filter, "filter").with_default(),
        field(&SearchArgs::weights, "weights").with_default(),
        field(&SearchArgs::exact, "exact"),
    };
  }
};

TEST(SchemaTest, StructGivesTheSchemaTheModelSees) {
  Json expected = Json::parse(R"({
    "type": "object",
    "additionalProperties": false,
    "required": ["query", "exact"],
    "properties": {
      "query": {"type": "string", "description": "what to look for"},
      "limit": {"type": "integer", "description": "maximum hits"},
      "order": {"type": "string", "enum": ["relevance", "date"], "default": "relevance"},
      "tags": {"type": "array", "items": {"type": "string"}, "description": "required tags", "default": []},
      "filter": {"type": "object", "additionalProperties": false,
                 "properties": {"min_score": {"type": "number", "description": "lowest score", "minimum": 0.0,
                                              "maximum": 1.0, "default": 0.5}},
                 "default": {"min_score": 0.5}},
      "weights": {"type": "object", "additionalProperties": {"type": "integer"}, "default": {}},
      "exact": {"type": "boolean"}
    }
  })");
  EXPECT_EQ(json_schema<SearchArgs>(), expected) << json_schema<SearchArgs>().dump(2);
}

TEST(SchemaTest, ParsesValidArgumentsWithDefaults) {
  auto args = parse_args<SearchArgs>(
      Json::parse(R"({"query": "cats", "exact": true, "limit": null, "tags": ["a"],
                                                     "weights": {"x": 2}, "filter": {}})"));
  ASSERT_TRUE(args.ok()) << args.error().to_string();
  EXPECT_EQ(args->query, "cats");
  EXPECT_FALSE(args->limit.has_value());
  EXPECT_EQ(args->order, "relevance");
  EXPECT_EQ(args->tags, std::vector<std::string>{"a"});
  EXPECT_EQ(args->filter.min_score, 0.5);
  EXPECT_EQ(args->weights.at("x"), 2);
  EXPECT_TRUE(args->exact);
  auto three =
      parse_args<SearchArgs>(Json::parse(R"({"query": "q", "exact": false, "limit": 3.0})"));
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->limit, 3);
}

TEST(SchemaTest, EveryBadFieldIsNamedWithItsPath) {
  auto args = parse_args<SearchArgs>(
      Json::parse(R"({"limit": 99999999999, "order": "size", "tags": ["ok", 7],
                                                     "filter": {"min_score": -1}, "weights": {"w": "heavy"},
                                                     "exact": "yes", "extra": 1})"));
  ASSERT_FALSE(args.ok());
  EXPECT_EQ(args.error().message(),
            "8 validation errors:\n"
            "- query: field required\n"
            "- limit: integer 99999999999 is out of range\n"
            "- order: must be one of \"relevance\", \"date\", got \"size\"\n"
            "- tags[1]: expected a string, got 7\n"
            "- filter.min_score: must be >= 0, got -1\n"
            "- weights.w: expected an integer, got \"heavy\"\n"
            "- exact: expected a boolean, got \"yes\"\n"
            "- extra: unknown field (not in the schema)");
  auto not_object = parse_args<SearchArgs>(Json::array());
  ASSERT_FALSE(not_object.ok());
  EXPECT_EQ(not_object.error().message(),
            "1 validation error:\n- (arguments): expected an object, got an array");
}

TEST(SchemaTest, JsonSchemaSubsetValidation) {
  Json schema =
      Json::parse(R"({"type": "object", "required": ["path"], "additionalProperties": false,
    "properties": {"path": {"type": "string"}, "mode": {"type": ["string", "null"], "enum": ["r", "w", null]},
                   "lines": {"type": "array", "items": {"type": "integer", "minimum": 1}},
                   "target": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}})");
  EXPECT_TRUE(
      validate_json_schema(
          Json::parse(R"({"path": "a", "mode": null, "lines": [1, 2], "target": 3})"), schema)
          .empty());
  auto errors = validate_json_schema(
      Json::parse(R"({"mode": "x", "lines": [0, "2"], "target": [], "other": 1})"), schema);
  EXPECT_EQ(format_arg_errors(errors),
            "6 validation errors:\n"
            "- path: field required\n"
            "- lines[0]: must be >= 1, got 0\n"
            "- lines[1]: expected an integer, got \"2\"\n"
            "- mode: must be one of \"r\", \"w\", null, got \"x\"\n"
            "- other: unknown field (not in the schema)\n"
            "- target: does not match any of the allowed schemas, got an array");
}

// Found by tests/fuzz (json_schema_validator, input corpus/json_schema_validator/integer_edges):
// an integral float too large for int64_t was cast to it (undefined behaviour) when checking
// "integer" and when printing a schema's bound.
TEST(SchemaTest, HugeIntegralFloatsAreNotCastToInt64) {
  Json schema = Json::parse(R"({"type": "array", "items": {"type": "integer", "maximum": 1e20}})");
  auto errors = validate_json_schema(Json::parse("[2.0, 1e300, -1e19, 2.5]"), schema);
  EXPECT_EQ(format_arg_errors(errors),
            "3 validation errors:\n"
            "- (arguments)[1]: expected an integer, got 1e+300\n"
            "- (arguments)[2]: expected an integer, got -1e+19\n"
            "- (arguments)[3]: expected an integer, got 2.5");
  auto above = validate_json_schema(Json::parse("[1e21]"), Json::parse(R"({"type": "array",
    "items": {"type": "number", "maximum": 1e20}})"));
  EXPECT_EQ(format_arg_errors(above),
            "1 validation error:\n- (arguments)[0]: must be <= 1e+20, got 1e+21");
  auto typed = parse_args<SearchArgs>(Json::parse(R"({"query": "q", "exact": true,
                                                      "limit": 1e300, "weights": {"w": 3e9}})"));
  ASSERT_FALSE(typed.ok());
  EXPECT_EQ(typed.error().message(),
            "2 validation errors:\n"
            "- limit: integer 1e+300 is out of range\n"
            "- weights.w: integer 3000000000 is out of range");
}

// ---------------------------------------------------------------------------------------------
// Toolsets

ToolResult returns(Json v) { return ToolOutcome{ToolReturn{std::move(v), std::nullopt}}; }

std::shared_ptr<FunctionToolset> named_tools(const std::string& id,
                                             std::vector<std::string> names) {
  auto set = std::make_shared<FunctionToolset>(std::vector<Tool>{}, id);
  for (const auto& n : names) {
    set->add(Tool::from_schema(n, "tool " + n, Json{{"type", "object"}},
                               [n, id](const Json&, const RunContext& ctx) {
                                 return returns(id + "." + n + " as " + ctx.tool_name);
                               }));
  }
  return set;
}

std::vector<std::string> names_of(Toolset& ts) {
  RunLoop loop;
  RunContext ctx;
  auto tools = loop.run(ts.get_tools(ctx));
  std::vector<std::string> out;
  if (!tools.ok()) return {"error: " + tools.error().message()};
  for (const auto& t : *tools) out.push_back(t.name());
  return out;
}

std::string call(Toolset& ts, const std::string& name) {
  RunLoop loop;
  RunContext ctx;
  ctx.tool_name = name;
  ToolCall c{name, Json::object(), "id"};
  auto r = loop.run(ts.call_tool(c, ctx));
  if (!r.ok())
    return "error " + std::string(core::code_name(r.error().code())) + ": " + r.error().message();
  return std::get<ToolReturn>(*r).content.get<std::string>();
}

TEST(ToolsetTest, WrappersRenameHideAndCombine) {
  auto sandbox = named_tools("sandbox", {"execute_python", "start_container", "read_file"});
  auto files = named_tools("files", {"read_file"});
  auto filtered = FilteredToolset::excluding(sandbox, {"start_container"});
  auto prefixed = std::make_shared<PrefixedToolset>(files, "fs");
  auto renamed = std::make_shared<RenamedToolset>(
      filtered, std::map<std::string, std::string>{{"run_code", "execute_python"}});
  CombinedToolset all({renamed, prefixed});

  EXPECT_EQ(names_of(all), (std::vector<std::string>{"run_code", "read_file", "fs_read_file"}));
  EXPECT_EQ(call(all, "run_code"), "sandbox.execute_python as execute_python");
  EXPECT_EQ(call(all, "fs_read_file"), "files.read_file as read_file");
  EXPECT_EQ(call(all, "read_file"), "sandbox.read_file as read_file");
  EXPECT_EQ(call(*filtered, "start_container"),
            "error NotFound: tool 'start_container' is not available");
  EXPECT_EQ(call(*renamed, "execute_python"),
            "error NotFound: tool 'execute_python' was renamed to 'run_code'");

  CombinedToolset clash({sandbox, files});
  EXPECT_EQ(names_of(clash)[0],
            "error: tool name conflict: 'read_file' is defined by toolset 'sandbox' and by toolset "
            "'files'; rename "
            "one (PrefixedToolset or RenamedToolset)");
}

TEST(TaskTest, WhenAllReturnsInOrderAndOffloadRunsOnThreads) {
  RunLoop loop;
  auto main_thread = std::this_thread::get_id();
  auto job = [](Executor* ex, int i) -> Task<std::pair<int, std::thread::id>> {
    co_return co_await offload(ex,
                               [i] { return std::make_pair(i * 10, std::this_thread::get_id()); });
  };
  std::vector<Task<std::pair<int, std::thread::id>>> tasks;
  for (int i = 0; i < 4; ++i) tasks.push_back(job(&loop, i));
  auto results = loop.run(when_all(std::move(tasks)));
  ASSERT_EQ(results.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(results[static_cast<size_t>(i)].first, i * 10);
    EXPECT_NE(results[static_cast<size_t>(i)].second, main_thread);
  }
  auto thrower = []() -> Task<int> {
    throw std::runtime_error("boom");
    co_return 1;
  };
  EXPECT_THROW(loop.run(thrower()), std::runtime_error);
}

// ---------------------------------------------------------------------------------------------
// The loop

struct Answer {
  std::string city;
  int64_t population = 0;
  static auto fields() {
    return std::tuple{field(&Answer::city, "city", "name of the city"),
                      field(&Answer::population, "population", "people living there").min(0)};
  }
};

llm::ModelResponse tool_call(const std::string& name, Json args, const std::string& id) {
  llm::ModelResponse r;
  r.parts.push_back(llm::ToolCallPart{name, std::move(args), id, "", {}});
  return r;
}
llm::ModelResponse text(const std::string& t) {
  llm::ModelResponse r;
  r.parts.push_back(llm::TextPart{t});
  return r;
}

TEST(AgentTest, TypedStructuredOutputThroughTheOutputTool) {
  std::vector<llm::ModelRequestParameters> seen;
  auto model = std::make_shared<llm::FunctionModel>(
      [&](const std::vector<llm::ModelMessage>&,
          const llm::AgentInfo& info) -> core::Result<llm::ModelResponse> {
        seen.push_back(*info.params);
        if (seen.size() == 1)
          return tool_call("final_result", {{"city", "Paris"}, {"population", -5}}, "o1");
        return tool_call("final_result", {{"city", "Paris"}, {"population", 2100000}}, "o2");
      });
  AgentOptions options;
  options.output = OutputSpec::of<Answer>();
  Agent agent(model, options);
  auto result = agent.run("Largest French city?");
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  auto answer = result->output_as<Answer>();
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->city, "Paris");
  EXPECT_EQ(answer->population, 2100000);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].output_mode, llm::OutputMode::kTool);
  EXPECT_FALSE(seen[0].allow_text_output);
  ASSERT_EQ(seen[0].output_tools.size(), 1u);
  EXPECT_EQ(seen[0].output_tools[0].name, "final_result");
  EXPECT_EQ(seen[0].output_tools[0].parameters_json_schema, json_schema<Answer>());
}

TEST(AgentTest, InstructionsAreEvaluatedBeforeEveryRequest) {
  std::vector<std::string> instructions_seen;
  auto model = std::make_shared<llm::FunctionModel>(
      [&](const std::vector<llm::ModelMessage>& messages,
          const llm::AgentInfo&) -> core::Result<llm::ModelResponse> {
        instructions_seen.push_back(std::get<llm::ModelRequest>(messages.back()).instructions);
        if (instructions_seen.size() < 3)
          return tool_call("bump", Json::object(), "c" + std::to_string(instructions_seen.size()));
        return text("done");
      });
  int counter = 0;
  AgentOptions options;
  options.instructions = "Static part.";
  options.instructions_fn = [&counter](const RunContext& ctx) -> Task<core::Result<std::string>> {
    co_return "Step " + std::to_string(ctx.run_step) + ", counter " + std::to_string(counter) +
        ", deps " + ctx.deps.value("who", "");
  };
  options.toolsets.push_back(std::make_shared<FunctionToolset>(std::vector<Tool>{Tool::from_schema(
      "bump", "bumps", Json{{"type", "object"}}, [&counter](const Json&, const RunContext&) {
        ++counter;
        return returns(counter);
      })}));
  Agent agent(model, options);
  RunOptions run;
  run.deps = Json{{"who", "tester"}};
  auto result = agent.run("go", run);
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  EXPECT_EQ(instructions_seen,
            (std::vector<std::string>{"Static part.\n\nStep 1, counter 0, deps tester",
                                      "Static part.\n\nStep 2, counter 1, deps tester",
                                      "Static part.\n\nStep 3, counter 2, deps tester"}));
  EXPECT_EQ(result->tool_calls, 2);
  EXPECT_EQ(result->usage.requests, 3);
}

// A model that evaluates the agent's instructions where it runs (as the durable model does on
// the worker): the loop leaves them to it and records what it reports, so the conversation is
// the one direct mode would have.
class InstructingModel final : public AsyncModel {
 public:
  InstructingModel(const Agent& agent, std::shared_ptr<llm::Model> model)
      : agent_(agent), model_(std::move(model)) {}
  bool evaluates_instructions() const override { return true; }
  Task<core::Result<ModelReply>> request(const ModelCall& call) override {
    std::vector<llm::ModelMessage> messages = *call.messages;
    auto instructions_task = agent_.instructions(*call.ctx);
    core::Result<std::string> instructions = co_await instructions_task;
    if (!instructions.ok()) co_return std::move(instructions).error();
    std::get<llm::ModelRequest>(messages.back()).instructions = *instructions;
    auto response = model_->request(messages, call.settings, call.params);
    if (!response.ok()) co_return std::move(response).error();
    co_return ModelReply{std::move(*response), *instructions};
  }
  std::string model_name() const override { return model_->model_name(); }

 private:
  const Agent& agent_;
  std::shared_ptr<llm::Model> model_;
};

TEST(AgentTest, InstructionsEvaluatedByTheModelAreRecordedOnTheRequest) {
  std::vector<std::string> instructions_seen;
  auto model = std::make_shared<llm::FunctionModel>(
      [&](const std::vector<llm::ModelMessage>& messages,
          const llm::AgentInfo&) -> core::Result<llm::ModelResponse> {
        instructions_seen.push_back(std::get<llm::ModelRequest>(messages.back()).instructions);
        if (instructions_seen.size() < 2) return tool_call("noop", Json::object(), "c1");
        return text("done");
      });
  int evaluated = 0;
  AgentOptions options;
  options.instructions = "Static.";
  options.instructions_fn = [&evaluated](const RunContext& ctx) -> Task<core::Result<std::string>> {
    ++evaluated;
    co_return "step " + std::to_string(ctx.run_step);
  };
  options.toolsets.push_back(std::make_shared<FunctionToolset>(std::vector<Tool>{
      Tool::from_schema("noop", "does nothing", Json{{"type", "object"}},
                        [](const Json&, const RunContext&) { return returns(0); })}));
  Agent agent(model, options);
  RunDrivers drivers;
  drivers.model = std::make_shared<InstructingModel>(agent, model);
  RunLoop loop;
  drivers.executor = &loop;
  auto result = loop.run(agent.run_task("go", RunOptions{}, drivers));
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  EXPECT_EQ(instructions_seen,
            (std::vector<std::string>{"Static.\n\nstep 1", "Static.\n\nstep 2"}));
  EXPECT_EQ(evaluated, 2) << "once per request, by the model only";
  // The conversation records what the model was told.
  EXPECT_EQ(std::get<llm::ModelRequest>(result->messages[0]).instructions, "Static.\n\nstep 1");
  EXPECT_EQ(std::get<llm::ModelRequest>(result->messages[2]).instructions, "Static.\n\nstep 2");
}

TEST(AgentTest, MessageHistoryContinuesAConversation) {
  auto model = std::make_shared<llm::FunctionModel>(
      [](const std::vector<llm::ModelMessage>& messages,
         const llm::AgentInfo&) -> core::Result<llm::ModelResponse> {
        return text("seen " + std::to_string(messages.size()) + " messages");
      });
  AgentOptions options;
  options.system_prompts = {"Be brief."};
  Agent agent(model, options);
  auto first = agent.run("one");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->output, "seen 1 messages");
  RunOptions second_run;
  second_run.message_history = first->messages;
  auto second = agent.run("two", second_run);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->output, "seen 3 messages");
  EXPECT_EQ(second->new_messages_start, 2u);
  auto fresh = second->new_messages();
  ASSERT_EQ(fresh.size(), 2u);
  const auto& request = std::get<llm::ModelRequest>(fresh[0]);
  ASSERT_EQ(request.parts.size(), 1u);  // no second system prompt
  EXPECT_EQ(std::get<llm::UserPromptPart>(request.parts[0]).content, "two");
  // The whole result survives JSON (what a workflow returns).
  auto back = run_result_from_json(to_json(*second));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->messages, second->messages);
  EXPECT_EQ(back->output, second->output);
}

TEST(AgentTest, CancelledToolEndsTheRun) {
  auto model = std::make_shared<llm::FunctionModel>(
      [](const std::vector<llm::ModelMessage>&,
         const llm::AgentInfo&) -> core::Result<llm::ModelResponse> {
        return tool_call("stop", Json::object(), "c1");
      });
  AgentOptions options;
  options.toolsets.push_back(std::make_shared<FunctionToolset>(std::vector<Tool>{Tool::from_schema(
      "stop", "", Json{{"type", "object"}}, [](const Json&, const RunContext&) -> ToolResult {
        return core::cancelled("user pressed stop");
      })}));
  Agent agent(model, options);
  auto result = agent.run("go");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code(), core::Code::kCancelled);
  EXPECT_NE(result.error().message().find("user pressed stop"), std::string::npos);
}

TEST(AgentTest, ToolOutputComesAsEventsBetweenTheCallAndItsResult) {
  int turn = 0;
  auto model = std::make_shared<llm::FunctionModel>(
      [&](const std::vector<llm::ModelMessage>&,
          const llm::AgentInfo&) -> core::Result<llm::ModelResponse> {
        return ++turn == 1 ? tool_call("work", Json::object(), "c1") : text("done");
      });
  bool had_sink = false;
  // Not sequential: direct mode runs it on a thread of its own, and its output still comes in
  // order, one event at a time.
  AgentOptions options;
  options.toolsets.push_back(std::make_shared<FunctionToolset>(std::vector<Tool>{Tool::from_schema(
      "work", "", Json{{"type", "object"}}, [&](const Json&, const RunContext& ctx) -> ToolResult {
        had_sink = static_cast<bool>(ctx.on_output);
        if (ctx.on_output) {
          ctx.on_output("stdout", "step 1\n");
          ctx.on_output("stderr", "careful\n");
          ctx.on_output("stdout", "step 2\n");
        }
        return ToolOutcome{ToolReturn{"worked", std::nullopt}};
      })}));
  Agent agent(model, options);
  std::vector<Json> events;
  RunOptions ro;
  ro.on_event = [&](const AgentEvent& e) {
    if (event_kind(e).rfind("tool_", 0) == 0) events.push_back(to_json(e));
  };
  auto result = agent.run("go", ro);
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0]["event_kind"], "tool_call");
  auto output = [](const std::string& stream, const std::string& text) {
    return Json{{"event_kind", "tool_output"},
                {"run_step", 1},
                {"tool_call_id", "c1"},
                {"stream", stream},
                {"text", text}};
  };
  EXPECT_EQ(events[1], output("stdout", "step 1\n"));
  EXPECT_EQ(events[2], output("stderr", "careful\n"));
  EXPECT_EQ(events[3], output("stdout", "step 2\n"));
  EXPECT_EQ(events[4]["event_kind"], "tool_result");
  // The result is the tool's return, not its output.
  EXPECT_EQ(events[4]["part"]["content"], "worked");

  // Nobody watching: the tool gets no sink (and need not ask for live output).
  turn = 0;
  ASSERT_TRUE(agent.run("go").ok());
  EXPECT_FALSE(had_sink);
}

// ---------------------------------------------------------------------------------------------
// The durable seam: a single-threaded executor, and effects that complete "later" (as activity
// results would), never on another thread.

class ManualExecutor final : public Executor {
 public:
  void post(std::coroutine_handle<> h) override { ready_.push_back(h); }
  // Completes pending "activities" one at a time, in the order they were scheduled.
  void run_until_idle() {
    while (!ready_.empty() || !activities_.empty()) {
      while (!ready_.empty()) {
        auto h = ready_.front();
        ready_.pop_front();
        h.resume();
      }
      if (!activities_.empty()) {
        auto complete = std::move(activities_.front());
        activities_.pop_front();
        complete();
      }
    }
  }
  // An awaitable whose value is computed when the executor gets to it.
  template <typename T>
  Task<T> activity(std::string name, std::function<T()> body) {
    log.push_back(name);
    struct Awaiter {
      ManualExecutor* ex;
      std::function<T()> body;
      std::optional<T> value;
      bool await_ready() const noexcept { return false; }
      void await_suspend(std::coroutine_handle<> h) {
        ex->activities_.push_back([this, h] {
          value.emplace(body());
          ex->post(h);
        });
      }
      T await_resume() { return std::move(*value); }
    };
    Awaiter a{this, std::move(body), std::nullopt};
    T v = co_await a;
    co_return v;
  }
  std::vector<std::string> log;

 private:
  std::deque<std::coroutine_handle<>> ready_;
  std::deque<std::function<void()>> activities_;
};

class ActivityModel final : public AsyncModel {
 public:
  ActivityModel(ManualExecutor& ex, std::shared_ptr<llm::Model> model)
      : ex_(ex), model_(std::move(model)) {}
  Task<core::Result<ModelReply>> request(const ModelCall& call) override {
    // Ship the request as JSON, like an activity input, and bring the response back.
    Json input = llm::to_json(*call.messages);
    auto model = model_;
    auto params = call.params;
    auto settings = call.settings;
    // Named locals, not temporaries, inside co_await: g++ 12 can destroy such temporaries twice.
    std::function<core::Result<ModelReply>()> body = [=]() -> core::Result<ModelReply> {
      auto messages = llm::messages_from_json(input);
      CODEACT_TRY(auto response, model->request(*messages, settings, params));
      return ModelReply{std::move(response), std::nullopt};
    };
    auto activity = ex_.activity<core::Result<ModelReply>>("model_request", std::move(body));
    auto reply = co_await activity;
    co_return reply;
  }
  std::string model_name() const override { return model_->model_name(); }

 private:
  ManualExecutor& ex_;
  std::shared_ptr<llm::Model> model_;
};

// Each call completes later, on the executor, as an activity would (the toolset's own wrapper:
// the agent is built with it, as the durable layer builds its agent).
class ActivityToolset final : public WrapperToolset {
 public:
  ActivityToolset(ManualExecutor& ex, std::shared_ptr<Toolset> wrapped)
      : WrapperToolset(std::move(wrapped)), ex_(ex) {}
  Task<ToolResult> call_tool(const ToolCall& call, const RunContext& ctx) override {
    auto inner = wrapped_;
    RunContext copied = ctx;
    copied.executor = nullptr;
    std::function<ToolResult()> body = [inner, call, copied]() -> ToolResult {
      // Inside the "activity": run the real toolset to completion.
      RunLoop loop;
      return loop.run(inner->call_tool(call, copied));
    };
    auto activity = ex_.activity<ToolResult>("tool:" + call.tool_name, std::move(body));
    auto result = co_await activity;
    co_return result;
  }

 private:
  ManualExecutor& ex_;
};

TEST(DurableSeamTest, SameLoopRunsOnASingleThreadedExecutorWithActivities) {
  int model_turn = 0;
  auto model = std::make_shared<llm::FunctionModel>(
      [&](const std::vector<llm::ModelMessage>&,
          const llm::AgentInfo&) -> core::Result<llm::ModelResponse> {
        ++model_turn;
        if (model_turn == 1) {
          llm::ModelResponse r;
          r.parts.push_back(llm::ToolCallPart{"add", {{"a", 1}, {"b", 2}}, "c1", "", {}});
          r.parts.push_back(llm::ToolCallPart{"add", {{"a", 3}, {"b", 4}}, "c2", "", {}});
          return r;
        }
        return text("sums are 3 and 7");
      });
  struct AddArgs {
    int a = 0;
    int b = 0;
    static auto fields() { return std::tuple{field(&AddArgs::a, "a"), field(&AddArgs::b, "b")}; }
  };
  ManualExecutor ex;
  AgentOptions options;
  options.toolsets.push_back(std::make_shared<ActivityToolset>(
      ex, std::make_shared<FunctionToolset>(std::vector<Tool>{Tool::typed<AddArgs>(
              "add", "adds",
              [](const AddArgs& x, const RunContext&) { return returns(x.a + x.b); })})));
  Agent agent(model, options);

  RunDrivers drivers;
  drivers.model = std::make_shared<ActivityModel>(ex, model);
  drivers.executor = &ex;
  drivers.now = [] { return std::string("2026-01-01T00:00:00.000Z"); };
  RunOptions run;
  run.run_id = "wf-1";
  std::vector<std::string> events;
  run.on_event = [&](const AgentEvent& e) { events.push_back(event_kind(e)); };

  const auto thread = std::this_thread::get_id();
  bool same_thread = true;
  run.on_event = [&](const AgentEvent& e) {
    same_thread = same_thread && std::this_thread::get_id() == thread;
    events.push_back(event_kind(e));
  };
  Task<core::Result<AgentRunResult>> task = agent.run_task("add things", run, drivers);
  task.start();
  ex.run_until_idle();
  ASSERT_TRUE(task.done());
  auto result = task.result();
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  EXPECT_EQ(result->output, "sums are 3 and 7");
  EXPECT_EQ(result->run_id, "wf-1");
  EXPECT_TRUE(same_thread);
  // Both tool calls were scheduled before either completed: they run concurrently as activities.
  EXPECT_EQ(ex.log,
            (std::vector<std::string>{"model_request", "tool:add", "tool:add", "model_request"}));
  EXPECT_EQ(events,
            (std::vector<std::string>{"model_request_start", "model_response", "tool_call",
                                      "tool_call", "tool_result", "tool_result",
                                      "model_request_start", "model_response", "final_result"}));
  const auto& returns_msg = std::get<llm::ModelRequest>(result->messages[2]);
  ASSERT_EQ(returns_msg.parts.size(), 2u);
  EXPECT_EQ(std::get<llm::ToolReturnPart>(returns_msg.parts[0]).content, 3);
  EXPECT_EQ(std::get<llm::ToolReturnPart>(returns_msg.parts[1]).content, 7);
  EXPECT_EQ(std::get<llm::ToolReturnPart>(returns_msg.parts[1]).timestamp,
            "2026-01-01T00:00:00.000Z");
}

}  // namespace
}  // namespace codeact::agent
