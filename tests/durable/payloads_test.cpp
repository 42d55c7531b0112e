// The typed payloads of the durable workflows and activities (payloads.hpp): one JSON mapping
// each, strict (a misspelt or missing key, a wrong type: an error naming it), round trips, and
// every payload the recorded histories hold read back by the typed readers; the `durable:` section
// of app_conf.yml, read the same way; numbers that would not fit read as errors.
#include "codeact/durable/payloads.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "codeact/core/base64.hpp"
#include "codeact/durable/activities.hpp"
#include "codeact/durable/durable_config.hpp"
#include "codeact/durable/workflows.hpp"

namespace codeact::durable {
namespace {

std::string message_of(const core::Status& s) { return s.ok() ? "ok" : s.error().message(); }
template <typename T>
std::string message_of(const core::Result<T>& r) {
  return r.ok() ? "ok" : r.error().message();
}

TEST(TaskInputPayload, RoundTripsAndABareStringIsATask) {
  TaskInput in;
  in.task = "plot it";
  in.agent = "analyst";
  in.model = "openai:gpt-4.1";
  in.python_packages = {"rich"};
  in.mcp_servers = {"time"};
  in.network = true;
  in.usage_limits = agent::UsageLimits{};
  in.usage_limits->request_limit = 7;
  in.tools.default_timeout_seconds = 30;
  in.activities.tool.max_attempts = 2;
  auto back = TaskInput::from_json(in.to_json());
  ASSERT_TRUE(back.ok()) << message_of(back);
  EXPECT_EQ(back->to_json(), in.to_json());
  EXPECT_EQ(back->tools.default_timeout_seconds, 30);
  EXPECT_EQ(back->usage_limits->request_limit, 7);

  auto bare = TaskInput::from_json(Json("say hi"));
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->task, "say hi");
  EXPECT_EQ(bare->agent, "simple_agent");
}

TEST(TaskInputPayload, AMisspeltKeyAWrongTypeAndAMissingTaskAreErrorsNamingThem) {
  EXPECT_EQ(message_of(TaskInput::from_json(Json{{"task", "t"}, {"pyhton_packages", {"numpy"}}}))
                .find("the task input: unknown key \"pyhton_packages\""),
            0u);
  EXPECT_EQ(message_of(TaskInput::from_json(Json{{"task", "t"}, {"network", "yes"}})),
            "the task input: \"network\" must be true or false, got \"yes\"");
  EXPECT_EQ(message_of(TaskInput::from_json(Json{{"agent", "simple_agent"}})),
            "the task input: \"task\" is required");
  EXPECT_NE(
      message_of(TaskInput::from_json(Json{{"task", "t"}, {"tools", {{"max_timeout_secs", 5}}}}))
          .find("unknown key \"max_timeout_secs\""),
      std::string::npos);
  EXPECT_NE(message_of(TaskInput::from_json(
                           Json{{"task", "t"}, {"activities", {{"tools", Json::object()}}}}))
                .find("the activity kinds are model, tool, sandbox"),
            std::string::npos);
  EXPECT_NE(message_of(
                TaskInput::from_json(Json{{"task", "t"}, {"usage_limits", {{"request_limit", 0}}}}))
                .find("usage_limits.request_limit must be a positive integer or null"),
            std::string::npos);
}

TEST(TaskInputPayload, NullUsageLimitsAreTheDefaultsAndANullLimitIsNone) {
  auto none = TaskInput::from_json(Json{{"task", "t"}, {"usage_limits", nullptr}});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->usage_limits.has_value());
  auto unlimited =
      TaskInput::from_json(Json{{"task", "t"}, {"usage_limits", {{"request_limit", nullptr}}}});
  ASSERT_TRUE(unlimited.ok()) << message_of(unlimited);
  EXPECT_FALSE(unlimited->usage_limits->request_limit.has_value());
}

TEST(ChatInputPayload, MinimalInputMessagesAndNoTaskKey) {
  auto minimal = ChatInput::from_json(
      Json{{"idle_timeout_seconds", 60}, {"max_turns_per_run", 2}, {"model", "m"}});
  ASSERT_TRUE(minimal.ok()) << message_of(minimal);
  EXPECT_EQ(minimal->max_turns_per_run, 2);
  auto carried = ChatInput::from_json(
      Json{{"pending", {"one", {{"task", "two"}}, {{"task", "three"}, {"id", "m-3"}}}},
           {"runs", 2},
           {"sandbox_started", true}});
  ASSERT_TRUE(carried.ok()) << message_of(carried);
  ASSERT_EQ(carried->pending.size(), 3u);
  EXPECT_EQ(carried->pending[1].task, "two");
  EXPECT_EQ(carried->pending[2].id, "m-3");
  // A message without an id is carried as the bare string, as before ids existed: a recorded
  // continue-as-new input stays byte for byte what it was.
  EXPECT_EQ(carried->to_json()["pending"],
            (Json{"one", "two", {{"task", "three"}, {"id", "m-3"}}}));
  auto back = ChatInput::from_json(carried->to_json());
  ASSERT_TRUE(back.ok()) << message_of(back);
  EXPECT_EQ(back->to_json(), carried->to_json());
  EXPECT_NE(message_of(ChatMessage::from_json(Json{{"task", "t"}, {"id", 7}})).find("\"id\""),
            std::string::npos);
  EXPECT_NE(message_of(ChatInput::from_json(Json{{"task", "not for a chat"}}))
                .find("unknown key \"task\""),
            std::string::npos);
  EXPECT_NE(message_of(ChatInput::from_json(Json{{"pending", {42}}}))
                .find("a chat message must be a string"),
            std::string::npos);
  EXPECT_EQ(message_of(ChatMessage::from_json(Json{{"task", ""}})),
            "a chat message must not be empty");
}

TEST(ChatPayloads, TurnsRepliesAndTheResultKeepTheirShapeAndRefuseMalformedValues) {
  // The two shapes of a turn, as the chat workflow has always written them.
  const Json answered{{"task", "add"},
                      {"output", "15"},
                      {"files", {"/output/a.txt"}},
                      {"usage", {{"requests", 2}}}};
  const Json failed{
      {"task", "x"}, {"output", nullptr}, {"files", Json::array()}, {"error", "boom"}};
  Json with_id = answered;
  with_id["message_id"] = "m-1";  // the turn of a message that carried an id
  for (const Json& j : {answered, failed, with_id}) {
    auto t = ChatTurn::from_json(j);
    ASSERT_TRUE(t.ok()) << message_of(t);
    EXPECT_EQ(t->to_json(), j);
  }
  EXPECT_EQ(ChatTurn::from_json(failed)->error, "boom");
  EXPECT_EQ(ChatTurn::from_json(with_id)->message_id, "m-1");
  std::vector<ChatTurn> turns = {*ChatTurn::from_json(answered), *ChatTurn::from_json(with_id)};
  ASSERT_NE(find_turn(turns, "m-1"), nullptr);
  EXPECT_EQ(find_turn(turns, "m-1")->output, "15");
  EXPECT_EQ(find_turn(turns, ""), nullptr) << "a turn without an id is nobody's";
  EXPECT_EQ(find_turn(turns, "m-2"), nullptr);
  // A message an older worker refused: its preview names the id.
  const Json sent{{"task", "a long message that the preview cuts well before its end"},
                  {"id", "msg-0123456789abcdef"}};
  std::vector<RejectedMessage> rejected = {{core::json_preview(sent), "unknown key \"id\""}};
  ASSERT_NE(find_rejected(rejected, "msg-0123456789abcdef"), nullptr) << rejected[0].sent;
  EXPECT_EQ(find_rejected(rejected, "msg-0123456789abcde"), nullptr) << "the whole id, quoted";
  EXPECT_FALSE(ChatTurn::from_json(failed)->output.has_value());
  // What used to throw in `codeact chat` (.get<std::string>() of a file) is now an error.
  EXPECT_NE(message_of(ChatTurn::from_json(Json{{"task", "t"}, {"output", "o"}, {"files", {42}}}))
                .find("\"files\" must be a list of strings"),
            std::string::npos);
  EXPECT_NE(message_of(ChatTurn::from_json(Json{{"task", "t"}})).find("neither"),
            std::string::npos);

  AgentOutputReply reply;
  reply.turns = {*ChatTurn::from_json(answered)};
  reply.pending = 1;
  reply.status = "running";
  reply.sandbox_id = "s";
  EXPECT_FALSE(reply.to_json().contains("rejected"));  // only when there is one
  reply.rejected = {RejectedMessage{"{\"tsak\":\"x\"}", "unknown key"}};
  auto reply_back = AgentOutputReply::from_json(reply.to_json());
  ASSERT_TRUE(reply_back.ok()) << message_of(reply_back);
  EXPECT_EQ(reply_back->to_json(), reply.to_json());
  EXPECT_EQ(reply_back->rejected.at(0).error, "unknown key");

  ChatOutput out;
  out.turns = reply.turns;
  out.sandbox_id = "s";
  out.reason = "stopped";
  out.runs = 2;
  EXPECT_EQ(out.to_json(),
            (Json{{"turns", {answered}}, {"sandbox_id", "s"}, {"reason", "stopped"}, {"runs", 2}}));
  EXPECT_EQ(ChatOutput::from_json(out.to_json())->to_json(), out.to_json());
  EXPECT_NE(message_of(ChatOutput::from_json(Json{{"turns", Json::array()}}))
                .find("\"reason\" is required"),
            std::string::npos);

  ProgressReply progress;
  progress.events = {Json{{"event_kind", "sandbox"}}};
  progress.next = 1;
  progress.run_id = "r";
  EXPECT_EQ(ProgressReply::from_json(progress.to_json())->to_json(), progress.to_json());
  // A newer worker's extra key does not break an older follower.
  Json newer = progress.to_json();
  newer["added_later"] = true;
  EXPECT_TRUE(ProgressReply::from_json(newer).ok());
  EXPECT_NE(message_of(ProgressReply::from_json(Json{{"events", Json::array()}, {"next", "1"}}))
                .find("\"next\" must be an integer"),
            std::string::npos);

  // The send_user_task argument: a string or {"task": ...}; anything else names what was sent.
  EXPECT_EQ(ChatMessage::from_json(Json("hi"))->task, "hi");
  EXPECT_EQ(ChatMessage{"hi"}.to_json(), Json("hi"));
  EXPECT_NE(message_of(ChatMessage::from_json(Json{{"tsak", "hi"}})).find("unknown key \"tsak\""),
            std::string::npos);
  EXPECT_NE(message_of(ChatMessage::from_json(Json(42))).find("got 42"), std::string::npos);
}

TEST(ActivityPayloads, EachRoundTrips) {
  codeact::SandboxPlan plan;
  plan.sandbox_id = "s1";
  plan.python_packages = {"rich"};
  plan.network = true;
  auto start = SandboxStartInput::from_json(SandboxStartInput{plan}.to_json());
  ASSERT_TRUE(start.ok());
  EXPECT_EQ(start->to_json(), SandboxStartInput{plan}.to_json());

  SandboxFinishInput finish{"s1", codeact::SandboxEnd::kRemove, true};
  EXPECT_EQ(finish.to_json(),
            (Json{{"sandbox_id", "s1"}, {"mode", "remove"}, {"remove_volume", true}}));
  EXPECT_EQ(SandboxFinishInput::from_json(finish.to_json())->end, codeact::SandboxEnd::kRemove);
  EXPECT_NE(
      message_of(SandboxFinishInput::from_json(Json{{"sandbox_id", "s1"}, {"mode", "delete"}}))
          .find("\"mode\" must be stop, remove or keep"),
      std::string::npos);

  SandboxFilesOutput files{{sandbox::FileEntry{"/output/a.csv", 12, 1700000000.5}}};
  auto files_back = SandboxFilesOutput::from_json(files.to_json());
  ASSERT_TRUE(files_back.ok());
  EXPECT_EQ(files_back->files[0].mtime, 1700000000.5);

  ToolCallInput call;
  call.target.agent = "simple_agent";
  call.target.bind.sandbox_id = "s1";
  call.target.bind.mcp_servers = {"time"};
  call.toolset = "math";
  call.call = agent::ToolCall{"add", Json{{"a", 1}}, "c1"};
  call.ctx.run_id = "r";
  call.ctx.run_step = 3;
  call.ctx.usage.input_tokens = 9;
  auto call_back = ToolCallInput::from_json(call.to_json());
  ASSERT_TRUE(call_back.ok()) << message_of(call_back);
  EXPECT_EQ(call_back->to_json(), call.to_json());
  EXPECT_EQ(call_back->target.bind.tools.sandbox_id, "s1")
      << "the tools are bound to the target's sandbox";

  ModelRequestInput request;
  request.target = call.target;
  request.messages = {llm::ModelRequest::user_prompt("hi")};
  EXPECT_FALSE(request.to_json().contains("sandbox_host")) << "any worker may render it";
  request.sandbox_host = "h2";
  auto request_back = ModelRequestInput::from_json(request.to_json());
  ASSERT_TRUE(request_back.ok()) << message_of(request_back);
  EXPECT_EQ(request_back->sandbox_host, "h2");
  EXPECT_EQ(request_back->to_json(), request.to_json());

  AgentPrepareOutput prepared;
  prepared.system_prompts = {"You are careful."};
  agent::ToolInfo tool;
  tool.definition.name = "add";
  tool.max_retries = 2;
  prepared.toolsets = {ToolsetListing{"math", {tool}}};
  prepared.model = "openai:gpt-4.1";
  auto prepared_back = AgentPrepareOutput::from_json(prepared.to_json());
  ASSERT_TRUE(prepared_back.ok()) << message_of(prepared_back);
  EXPECT_EQ(prepared_back->to_json(), prepared.to_json());

  ModelRequestOutput reply;
  reply.response.parts.push_back(llm::TextPart{"hi"});
  reply.instructions = "Be brief.";
  auto reply_back = ModelRequestOutput::from_json(reply.to_json());
  ASSERT_TRUE(reply_back.ok()) << message_of(reply_back);
  EXPECT_EQ(reply_back->instructions, "Be brief.");
  EXPECT_EQ(reply_back->response.text(), "hi");
}

TEST(ActivityPayloads, TheFirstShapesAreStillRead) {
  // codeact.agent_prepare answered with one list of tools: the sandbox's.
  Json old_prepare{
      {"system_prompts", {"S"}}, {"tools", Json::array()}, {"max_tool_retries", 3}, {"model", "m"}};
  auto prepared = AgentPrepareOutput::from_json(old_prepare);
  ASSERT_TRUE(prepared.ok()) << message_of(prepared);
  ASSERT_EQ(prepared->toolsets.size(), 1u);
  EXPECT_EQ(prepared->toolsets[0].id, "sandbox");
  // codeact.model_request answered with the bare response.
  llm::ModelResponse response;
  response.parts.push_back(llm::TextPart{"done"});
  auto reply = ModelRequestOutput::from_json(llm::to_json(response));
  ASSERT_TRUE(reply.ok()) << message_of(reply);
  EXPECT_EQ(reply->response.text(), "done");
  EXPECT_FALSE(reply->instructions.has_value());
}

TEST(ValuePayloads, ToolResultsRunContextsAndToolInfosRoundTrip) {
  for (const agent::ToolResult& r :
       {agent::ToolResult(agent::ToolOutcome{agent::ToolReturn{Json{{"a", 1}}, std::nullopt}}),
        agent::ToolResult(agent::ToolOutcome{agent::ModelRetry{"again"}}),
        agent::ToolResult(core::unavailable("down")),
        agent::ToolResult(agent::ToolOutcome{agent::ToolReturn{1, "one"}})}) {
    auto back = tool_result_from_json(to_json(r));
    ASSERT_TRUE(back.ok()) << message_of(back);
    EXPECT_EQ(to_json(*back), to_json(r));
  }
  EXPECT_NE(message_of(tool_result_from_json(Json{{"kind", "maybe"}}))
                .find("must be return, retry or error"),
            std::string::npos);
  agent::RunContext ctx;
  ctx.deps = Json{{"sandbox_id", "s1"}};
  ctx.run_step = 3;
  ctx.tool_name = "t";
  ctx.usage.input_tokens = 7;
  auto back = run_context_from_json(to_json(ctx));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(to_json(*back), to_json(ctx));
  EXPECT_NE(message_of(run_context_from_json(Json{{"run_step", "three"}}))
                .find("\"run_step\" must be an integer"),
            std::string::npos);
}

TEST(DurableConfigTest, TheDurableSectionIsReadStrictlyNamingTheKey) {
  auto c = DurableConfig::from_config(Json::parse(R"({"durable": {"reap_interval_seconds": 5,
      "activities": {"model": {"max_attempts": 2}}}, "llm": {}})"));
  ASSERT_TRUE(c.ok()) << message_of(c);
  EXPECT_EQ(c->reap_interval_seconds, 5);
  EXPECT_EQ(c->activities.model.max_attempts, 2);
  EXPECT_EQ(c->activities.tool.max_attempts, ActivityPolicies{}.tool.max_attempts);
  EXPECT_EQ(DurableConfig::from_config(Json{{"llm", Json::object()}})->reap_interval_seconds, 60);
  EXPECT_EQ(DurableConfig::from_config(Json{{"durable", nullptr}})->reap_interval_seconds, 60);
  // Before, each of these was ignored and the default used.
  EXPECT_NE(message_of(DurableConfig::from_config(Json{{"durable", {{"reap_interval_secs", 1}}}}))
                .find("durable: unknown key \"reap_interval_secs\""),
            std::string::npos);
  EXPECT_NE(
      message_of(DurableConfig::from_config(Json{{"durable", {{"reap_interval_seconds", "1"}}}}))
          .find("durable: \"reap_interval_seconds\" must be a number"),
      std::string::npos);
  EXPECT_NE(
      message_of(DurableConfig::from_config(Json{{"durable", {{"reap_interval_seconds", -1}}}}))
          .find("reap_interval_seconds"),
      std::string::npos);
  // Below a second the reaper would busy-loop against Docker and Temporal.
  EXPECT_NE(
      message_of(DurableConfig::from_config(Json{{"durable", {{"reap_interval_seconds", 0.0001}}}}))
          .find("must be 0 (no reaper) or between 1 and"),
      std::string::npos);
  EXPECT_NE(message_of(DurableConfig::from_config(Json{{"durable", "yes"}}))
                .find("durable: expected a JSON object"),
            std::string::npos);
  EXPECT_NE(message_of(DurableConfig::from_config(
                           Json{{"durable", {{"activities", {{"model", {{"heartbeat", 1}}}}}}}}))
                .find("unknown key \"heartbeat\""),
            std::string::npos);
}

TEST(DurableConfigTest, LocalModelRequestsAreTheDefaultAndTravelOnlyWhenTurnedOff) {
  EXPECT_TRUE(ActivityPolicies{}.local_model_requests);
  EXPECT_FALSE(ActivityPolicies{}.to_json().contains("local_model_requests"))
      << "workers before the key refuse unknown keys";
  auto off = DurableConfig::from_config(
      Json::parse(R"({"durable": {"activities": {"local_model_requests": false}}})"));
  ASSERT_TRUE(off.ok()) << message_of(off);
  EXPECT_FALSE(off->activities.local_model_requests);
  EXPECT_EQ(off->activities.to_json()["local_model_requests"], false);
  auto back = ActivityPolicies::from_json(off->activities.to_json());
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->local_model_requests);
  EXPECT_NE(message_of(DurableConfig::from_config(Json::parse(
                           R"({"durable": {"activities": {"local_model_requests": "no"}}})")))
                .find("local_model_requests"),
            std::string::npos);
}

TEST(PayloadNumbers, HugeAndNonFiniteValuesAreErrorsNotUndefinedCasts) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // An integer field given a float out of int64 range, a NaN, a fraction.
  for (const Json& v : {Json(1e300), Json(-1e19), Json(9223372036854775808.0), Json(nan), Json(2.5),
                        Json(18446744073709551615ull)}) {
    EXPECT_NE(message_of(run_context_from_json(Json{{"run_step", v}})).find("\"run_step\" must be"),
              std::string::npos)
        << v.dump();
  }
  EXPECT_EQ(run_context_from_json(Json{{"run_step", 3.0}})->run_step, 3);
  // usage_limits are int64: the largest float below 2^63 is read, 2^63 is not.
  EXPECT_TRUE(usage_limits_from_json(Json{{"request_limit", 9223372036854774784.0}}).ok());
  EXPECT_FALSE(usage_limits_from_json(Json{{"request_limit", 9223372036854775808.0}}).ok());
  // Durations: finite and at most ten years, in the payload and in the options built from C++.
  for (double seconds : {nan, inf, 1e300, kMaxPolicySeconds * 2}) {
    EXPECT_FALSE(ActivityPolicy::from_json(Json{{"start_to_close_seconds", seconds}}, {}).ok())
        << seconds;
    ActivityPolicy p;
    p.heartbeat_seconds = seconds;
    auto o = activity_options(p);
    ASSERT_FALSE(o.ok()) << seconds;
    EXPECT_EQ(o.error().code(), core::Code::kInvalidArgument);
    EXPECT_NE(o.error().message().find("heartbeat_seconds"), std::string::npos);
  }
  EXPECT_EQ(activity_options(ActivityPolicy{})->start_to_close_timeout,
            std::chrono::milliseconds(600000));
  EXPECT_NE(message_of(ChatInput::from_json(Json{{"idle_timeout_seconds", 1e300}}))
                .find("idle_timeout_seconds must be at most"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Every payload of the recorded histories (tests/durable/histories) read by the typed readers.

template <typename T>
core::Status status_of(const core::Result<T>& r) {
  if (r.ok()) return core::ok_status();
  return r.error();
}

Json decode(const Json& payload) {
  auto bytes = core::base64_decode(payload.value("data", ""));
  if (!bytes.ok()) return nullptr;
  auto j = core::parse_json(*bytes);
  return j.ok() ? *j : Json(nullptr);
}

core::Status read_input(const std::string& activity, const Json& j) {
  if (activity == kSandboxStartActivity) return status_of(SandboxStartInput::from_json(j));
  if (activity == kSandboxFilesActivity) return status_of(SandboxFilesInput::from_json(j));
  if (activity == kSandboxFinishActivity) return status_of(SandboxFinishInput::from_json(j));
  if (activity == kAgentPrepareActivity) return status_of(AgentPrepareInput::from_json(j));
  if (activity == kModelRequestActivity) return status_of(ModelRequestInput::from_json(j));
  if (activity == kToolCallActivity) return status_of(ToolCallInput::from_json(j));
  return core::not_found(activity);
}

core::Status read_result(const std::string& activity, const Json& j) {
  if (activity == kSandboxStartActivity) return status_of(SandboxStartOutput::from_json(j));
  if (activity == kSandboxFilesActivity) return status_of(SandboxFilesOutput::from_json(j));
  if (activity == kSandboxFinishActivity) return status_of(SandboxFinishOutput::from_json(j));
  if (activity == kAgentPrepareActivity) return status_of(AgentPrepareOutput::from_json(j));
  if (activity == kModelRequestActivity) return status_of(ModelRequestOutput::from_json(j));
  if (activity == kToolCallActivity) return status_of(tool_result_from_json(j));
  return core::not_found(activity);
}

TEST(RecordedPayloads, EveryInputAndResultOfTheRecordedRunsIsRead) {
  const std::string dir = std::string(CODEACT_SOURCE_DIR) + "/tests/durable/histories";
  int inputs = 0, results = 0, starts = 0, signals = 0, ends = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {  // every set
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    auto history = core::parse_json(std::string((std::istreambuf_iterator<char>(in)), {}));
    ASSERT_TRUE(history.ok()) << entry.path();
    std::map<std::string, std::string> activity_of;  // scheduled event id -> activity type
    std::string workflow;
    for (const auto& e : (*history)["events"]) {
      const std::string type = e.value("eventType", "");
      const std::string where =
          entry.path().filename().string() + " event " + e.value("eventId", "");
      if (type == "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED") {
        const Json& a = e["workflowExecutionStartedEventAttributes"];
        Json input = decode(a["input"]["payloads"][0]);
        workflow = a["workflowType"]["name"];
        core::Status read = workflow == "CodeActChatWorkflow"
                                ? status_of(ChatInput::from_json(input))
                                : status_of(TaskInput::from_json(input));
        EXPECT_TRUE(read.ok()) << where << ": " << message_of(read);
        ++starts;
      } else if (type == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED") {
        const Json& a = e["activityTaskScheduledEventAttributes"];
        const std::string activity = a["activityType"]["name"];
        activity_of[e.value("eventId", "")] = activity;
        core::Status read = read_input(activity, decode(a["input"]["payloads"][0]));
        EXPECT_TRUE(read.ok()) << where << " " << activity << ": " << message_of(read);
        ++inputs;
      } else if (type == "EVENT_TYPE_ACTIVITY_TASK_COMPLETED") {
        const Json& a = e["activityTaskCompletedEventAttributes"];
        const std::string activity = activity_of[a.value("scheduledEventId", "")];
        core::Status read = read_result(activity, decode(a["result"]["payloads"][0]));
        EXPECT_TRUE(read.ok()) << where << " " << activity << ": " << message_of(read);
        ++results;
      } else if (type == "EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED") {
        const Json& a = e["workflowExecutionSignaledEventAttributes"];
        if (a.value("signalName", "") != kSendUserTask) continue;
        core::Status read = status_of(ChatMessage::from_json(decode(a["input"]["payloads"][0])));
        EXPECT_TRUE(read.ok()) << where << ": " << message_of(read);
        ++signals;
      } else if (type == "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW") {
        const Json& a = e["workflowExecutionContinuedAsNewEventAttributes"];
        core::Status read = status_of(ChatInput::from_json(decode(a["input"]["payloads"][0])));
        EXPECT_TRUE(read.ok()) << where << ": " << message_of(read);
        ++ends;
      } else if (type == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED") {
        const Json& a = e["workflowExecutionCompletedEventAttributes"];
        Json result = decode(a["result"]["payloads"][0]);
        core::Status read =
            workflow == "CodeActChatWorkflow"   ? status_of(ChatOutput::from_json(result))
            : workflow == "CodeActTaskWorkflow" ? status_of(TaskOutput::from_json(result))
                                                : core::ok_status();
        EXPECT_TRUE(read.ok()) << where << ": " << message_of(read);
        ++ends;
      }
    }
  }
  EXPECT_GE(signals, 6);
  EXPECT_GE(ends, 6);
  EXPECT_GE(starts, 12);  // two sets of six
  EXPECT_GE(inputs, 100);
  EXPECT_GE(results, 100);
}

}  // namespace
}  // namespace codeact::durable
