// McpClient against real servers: PyPI servers over stdio (mcp-server-time, mcp-server-fetch
// against a local page, mcp-server-git), our SDK fixture over Streamable HTTP (SSE and JSON
// answers) and HTTP+SSE, and a hand-written server that crashes, hangs, writes garbage, sends
// 10 MB, paginates and changes its tool list.
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "codeact/core/subprocess.hpp"
#include "codeact/mcp/client.hpp"
#include "codeact/mcp/server_set.hpp"
#include "mcp_test_support.hpp"

namespace codeact::mcp {
namespace {

using namespace codeact::mcp::testing;
using namespace std::chrono_literals;

bool has_tool(const std::vector<McpTool>& tools, const std::string& name) {
  for (const auto& t : tools) {
    if (t.name == name) return true;
  }
  return false;
}

TEST(McpTimeServer, ListsToolsAndReturnsStructuredContent) {
  CODEACT_REQUIRE_MCP_VENV();
  McpClient client(stdio("time", venv_bin("mcp-server-time"), {"--local-timezone", "UTC"}));
  auto tools = client.list_tools();
  ASSERT_TRUE(tools.ok()) << tools.error().to_string();
  EXPECT_TRUE(has_tool(*tools, "get_current_time"));
  EXPECT_TRUE(has_tool(*tools, "convert_time"));
  EXPECT_EQ(client.server_info().name, "mcp-time");
  auto r = client.call_tool("get_current_time", Json{{"timezone", "Europe/Paris"}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->is_error) << r->text();
  ASSERT_TRUE(r->structured.is_object()) << r->content.dump();
  EXPECT_EQ(r->structured.value("timezone", ""), "Europe/Paris");
  // A bad argument comes back as a tool error with the server's message.
  auto bad = client.call_tool("get_current_time", Json{{"timezone", "Not/AZone"}});
  ASSERT_TRUE(bad.ok()) << bad.error().to_string();
  EXPECT_TRUE(bad->is_error);
  EXPECT_NE(bad->text().find("Not/AZone"), std::string::npos) << bad->text();
}

TEST(McpFetchServer, FetchesAPageServedOnLoopback) {
  CODEACT_REQUIRE_MCP_VENV();
  httplib::Server http;
  http.Get("/page", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        "<html><head><title>T</title></head><body><h1>Hello codeact</h1>"
        "<p>The marker is unique-marker-4242.</p></body></html>",
        "text/html");
  });
  int port = http.bind_to_any_port("127.0.0.1");
  std::thread server([&] { http.listen_after_bind(); });
  McpClient client(
      stdio("fetch", venv_bin("mcp-server-fetch"), {"--ignore-robots-txt", "--allow-private-ips"}));
  // raw: the markdown conversion (readabilipy) shells out to node when node is installed and
  // can hang there; the transport is what is under test.
  auto r = client.call_tool(
      "fetch", Json{{"url", "http://127.0.0.1:" + std::to_string(port) + "/page"}, {"raw", true}});
  http.stop();
  server.join();
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->is_error) << r->text();
  EXPECT_NE(r->text().find("unique-marker-4242"), std::string::npos) << r->text();
}

TEST(McpGitServer, ReadsTheLogOfARealRepository) {
  CODEACT_REQUIRE_MCP_VENV();
  auto dir =
      std::filesystem::temp_directory_path() / ("codeact-mcp-git-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto git = [&](std::vector<std::string> args) {
    args.insert(args.begin(),
                {"git", "-C", dir.string(), "-c", "user.name=T", "-c", "user.email=t@example.com"});
    auto r = core::run_process(args, 20s);
    ASSERT_TRUE(r.ok() && r->exit_code == 0) << (r.ok() ? r->stderr_text : r.error().to_string());
  };
  git({"init", "-q"});
  { std::ofstream(dir / "a.txt") << "hello\n"; }
  git({"add", "a.txt"});
  git({"commit", "-q", "-m", "first commit from the mcp test"});
  McpClient client(stdio("git", venv_bin("mcp-server-git"), {"--repository", dir.string()}));
  auto tools = client.list_tools();
  ASSERT_TRUE(tools.ok()) << tools.error().to_string();
  EXPECT_TRUE(has_tool(*tools, "git_log"));
  auto r = client.call_tool("git_log", Json{{"repo_path", dir.string()}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->is_error) << r->text();
  EXPECT_NE(r->text().find("first commit from the mcp test"), std::string::npos) << r->text();
  client.close();
  std::filesystem::remove_all(dir);
}

TEST(McpRealServers, EverySignatureIsValidPython) {
  CODEACT_REQUIRE_MCP_VENV();
  McpServerSet set(std::vector<McpServerConfig>{
      stdio("time", venv_bin("mcp-server-time")), stdio("fetch", venv_bin("mcp-server-fetch")),
      stdio("git", venv_bin("mcp-server-git")),
      stdio("fixture", venv_bin("python"), {fixture("sdk_server.py")})});
  auto tools = set.tools();
  ASSERT_TRUE(tools.ok()) << tools.error().to_string();
  EXPECT_GE(tools->size(), 15u);
  std::string program = "from typing import Any, Literal, TypedDict, NotRequired\n\n";
  for (const auto& b : *tools) program += b.python.text() + "\n";
  auto r = core::run_process(
      {venv_bin("python"), "-c", "import sys; exec(compile(sys.stdin.read(), '<sigs>', 'exec'))"},
      30s, program);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0) << r->stderr_text << "\n" << program;
  // Spot checks on what the model reads.
  for (const auto& b : *tools) {
    if (b.tool.name == "get_current_time") {
      EXPECT_EQ(b.python.signature.substr(0, 38), "def get_current_time(timezone: str) ->")
          << b.python.signature;
      EXPECT_NE(b.python.doc.find("IANA timezone name"), std::string::npos);
    }
    if (b.tool.name == "add") {
      EXPECT_EQ(b.python.signature, "def add(a: int, b: int = 1) -> int");
    }
    if (b.tool.name == "fetch") {
      EXPECT_NE(b.python.signature.find("max_length: int = 5000"), std::string::npos)
          << b.python.signature;
    }
  }
}

TEST(McpSdkServer, StructuredImagesAndToolErrorsOverStdio) {
  CODEACT_REQUIRE_MCP_VENV();
  McpClient client(stdio("fixture", venv_bin("python"), {fixture("sdk_server.py")}));
  auto add = client.call_tool("add", Json{{"a", 2}, {"b", 40}});
  ASSERT_TRUE(add.ok()) << add.error().to_string();
  EXPECT_EQ(add->structured, (Json{{"result", 42}}));
  auto img = client.call_tool("image", Json::object());
  ASSERT_TRUE(img.ok());
  ASSERT_EQ(img->content.size(), 1u);
  EXPECT_EQ(img->content[0].value("type", ""), "image");
  EXPECT_EQ(img->content[0].value("mimeType", ""), "image/png");
  auto fail = client.call_tool("fail", Json{{"message", "the server says no"}});
  ASSERT_TRUE(fail.ok());
  EXPECT_TRUE(fail->is_error);
  EXPECT_NE(fail->text().find("the server says no"), std::string::npos);
}

void exercise_http(const std::string& url, core::Headers headers = {}) {
  McpServerConfig c;
  c.name = "http";
  c.url = url;
  c.headers = std::move(headers);
  c.transport = url.ends_with("/sse") ? TransportKind::kSse : TransportKind::kStreamableHttp;
  c.timeout = 20s;
  McpClient client(c);
  auto tools = client.list_tools();
  ASSERT_TRUE(tools.ok()) << tools.error().to_string();
  EXPECT_TRUE(has_tool(*tools, "person"));
  auto r = client.call_tool("person", Json{{"name", "Ada"}, {"age", 36}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->structured, (Json{{"name", "Ada"}, {"age", 36}}));
  // Several calls at once over one session.
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      auto e = client.call_tool("echo", Json{{"text", "hi " + std::to_string(i)}});
      if (e.ok() && e->text() == "hi " + std::to_string(i)) good++;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), 4);
}

TEST(McpStreamableHttp, SseAnswersWithSessionAndBearerToken) {
  CODEACT_REQUIRE_MCP_VENV();
  HttpFixture server({"--transport", "streamable-http", "--require-token", "s3cret"});
  ASSERT_TRUE(server.error().empty()) << server.error();
  exercise_http(server.url("/mcp"), {{"Authorization", "Bearer s3cret"}});
  McpServerConfig c;
  c.name = "nope";
  c.url = server.url("/mcp");
  c.transport = TransportKind::kStreamableHttp;
  c.headers = {{"Authorization", "Bearer wrong"}};
  McpClient client(c);
  auto r = client.list_tools();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kUnauthenticated) << r.error().to_string();
  EXPECT_NE(r.error().message().find("401"), std::string::npos);
  EXPECT_NE(r.error().message().find("check the server's `headers`"), std::string::npos)
      << "a 401 says what to fix";
}

TEST(McpStreamableHttp, JsonAnswers) {
  CODEACT_REQUIRE_MCP_VENV();
  HttpFixture server({"--transport", "streamable-http", "--json-response"});
  ASSERT_TRUE(server.error().empty()) << server.error();
  exercise_http(server.url("/mcp"));
}

TEST(McpStreamableHttp, SlowCallTimesOutThenANewSessionWorks) {
  CODEACT_REQUIRE_MCP_VENV();
  HttpFixture server({"--transport", "streamable-http"});
  ASSERT_TRUE(server.error().empty()) << server.error();
  McpServerConfig c;
  c.name = "slow";
  c.url = server.url("/mcp");
  c.transport = TransportKind::kStreamableHttp;
  McpClient client(c);
  auto start = std::chrono::steady_clock::now();
  auto r = client.call_tool("slow", Json{{"seconds", 30}}, 800ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kDeadlineExceeded) << r.error().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  auto e = client.call_tool("echo", Json{{"text", "next"}});
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  EXPECT_EQ(e->text(), "next");
}

void list_changed_over(const std::string& url, TransportKind kind) {
  McpServerConfig c;
  c.name = "grow";
  c.url = url;
  c.transport = kind;
  McpClient client(c);
  auto before = client.list_tools();
  ASSERT_TRUE(before.ok()) << before.error().to_string();
  auto g = client.call_tool("grow", Json::object());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(g->text(), "extra_0");
  // The notification may travel on another stream than the answer: give it a moment.
  for (int i = 0; i < 50 && client.tools_generation() == 0; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(client.tools_generation(), 1);
  auto after = client.list_tools();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->size(), before->size() + 1);
  EXPECT_TRUE(has_tool(*after, "extra_0"));
}

TEST(McpStreamableHttp, ToolListChangedRefreshesTheList) {
  CODEACT_REQUIRE_MCP_VENV();
  HttpFixture server({"--transport", "streamable-http"});
  ASSERT_TRUE(server.error().empty()) << server.error();
  list_changed_over(server.url("/mcp"), TransportKind::kStreamableHttp);
}

TEST(McpHttpSse, OldTransport) {
  CODEACT_REQUIRE_MCP_VENV();
  HttpFixture server({"--transport", "sse"});
  ASSERT_TRUE(server.error().empty()) << server.error();
  exercise_http(server.url("/sse"));
}

TEST(McpFaults, CrashOnStartSaysWhyWithStderr) {
  CODEACT_REQUIRE_MCP_VENV();
  McpClient client(raw_server({"--crash-on-start"}));
  auto r = client.list_tools();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kUnavailable) << r.error().to_string();
  EXPECT_NE(r.error().message().find("exited with status 3"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("cannot open database"), std::string::npos)
      << r.error().message();
}

TEST(McpFaults, MissingProgramIsNotFound) {
  McpClient client(stdio("ghost", "codeact-no-such-mcp-server"));
  auto r = client.connect();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kNotFound);
  EXPECT_NE(r.error().message().find("ghost"), std::string::npos);
}

TEST(McpFaults, HungCallTimesOutIsCancelledAndTheServerRestarts) {
  CODEACT_REQUIRE_MCP_VENV();
  McpClient client(raw_server());
  ASSERT_TRUE(client.connect().ok());
  auto start = std::chrono::steady_clock::now();
  auto r = client.call_tool("hang", Json::object(), 700ms);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kDeadlineExceeded);
  EXPECT_NE(r.error().message().find("restarted on next use"), std::string::npos)
      << r.error().message();
  EXPECT_LT(took, 3s);
  auto e = client.call_tool("echo", Json{{"text", "alive"}});
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  EXPECT_EQ(e->text(), "alive");
}

TEST(McpFaults, CancelTokenStopsAWait) {
  CODEACT_REQUIRE_MCP_VENV();
  McpClient client(raw_server());
  core::CancelToken cancel;
  std::thread t([&] {
    std::this_thread::sleep_for(300ms);
    cancel.cancel();
  });
  auto r = client.call_tool("hang", Json::object(), 20s, &cancel);
  t.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kCancelled);
}

TEST(McpFaults, GarbageOnStdoutFailsTheCallClearlyThenRecovers) {
  CODEACT_REQUIRE_MCP_VENV();
  McpClient client(raw_server());
  auto r = client.call_tool("garbage", Json::object(), 10s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("not a JSON-RPC message"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("this is not json"), std::string::npos);
  auto e = client.call_tool("echo", Json{{"text", "again"}});
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  EXPECT_EQ(e->text(), "again");
}

TEST(McpFaults, CrashDuringACallThenRestart) {
  CODEACT_REQUIRE_MCP_VENV();
  McpClient client(raw_server());
  auto r = client.call_tool("die", Json::object(), 10s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kUnavailable);
  EXPECT_NE(r.error().message().find("exited with status 7"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("segfault in tool die"), std::string::npos)
      << r.error().message();
  auto e = client.call_tool("echo", Json{{"text", "reborn"}});
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  EXPECT_EQ(e->text(), "reborn");
}

TEST(McpFaults, TenMegabyteResult) {
  CODEACT_REQUIRE_MCP_VENV();
  McpClient client(raw_server());
  auto r = client.call_tool("big", Json{{"mb", 10}}, 30s);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->text().size(), size_t{10} << 20);
}

TEST(McpFaults, UnsupportedProtocolVersionIsRefused) {
  CODEACT_REQUIRE_MCP_VENV();
  McpClient client(raw_server({"--protocol", "1999-01-01"}));
  auto r = client.connect();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kFailedPrecondition);
  EXPECT_NE(r.error().message().find("1999-01-01"), std::string::npos);
}

TEST(McpLifecycle, PaginationAndListChanged) {
  CODEACT_REQUIRE_MCP_VENV();
  McpClient client(raw_server({"--page-size", "2"}));
  std::atomic<int> changed{0};
  client.set_on_tools_changed([&] { changed++; });
  auto tools = client.list_tools();
  ASSERT_TRUE(tools.ok()) << tools.error().to_string();
  EXPECT_EQ(tools->size(), 7u);
  EXPECT_TRUE(has_tool(*tools, "get-weather.v2"));
  auto g = client.call_tool("grow", Json::object());
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->text(), "extra_0");
  auto again = client.list_tools();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->size(), 8u);
  EXPECT_TRUE(has_tool(*again, "extra_0"));
  EXPECT_EQ(changed.load(), 1);
  EXPECT_EQ(client.tools_generation(), 1);
}

TEST(McpLifecycle, UnknownToolIsAJsonRpcError) {
  CODEACT_REQUIRE_MCP_VENV();
  McpClient client(raw_server());
  auto r = client.call_tool("nope", Json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::Code::kInvalidArgument);
  EXPECT_NE(r.error().message().find("Unknown tool: nope"), std::string::npos)
      << r.error().message();
}

}  // namespace
}  // namespace codeact::mcp
