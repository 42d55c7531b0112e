// SandboxTools without Docker: each tool against the in-memory backend (tests/support), what the
// model reads (cell formatting, output cut in the middle without splitting a character), the
// timeouts a model may ask for, and which failures are retry prompts and which are errors.
#include "codeact/codeact/sandbox_tools.hpp"

#include <gtest/gtest.h>

#include "codeact/core/strings.hpp"
#include "fake_sandbox_backend.hpp"

namespace codeact::codeact {
namespace {

using core::Json;
using testing::FakeSandboxBackend;

class SandboxToolsUnit : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = std::make_shared<FakeSandboxBackend>();
    ASSERT_TRUE(backend_->start(sandbox::SandboxOptions{.id = "s1"}).ok());
    options_.sandbox_id = "s1";
  }

  SandboxTools tools() { return SandboxTools(backend_, options_); }

  agent::ToolResult call(const std::string& name, Json args, const std::string& call_id = "c1",
                         int step = 1) {
    SandboxTools t = tools();
    agent::RunContext ctx;
    ctx.run_id = "run-7";
    ctx.run_step = step;
    ctx.tool_name = name;
    ctx.tool_call_id = call_id;
    agent::RunLoop loop;
    return loop.run(t.call_tool(agent::ToolCall{name, std::move(args), call_id}, ctx));
  }

  static std::string text_of(const agent::ToolResult& r) {
    if (!r.ok())
      return "error " + std::string(core::code_name(r.error().code())) + ": " + r.error().message();
    if (const auto* ret = std::get_if<agent::ToolReturn>(&*r))
      return ret->text.value_or(ret->content.dump());
    return "retry: " + std::get<agent::ModelRetry>(*r).message;
  }
  static Json content_of(const agent::ToolResult& r) {
    if (!r.ok() || !std::holds_alternative<agent::ToolReturn>(*r)) return nullptr;
    return std::get<agent::ToolReturn>(*r).content;
  }

  std::shared_ptr<FakeSandboxBackend> backend_;
  SandboxToolsOptions options_;
};

// ---------------------------------------------------------------------------------------------
// The list

TEST_F(SandboxToolsUnit, ListsTheNineToolsInOrderNoneWithAContainerId) {
  SandboxTools t = tools();
  agent::RunLoop loop;
  auto listed = loop.run(t.get_tools(agent::RunContext{}));
  ASSERT_TRUE(listed.ok());
  std::vector<std::string> names;
  for (const auto& info : *listed) {
    names.push_back(info.name());
    EXPECT_TRUE(info.sequential) << info.name() << ": the sandbox runs one thing at a time";
    EXPECT_EQ(info.max_retries, 3) << info.name();
    EXPECT_EQ(info.definition.parameters_json_schema.dump().find("container"), std::string::npos)
        << info.name();
    EXPECT_FALSE(info.definition.description.empty()) << info.name();
  }
  EXPECT_EQ(names, SandboxTools::tool_names());
  EXPECT_EQ(names,
            (std::vector<std::string>{"execute_python", "execute_bash", "read_file", "write_file",
                                      "list_files", "list_state_variables", "read_state_variable",
                                      "install_additional_packages", "clear_python_state"}));
  EXPECT_EQ(t.id(), "sandbox");
}

TEST_F(SandboxToolsUnit, MaxRetriesComeFromTheOptions) {
  options_.max_retries = 7;
  SandboxTools t = tools();
  agent::RunLoop loop;
  auto listed = loop.run(t.get_tools(agent::RunContext{}));
  ASSERT_TRUE(listed.ok());
  for (const auto& info : *listed) EXPECT_EQ(info.max_retries, 7) << info.name();
}

// ---------------------------------------------------------------------------------------------
// execute_python

TEST_F(SandboxToolsUnit, CellCarriesTheCallsExecutionIdAndARetryGetsTheRecordedResult) {
  backend_->on_execute = [](FakeSandboxBackend::Sandbox& s, const sandbox::ExecuteRequest& req) {
    s.variables["n"] = {"int", "1", 1};
    sandbox::ExecuteResult r;
    r.ok = true;
    r.result = "1";
    r.stdout_text = "ran " + req.code + "\n";
    r.duration_ms = 3;
    return core::Result<sandbox::ExecuteResult>(r);
  };
  auto first = call("execute_python", {{"code", "n = 1\nn"}}, "c1", 4);
  std::string once = text_of(first);
  EXPECT_EQ(once, "cell 1 ran in 3 ms\nstdout:\nran n = 1\nn\nresult: 1\n");
  EXPECT_EQ(content_of(first)["duration_ms"], 3) << "what the page shows as the cell's duration";
  auto executed = backend_->calls_of("execute");
  ASSERT_EQ(executed.size(), 1u);
  EXPECT_EQ(executed[0].args["execution_id"], "run-7/4/c1");
  EXPECT_EQ(executed[0].args["max_output_bytes"], 8000);
  EXPECT_FALSE(executed[0].args["has_bridge"]) << "no functions, no bridge";

  // The same call again: the kernel's recorded result, said so.
  std::string again = text_of(call("execute_python", {{"code", "n = 1\nn"}}, "c1", 4));
  EXPECT_NE(again.find("(this call already ran; its recorded result is shown)"), std::string::npos)
      << again;
  EXPECT_NE(again.find("result: 1"), std::string::npos);
  EXPECT_EQ(backend_->with("s1", [](auto& s) { return s.cell; }), 1) << "the cell ran once";
}

TEST_F(SandboxToolsUnit, WhatACellPrintsGoesToTheCallsOutputSinkWhileItRuns) {
  std::vector<std::pair<std::string, std::string>> live;
  bool streamed = false;
  backend_->on_execute = [&](FakeSandboxBackend::Sandbox&, const sandbox::ExecuteRequest& req) {
    streamed = static_cast<bool>(req.on_output);
    if (req.on_output) {
      req.on_output("stdout", "1\n");
      EXPECT_EQ(live.size(), 1u) << "the piece reached the sink before the cell ended";
      req.on_output("stderr", "oops\n");
    }
    sandbox::ExecuteResult r;
    r.ok = true;
    r.stdout_text = "1\n";
    r.stderr_text = "oops\n";
    return core::Result<sandbox::ExecuteResult>(r);
  };
  SandboxTools t = tools();
  agent::RunContext ctx;
  ctx.run_id = "run-7";
  ctx.run_step = 1;
  ctx.tool_call_id = "c1";
  ctx.on_output = [&](const std::string& stream, const std::string& text) {
    live.emplace_back(stream, text);
  };
  agent::RunLoop loop;
  auto r = loop.run(t.call_tool(agent::ToolCall{"execute_python", {{"code", "..."}}, "c1"}, ctx));
  EXPECT_TRUE(streamed);
  EXPECT_EQ(live, (std::vector<std::pair<std::string, std::string>>{{"stdout", "1\n"},
                                                                    {"stderr", "oops\n"}}));
  EXPECT_NE(text_of(r).find("stdout:\n1\n"), std::string::npos) << "the result has it all too";

  // No sink (nobody watches): the backend is not asked to stream.
  EXPECT_TRUE(call("execute_python", {{"code", "..."}}, "c2").ok());
  EXPECT_FALSE(streamed);
}

TEST_F(SandboxToolsUnit, TimeoutsAreClampedToWhatTheOptionsAllow) {
  auto asked = [&](Json args) {
    args["code"] = "pass";
    auto r =
        call("execute_python", args, "t" + std::to_string(backend_->calls_of("execute").size()));
    EXPECT_TRUE(r.ok());
    return backend_->calls_of("execute").back().args["timeout_seconds"].get<double>();
  };
  EXPECT_EQ(asked(Json::object()), 120) << "the default";
  EXPECT_EQ(asked({{"timeout", 30}}), 30);
  EXPECT_EQ(asked({{"timeout", 5000}}), 900) << "at most max_timeout_seconds";
  EXPECT_EQ(SandboxTools::timeout_for(options_, 0.2), 1) << "at least one second";
  options_.default_timeout_seconds = 0.5;
  EXPECT_EQ(asked(Json::object()), 1) << "a default below a second is a second";
  options_.default_timeout_seconds = 2000;
  EXPECT_EQ(asked(Json::object()), 900) << "a default above the maximum is cut to it";
  // Below the schema's minimum is the model's mistake: a retry prompt, nothing runs.
  const size_t before = backend_->calls_of("execute").size();
  std::string low = text_of(call("execute_python", {{"code", "pass"}, {"timeout", 0.5}}, "low"));
  EXPECT_EQ(low.rfind("retry: ", 0), 0u) << low;
  EXPECT_NE(low.find("timeout"), std::string::npos) << low;
  EXPECT_EQ(backend_->calls_of("execute").size(), before);
}

TEST_F(SandboxToolsUnit, ARaisingCellAndATimeoutAreResultsTheModelReads) {
  backend_->on_execute = [](FakeSandboxBackend::Sandbox&, const sandbox::ExecuteRequest& req) {
    sandbox::ExecuteResult r;
    if (req.code == "slow()") {
      r.timed_out = true;
      r.error = sandbox::CellError{"TimeoutError", "interrupted", ""};
    } else {
      r.error = sandbox::CellError{"ZeroDivisionError", "division by zero",
                                   "Traceback (most recent call last):\n  File \"<cell>\", line "
                                   "1\nZeroDivisionError: division by zero\n"};
    }
    return core::Result<sandbox::ExecuteResult>(r);
  };
  auto raised = call("execute_python", {{"code", "1/0"}}, "r1");
  ASSERT_TRUE(raised.ok());
  EXPECT_EQ(content_of(raised)["error_type"], "ZeroDivisionError");
  EXPECT_EQ(text_of(raised),
            "cell 1 raised ZeroDivisionError\nerror:\nTraceback (most recent call last):\n  File "
            "\"<cell>\", line 1\nZeroDivisionError: division by zero\n");
  auto slow = call("execute_python", {{"code", "slow()"}, {"timeout", 2}}, "r2");
  ASSERT_TRUE(slow.ok());
  EXPECT_EQ(text_of(slow), "cell 2 timed out after 2 s and was interrupted\n");
  EXPECT_EQ(content_of(slow)["timed_out"], true);
}

TEST_F(SandboxToolsUnit, FailuresTheModelCanFixAreRetriesAndInfrastructureFailuresAreErrors) {
  backend_->fail_next("execute", core::unavailable("the kernel did not answer within 30s"));
  auto down = call("execute_python", {{"code", "x = 1"}}, "e1");
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.error().code(), core::Code::kUnavailable) << "a durable activity retries it";
  EXPECT_EQ(text_of(call("read_file", {{"path", "/output/missing.txt"}}, "e2"))
                .rfind("retry: no file", 0),
            0u);
  EXPECT_EQ(text_of(call("read_file", {{"path", "/etc/passwd"}}, "e3")).rfind("retry: ", 0), 0u)
      << "outside the workspace: PermissionDenied, the model may pick another path";
  EXPECT_EQ(text_of(call("execute_python", {{"code", 1}}, "e4")).rfind("retry: ", 0), 0u)
      << "bad arguments";
  backend_->fail_next("list_files", core::deadline_exceeded("Docker did not answer"));
  EXPECT_EQ(text_of(call("list_files", Json::object(), "e5")).rfind("error DeadlineExceeded", 0),
            0u);
}

TEST(ToolResultFromError, OnlyErrorsTheModelCanActOnBecomeRetryPrompts) {
  using core::Code;
  for (Code c : {Code::kInvalidArgument, Code::kNotFound, Code::kPermissionDenied,
                 Code::kFailedPrecondition, Code::kOutOfRange, Code::kAlreadyExists}) {
    auto r = tool_result_from_error(core::Error(c, "fix it"));
    ASSERT_TRUE(r.ok()) << core::code_name(c);
    EXPECT_EQ(std::get<agent::ModelRetry>(*r).message, "fix it");
  }
  for (Code c : {Code::kUnavailable, Code::kDeadlineExceeded, Code::kInternal,
                 Code::kResourceExhausted, Code::kCancelled, Code::kAborted, Code::kUnknown}) {
    auto r = tool_result_from_error(core::Error(c, "broken"));
    ASSERT_FALSE(r.ok()) << core::code_name(c);
    EXPECT_EQ(r.error().code(), c);
  }
}

// ---------------------------------------------------------------------------------------------
// The other tools

TEST_F(SandboxToolsUnit, BashRunsOnceWithTheCallsExecutionIdAndCutsItsOutput) {
  options_.max_output_bytes = 40;
  backend_->on_bash = [](FakeSandboxBackend::Sandbox&, const std::string& script, double) {
    sandbox::BashResult r;
    r.exit_code = 3;
    r.stdout_text = std::string(100, 'o');
    r.stderr_text = script == "fail" ? "boom\n" : "";
    return core::Result<sandbox::BashResult>(r);
  };
  std::string text = text_of(call("execute_bash", {{"script", "fail"}}, "b1", 2));
  EXPECT_EQ(text.rfind("exit code 3\nstdout:\n", 0), 0u) << text;
  EXPECT_NE(text.find("... [60 bytes omitted] ..."), std::string::npos) << text;
  EXPECT_NE(text.find("stderr:\nboom\n"), std::string::npos) << text;
  EXPECT_EQ(backend_->calls_of("bash").back().args["execution_id"], "run-7/2/b1");
  EXPECT_NE(text_of(call("execute_bash", {{"script", "fail"}}, "b1", 2)).find("already ran"),
            std::string::npos);
}

TEST_F(SandboxToolsUnit, FilesAreWrittenListedAndReadTextOrBinary) {
  EXPECT_EQ(text_of(call("write_file", {{"path", "notes/a.txt"}, {"content", "hello"}}, "f1")),
            "wrote 5 bytes to notes/a.txt");
  EXPECT_EQ(backend_->calls_of("write_file").back().args["execution_id"], "run-7/1/f1")
      << "a retried write must not overwrite what came after it";
  EXPECT_EQ(text_of(call("read_file", {{"path", "/output/notes/a.txt"}}, "f2")), "hello");
  EXPECT_EQ(text_of(call("list_files", Json::object(), "f3")), "/output/notes/a.txt (5 bytes)\n");
  EXPECT_EQ(content_of(call("list_files", Json::object(), "f3"))["files"],
            Json::array({"/output/notes/a.txt"}));
  EXPECT_EQ(backend_->calls_of("list_files").back().args["path"], "/output")
      << "files_root by default";
  EXPECT_EQ(text_of(call("list_files", {{"path", "/output/empty"}}, "f4")),
            "no files under /output/empty");

  ASSERT_TRUE(
      backend_->write_file("s1", "/output/plot.png", std::string("\x89PNG\r\n\x1a\n\0\0", 10))
          .ok());
  EXPECT_EQ(
      text_of(call("read_file", {{"path", "/output/plot.png"}}, "f5")),
      "/output/plot.png is a binary file of 10 bytes; open it with execute_python to process it");
  ASSERT_TRUE(backend_->write_file("s1", "/output/nul.txt", std::string("a\0b", 3)).ok());
  EXPECT_NE(text_of(call("read_file", {{"path", "/output/nul.txt"}}, "f6"))
                .find("binary file of 3 bytes"),
            std::string::npos);

  options_.max_read_bytes = 10;
  ASSERT_TRUE(backend_->write_file("s1", "/output/long.txt", std::string(50, 'x')).ok());
  EXPECT_EQ(text_of(call("read_file", {{"path", "long.txt"}}, "f7")),
            "xxxxx\n... [40 bytes omitted] ...\nxxxxx");
}

TEST_F(SandboxToolsUnit, VariablesAreListedReadAndCleared) {
  EXPECT_EQ(text_of(call("list_state_variables", Json::object(), "v0")), "no variables");
  backend_->with("s1", [](FakeSandboxBackend::Sandbox& s) {
    s.variables["df"] = {"DataFrame", "   x\n0  1", nullptr};
    s.variables["sock"] = {"socket", "<socket>", nullptr, /*persisted=*/false};
    return 0;
  });
  auto listed = call("list_state_variables", Json::object(), "v1");
  EXPECT_EQ(
      text_of(listed),
      "df: DataFrame =    x\n0  1\nsock: socket = <socket>  [not persisted: cannot be pickled]\n");
  EXPECT_EQ(content_of(listed), (Json{{"df", "DataFrame"}, {"sock", "socket"}}));
  EXPECT_EQ(text_of(call("read_state_variable", {{"variable_name", "df"}}, "v2")),
            "df: DataFrame =    x\n0  1");
  EXPECT_EQ(
      text_of(call("read_state_variable", {{"variable_name", "nope"}}, "v3")).rfind("retry: ", 0),
      0u);
  EXPECT_EQ(text_of(call("clear_python_state", Json::object(), "v4")), "cleared 2 names: df, sock");
  EXPECT_EQ(backend_->calls_of("clear").back().args["execution_id"], "run-7/1/v4")
      << "a retried clear must not clear what came after it";
  EXPECT_EQ(text_of(call("clear_python_state", Json::object(), "v5")),
            "the state was already empty");
}

TEST_F(SandboxToolsUnit, PackagesNeedNamesAndNetwork) {
  EXPECT_EQ(text_of(call("install_additional_packages", Json::object(), "p1")),
            "retry: give python_packages and/or system_packages");
  std::string no_network =
      text_of(call("install_additional_packages", {{"python_packages", {"rich"}}}, "p2"));
  EXPECT_EQ(no_network.rfind("retry: installing Python packages needs network", 0), 0u)
      << no_network;
  ASSERT_TRUE(backend_->start(sandbox::SandboxOptions{.id = "s1", .network = true}).ok());
  auto both =
      call("install_additional_packages",
           {{"python_packages", {"rich", "requests==2.32.3"}}, {"system_packages", {"jq"}}}, "p3");
  EXPECT_EQ(text_of(both),
            "Python packages installed: rich, requests==2.32.3\nsystem packages installed: jq\n");
  EXPECT_EQ(content_of(both)["installed"], Json::array({"rich", "requests==2.32.3", "jq"}));
  EXPECT_EQ(backend_->calls_of("install").back().args["execution_id"], "run-7/1/p3");
}

// ---------------------------------------------------------------------------------------------
// What the model reads

TEST(FormatCell, EverythingACellProducedInOneCompactText) {
  sandbox::ExecuteResult r;
  r.ok = true;
  r.cell = 12;
  r.duration_ms = 40;
  r.stdout_text = "fitted\n";
  r.stderr_text = "warning: slow";
  r.result = "0.93";
  r.files = {"/output/trend.csv", "/output/plot.png"};
  r.outputs = {Json{{"type", "image/png"}, {"path", "/output/plot.png"}}};
  r.not_persisted = {Json{{"name", "conn"}, {"reason", "cannot pickle 'socket'"}}};
  r.truncated = Json{{"stdout", 1200}};
  r.notice = "the sandbox had stopped; it was started again";
  EXPECT_EQ(SandboxTools::format_cell(r, 120),
            "cell 12 ran in 40 ms\n"
            "stdout:\nfitted\n"
            "stderr:\nwarning: slow\n"
            "[stdout was cut: 1200 bytes omitted from the middle]\n"
            "result: 0.93\n"
            "files written: /output/trend.csv\n"
            "figures saved: /output/plot.png\n"
            "not persisted (lost if the sandbox restarts): conn (cannot pickle 'socket')\n"
            "notice: the sandbox had stopped; it was started again\n");
}

TEST(FormatCell, TimeoutsRestartsAndReplays) {
  sandbox::ExecuteResult r;
  r.cell = 3;
  r.timed_out = true;
  r.kernel_restarted = true;
  r.error = sandbox::CellError{"TimeoutError", "interrupted", "tb"};
  EXPECT_EQ(SandboxTools::format_cell(r, 1.5),
            "cell 3 timed out after 1.5 s and was interrupted (the kernel did not stop: it was "
            "restarted from the last snapshot)\n");
  sandbox::ExecuteResult again;
  again.ok = true;
  again.cell = 4;
  again.replayed = true;
  again.kernel_restarted = true;
  EXPECT_EQ(SandboxTools::format_cell(again, 120),
            "cell 4 ran in 0 ms\n(this call already ran; its recorded result is shown)\n"
            "notice: the kernel was restarted from the last snapshot\n");
  sandbox::ExecuteResult bare;
  bare.cell = 5;
  bare.error = sandbox::CellError{"NameError", "name 'x' is not defined", ""};
  EXPECT_EQ(SandboxTools::format_cell(bare, 120),
            "cell 5 raised NameError\nerror:\nNameError: name 'x' is not defined\n");
}

TEST(CutMiddle, KeepsHeadAndTailAndSaysHowMuchWasCut) {
  int64_t omitted = -1;
  EXPECT_EQ(cut_middle("short", 10, &omitted), "short");
  EXPECT_EQ(omitted, 0);
  EXPECT_EQ(cut_middle(std::string(1000, 'a'), 0, &omitted), std::string(1000, 'a'))
      << "0 = no limit";
  std::string text = "HEAD" + std::string(100, '-') + "TAIL";
  std::string cut = cut_middle(text, 8, &omitted);
  EXPECT_EQ(cut, "HEAD\n... [100 bytes omitted] ...\nTAIL");
  EXPECT_EQ(omitted, 100);
}

TEST(CutMiddle, NeverSplitsAUtf8Character) {
  // "é" is two bytes, "€" three, "🙂" four: no cut point may land inside one.
  for (const std::string unit : {"é", "€", "🙂"}) {
    std::string text;
    for (int i = 0; i < 50; ++i) text += unit;
    for (int64_t max : {5, 6, 7, 9, 13, 20}) {
      int64_t omitted = 0;
      std::string cut = cut_middle(text, max, &omitted);
      EXPECT_TRUE(core::is_valid_utf8(cut)) << unit << " max " << max << ": " << cut;
      EXPECT_EQ(omitted % static_cast<int64_t>(unit.size()), 0) << unit << " max " << max;
      EXPECT_GT(omitted, 0);
      EXPECT_LE(static_cast<int64_t>(text.size()) - omitted, max) << "what is kept fits the budget";
    }
  }
}

TEST(SandboxToolsOptionsTest, ValidateNamesTheFieldOutOfRange) {
  SandboxToolsOptions o;
  EXPECT_NE(o.validate().error().message().find("sandbox_id is required"), std::string::npos);
  o.sandbox_id = "s";
  EXPECT_TRUE(o.validate().ok());
  o.max_timeout_seconds = 0.5;
  EXPECT_NE(o.validate().error().message().find("max_timeout_seconds must be >= 1"),
            std::string::npos);
  o.max_timeout_seconds = 900;
  o.max_output_bytes = -1;
  EXPECT_NE(o.validate().error().message().find("max_output_bytes"), std::string::npos);
}

}  // namespace
}  // namespace codeact::codeact
