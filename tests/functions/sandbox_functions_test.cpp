// SandboxFunctions without Docker: what prepare() puts into a sandbox (against the in-memory
// backend, tests/support), the host side of the bridge, and how MCP results become Python values.
#include "codeact/functions/sandbox_functions.hpp"

#include <gtest/gtest.h>

#include "codeact/core/base64.hpp"
#include "fake_sandbox_backend.hpp"

namespace codeact::functions {
namespace {

using core::Json;
using testing::FakeSandboxBackend;

SandboxFunctionsOptions with_host_functions() {
  SandboxFunctionsOptions o;
  o.host_functions = {
      host_function("add", {"a", "b"}, "Adds.", [](int a, int b) { return a + b; }),
      raw_host_function("echo", "def echo(*args, **kwargs) -> Any", "Echoes.",
                        [](const Json& args, const Json& kwargs) -> core::Result<Json> {
                          return Json{{"args", args}, {"kwargs", kwargs}};
                        })};
  return o;
}

TEST(SandboxFunctions, PrepareRegistersStubsOnceAndAgainAfterTheKernelForgotThem) {
  FakeSandboxBackend backend;
  ASSERT_TRUE(backend.start(sandbox::SandboxOptions{.id = "s1"}).ok());
  SandboxFunctions fns(with_host_functions());
  ASSERT_TRUE(fns.prepare(backend, "s1").ok());
  auto registered = backend.calls_of("register_functions");
  ASSERT_EQ(registered.size(), 1u);
  EXPECT_EQ(
      registered[0].args,
      (Json::array(
          {Json{{"name", "add"}, {"signature", "def add(a: int, b: int) -> int"}, {"doc", "Adds."}},
           Json{{"name", "echo"},
                {"signature", "def echo(*args, **kwargs) -> Any"},
                {"doc", "Echoes."}}})));
  // Nothing changed: one lookup of the marker, nothing registered again.
  ASSERT_TRUE(fns.prepare(backend, "s1").ok());
  EXPECT_EQ(backend.calls_of("register_functions").size(), 1u);
  // A clear (or a kernel restart) drops kernel-provided names: the next prepare puts them back.
  ASSERT_TRUE(backend.clear("s1").ok());
  ASSERT_TRUE(fns.prepare(backend, "s1").ok());
  EXPECT_EQ(backend.calls_of("register_functions").size(), 2u);
}

TEST(SandboxFunctions, ExecutePreparesAndGivesTheCellTheBridge) {
  FakeSandboxBackend backend;
  ASSERT_TRUE(backend.start(sandbox::SandboxOptions{.id = "s1"}).ok());
  Json bridged;
  backend.on_execute = [&bridged](FakeSandboxBackend::Sandbox&,
                                  const sandbox::ExecuteRequest& req) {
    // What sandbox code calling add(2, b=3) and echo(1) would send over the bridge.
    auto sum = req.bridge("add", Json::array({2}), Json{{"b", 3}});
    auto echoed = req.bridge("echo", Json::array({1}), Json::object());
    auto unknown = req.bridge("nope", Json::array(), Json::object());
    bridged = Json{{"sum", sum.ok() ? *sum : Json(sum.error().message())},
                   {"echo", echoed.ok() ? *echoed : Json(nullptr)},
                   {"unknown", unknown.ok() ? Json("?") : Json(unknown.error().message())}};
    return core::Result<sandbox::ExecuteResult>(sandbox::ExecuteResult{.ok = true});
  };
  SandboxFunctions fns(with_host_functions());
  auto r = fns.execute(backend, "s1", sandbox::ExecuteRequest{.code = "add(2, b=3)"});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(backend.calls_of("register_functions").size(), 1u) << "prepared first";
  EXPECT_EQ(bridged["sum"], 5);
  EXPECT_EQ(bridged["echo"], (Json{{"args", {1}}, {"kwargs", Json::object()}}));
  EXPECT_EQ(bridged["unknown"], "no function named nope() is offered to this sandbox");
}

TEST(SandboxFunctions, NamesMustBeIdentifiersAndOfferedOnce) {
  SandboxFunctionsOptions twice = with_host_functions();
  twice.host_functions.push_back(twice.host_functions[0]);
  auto dup = SandboxFunctions(twice).bridged_functions();
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message().find("'add' is offered twice"), std::string::npos)
      << dup.error().message();
  SandboxFunctionsOptions bad;
  bad.host_functions = {raw_host_function("not-python", "def f()", "", nullptr)};
  auto invalid = SandboxFunctions(bad).bridged_functions();
  ASSERT_FALSE(invalid.ok());
  EXPECT_NE(invalid.error().message().find("not a Python identifier"), std::string::npos);
  auto ok = SandboxFunctions(with_host_functions()).bridged_functions();
  ASSERT_TRUE(ok.ok());
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[0].origin, "host");
  EXPECT_EQ((*ok)[0].text().rfind("def add(a: int, b: int) -> int:\n", 0), 0u) << (*ok)[0].text();
  EXPECT_NE((*ok)[0].text().find("Adds."), std::string::npos);
}

mcp::ToolBinding binding(Json output_schema = nullptr) {
  mcp::ToolBinding b;
  b.server = "srv";
  b.tool.name = "shot";
  b.tool.output_schema = std::move(output_schema);
  b.python.name = "shot";
  return b;
}

TEST(SandboxFunctions, McpResultsBecomePythonValues) {
  std::vector<std::pair<std::string, std::string>> saved;
  FileSink sink = [&saved](const std::string& path,
                           std::string_view bytes) -> core::Result<std::string> {
    saved.emplace_back(path, std::string(bytes));
    return path;
  };
  mcp::McpCallResult structured;
  structured.structured = Json{{"result", 42}};
  EXPECT_EQ(*SandboxFunctions::to_python_value(
                structured,
                binding(Json{{"type", "object"},
                             {"x-fastmcp-wrap-result", true},
                             {"properties", {{"result", {{"type", "integer"}}}}}}),
                sink, "/output/mcp"),
            Json(42))
      << "a wrapped scalar is unwrapped";
  EXPECT_EQ(*SandboxFunctions::to_python_value(structured, binding(), sink, "/output/mcp"),
            (Json{{"result", 42}}));

  mcp::McpCallResult parts;
  parts.content = Json::array(
      {Json{{"type", "text"}, {"text", "a plot"}},
       Json{{"type", "image"}, {"mimeType", "image/png"}, {"data", core::base64_encode("PNG!")}}});
  auto value = SandboxFunctions::to_python_value(parts, binding(), sink, "/output/mcp");
  ASSERT_TRUE(value.ok()) << value.error().to_string();
  ASSERT_EQ(value->size(), 2u);
  EXPECT_EQ((*value)[0], "a plot");
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved[0].second, "PNG!");
  EXPECT_EQ((*value)[1], saved[0].first);
  EXPECT_EQ(saved[0].first.rfind("/output/mcp/shot-", 0), 0u) << saved[0].first;
  EXPECT_EQ(saved[0].first.substr(saved[0].first.size() - 4), ".png");

  mcp::McpCallResult error;
  error.is_error = true;
  error.content = Json::array({Json{{"type", "text"}, {"text", "city not found"}}});
  auto failed = SandboxFunctions::to_python_value(error, binding(), sink, "/output/mcp");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message(), "city not found") << "raised in the sandbox as ToolError";

  mcp::McpCallResult bad_image;
  bad_image.content =
      Json::array({Json{{"type", "image"}, {"mimeType", "image/png"}, {"data", "not base64!"}}});
  EXPECT_FALSE(SandboxFunctions::to_python_value(bad_image, binding(), sink, "/output/mcp").ok());
}

}  // namespace
}  // namespace codeact::functions
