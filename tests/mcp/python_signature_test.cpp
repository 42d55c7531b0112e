// JSON Schema -> Python signatures: hand-written edge cases (the seed's bugs among them), each
// checked for the text a model would read and for being valid Python.
#include "codeact/mcp/python_signature.hpp"

#include <gtest/gtest.h>

#include "codeact/core/subprocess.hpp"
#include "codeact/mcp/server_set.hpp"

namespace codeact::mcp {
namespace {

Json J(const char* text) { return Json::parse(text); }

// Compiles `source` with Python the way the kernel compiles stubs (lazy annotations).
std::string python_error(const std::string& source) {
  auto r = core::run_process(
      {"python3", "-c",
       "import sys, __future__\n"
       "src = sys.stdin.read()\n"
       "compile(src, '<sig>', 'exec', flags=__future__.annotations.compiler_flag)\n"},
      std::chrono::seconds(20), source);
  if (!r.ok()) return r.error().to_string();
  return r->exit_code == 0 ? "" : r->stderr_text;
}

TEST(PythonIdentifier, MakesValidNames) {
  EXPECT_EQ(python_identifier("get-weather.v2"), "get_weather_v2");
  EXPECT_EQ(python_identifier("class"), "class_");
  EXPECT_EQ(python_identifier("2fa"), "_2fa");
  EXPECT_EQ(python_identifier(""), "_");
  EXPECT_EQ(python_identifier("ok_name"), "ok_name");
  EXPECT_EQ(python_identifier("caf\xc3\xa9"), "caf__");
}

TEST(PythonLiteral, Values) {
  EXPECT_EQ(python_literal(J("null")), "None");
  EXPECT_EQ(python_literal(J("true")), "True");
  EXPECT_EQ(python_literal(J("2")), "2");
  EXPECT_EQ(python_literal(J("2.0")), "2.0");
  EXPECT_EQ(python_literal(J(R"("it's")")), R"("it's")") << "Python's repr() quoting";
  EXPECT_EQ(python_literal(J(R"({"a": [1, "x\n"]})")), R"({'a': [1, 'x\n']})");
}

TEST(PythonType, ScalarsArraysObjectsUnions) {
  Json root = Json::object();
  EXPECT_EQ(python_type(J(R"({"type":"string"})"), root), "str");
  EXPECT_EQ(python_type(J(R"({"type":"integer"})"), root), "int");
  EXPECT_EQ(python_type(J(R"({"type":"number"})"), root), "float");
  EXPECT_EQ(python_type(J(R"({"type":"boolean"})"), root), "bool");
  EXPECT_EQ(python_type(J(R"({"type":"array","items":{"type":"array","items":{"type":"number"}}})"),
                        root),
            "list[list[float]]");
  EXPECT_EQ(python_type(J(R"({"type":"array"})"), root), "list[Any]");
  EXPECT_EQ(python_type(J(R"({"type":"object","additionalProperties":{"type":"integer"}})"), root),
            "dict[str, int]");
  EXPECT_EQ(python_type(J(R"({"type":"object"})"), root), "dict[str, Any]");
  // The seed produced Literal['a' | 'b'] (invalid) and crashed on type lists.
  EXPECT_EQ(python_type(J(R"({"type":"string","enum":["a","b"]})"), root), "Literal['a', 'b']");
  EXPECT_EQ(python_type(J(R"({"enum":[1, null]})"), root), "Literal[1] | None");
  EXPECT_EQ(python_type(J(R"({"type":["string","null"]})"), root), "str | None");
  EXPECT_EQ(
      python_type(J(R"({"anyOf":[{"type":"integer"},{"type":"string"},{"type":"null"}]})"), root),
      "int | str | None");
  EXPECT_EQ(python_type(J(R"({"oneOf":[{"type":"integer"},{"type":"integer"}]})"), root), "int");
  EXPECT_EQ(python_type(J(R"({"const":"fixed"})"), root), "Literal['fixed']");
  EXPECT_EQ(python_type(
                J(R"({"type":"array","prefixItems":[{"type":"number"},{"type":"string"}]})"), root),
            "tuple[float, str]");
  EXPECT_EQ(python_type(J(R"({})"), root), "Any");
}

TEST(PythonType, RefsResolveIncludingNonArrayRefsAndCycles) {
  Json root = J(R"({"$defs": {
      "Color": {"type": "string", "enum": ["red", "green"]},
      "Node": {"type": "object", "properties": {"value": {"type": "integer"},
                                                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
               "required": ["value"]}},
      "definitions": {"Id": {"type": "integer"}}})");
  std::vector<std::string> classes;
  // The seed turned a non-array $ref into None.
  EXPECT_EQ(python_type(J(R"({"$ref":"#/$defs/Color"})"), root, &classes),
            "Literal['red', 'green']");
  EXPECT_EQ(python_type(J(R"({"$ref":"#/definitions/Id"})"), root, &classes), "int");
  EXPECT_EQ(python_type(J(R"({"$ref":"#/$defs/Node"})"), root, &classes), "Node");
  ASSERT_EQ(classes.size(), 1u);
  // Keys come in name order (core::Json keeps objects sorted).
  EXPECT_EQ(classes[0],
            "class Node(TypedDict):\n    children: NotRequired[list[Node]]\n    value: int");
  EXPECT_EQ(python_type(J(R"({"$ref":"#/$defs/Missing"})"), root, &classes), "Any");
}

// Found by tests/fuzz (python_signature, input
// corpus/python_signature/regression-nullable-not-bool): a schema whose "nullable" was not a
// boolean made nlohmann's value() throw out of python_signature, so one odd tool of an MCP
// server broke every tool's listing.
TEST(PythonType, NullableThatIsNotABooleanIsIgnored) {
  Json schema = J(R"({"type": "object", "properties": {
    "a": {"type": "string", "nullable": "it's \"quoted\""},
    "b": {"type": "integer", "nullable": true}}})");
  EXPECT_EQ(python_type(schema["properties"]["a"], schema), "str");
  EXPECT_EQ(python_type(schema["properties"]["b"], schema), "int | None");
  auto sig = python_signature("f", "", schema);
  ASSERT_TRUE(sig.ok()) << sig.error().to_string();
  EXPECT_EQ(sig->signature, "def f(a: str | None = None, b: int | None = None) -> Any");
}

TEST(PythonSignature, RequiredFirstDefaultsDocsAndRenamedParameters) {
  Json schema = J(R"({"type": "object", "properties": {
      "lambda": {"type": "number", "default": 0.5, "description": "Smoothing."},
      "class": {"type": "string", "enum": ["a", "b"], "description": "Which class.\nSecond line."},
      "from-date": {"type": ["string", "null"]},
      "limit": {"type": "integer"}},
    "required": ["class"]})");
  auto sig = python_signature("get_weather_v2", "Weather with \"\"\"quotes\"\"\".", schema);
  ASSERT_TRUE(sig.ok()) << sig.error().to_string();
  EXPECT_EQ(sig->signature,
            "def get_weather_v2(class_: Literal['a', 'b'], from_date: str | None = None, lambda_: "
            "float = 0.5, "
            "limit: int | None = None) -> Any");
  EXPECT_EQ(sig->param_names.at("class_"), "class");
  EXPECT_EQ(sig->param_names.at("from_date"), "from-date");
  EXPECT_NE(sig->doc.find("Args:\n    class_: Which class.\n        Second line."),
            std::string::npos)
      << sig->doc;
  EXPECT_NE(sig->doc.find("    lambda_: Smoothing."), std::string::npos);
  EXPECT_EQ(python_error(sig->text()), "") << sig->text();
}

TEST(PythonSignature, NestedObjectsBecomeTypedDicts) {
  Json schema = J(R"({"type": "object", "properties": {
      "address": {"type": "object", "title": "Address",
                  "properties": {"street": {"type": "string"}, "zip-code": {"type": "string"}},
                  "required": ["street"]},
      "tags": {"type": "object", "additionalProperties": {"type": "string"}}},
    "required": ["address", "tags"]})");
  auto sig = python_signature("ship", "", schema,
                              J(R"({"type":"object","properties":{"id":{"type":"integer"}}})"));
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(sig->signature, "def ship(address: ShipAddress, tags: dict[str, str]) -> ShipResult");
  ASSERT_EQ(sig->classes.size(), 2u);
  // A key that is not an identifier needs the functional TypedDict form.
  EXPECT_EQ(
      sig->classes[0],
      "ShipAddress = TypedDict('ShipAddress', {'street': str, 'zip-code': NotRequired[str]})");
  EXPECT_EQ(python_error(sig->text()), "") << sig->text();
}

TEST(PythonSignature, ScalarResultWrappersAreUnwrapped) {
  auto sig = python_signature(
      "add", "Adds.",
      J(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})"),
      J(R"({"type":"object","properties":{"result":{"type":"integer"}},"required":["result"]})"));
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(sig->signature, "def add(a: int) -> int");
  EXPECT_EQ(sig->text(), "def add(a: int) -> int:\n    \"\"\"Adds.\"\"\"\n    ...\n");
}

TEST(PythonSignature, OutputSchemaRefsResolveInTheOutputSchema) {
  auto sig = python_signature("convert", "", Json::object(),
                              J(R"({"type":"object","$defs":{"T":{"type":"object",
      "properties":{"tz":{"type":"string"}},"required":["tz"]}},
      "properties":{"source":{"$ref":"#/$defs/T"}},"required":["source"]})"));
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(sig->signature, "def convert() -> ConvertResult");
  ASSERT_EQ(sig->classes.size(), 2u);
  EXPECT_EQ(sig->classes[0], "class T(TypedDict):\n    tz: str");
  EXPECT_EQ(sig->classes[1], "class ConvertResult(TypedDict):\n    source: T");
}

TEST(PythonSignature, NoPropertiesAndFreeFormArguments) {
  auto none = python_signature("ping", "", J(R"({"type":"object"})"));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->signature, "def ping() -> Any");
  auto free = python_signature("put", "",
                               J(R"({"type":"object","additionalProperties":{"type":"string"}})"));
  ASSERT_TRUE(free.ok());
  EXPECT_EQ(free->signature, "def put(**kwargs: str) -> Any");
  EXPECT_TRUE(free->var_keyword);
  EXPECT_FALSE(python_signature("not-valid", "", Json::object()).ok());
}

TEST(PythonSignature, DocstringEndingInAQuoteStaysValid) {
  auto sig = python_signature("say", "Says \"hi\"", Json::object());
  ASSERT_TRUE(sig.ok());
  EXPECT_EQ(python_error(sig->text()), "") << sig->text();
}

TEST(BindTools, SameNameFromTwoServersIsAnErrorNamingBoth) {
  McpTool a;
  a.name = "search";
  McpTool b;
  b.name = "search";
  auto r = bind_tools({{"docs", a}, {"web", b}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("'docs'"), std::string::npos);
  EXPECT_NE(r.error().message().find("'web'"), std::string::npos);
  // Names equal after sanitizing collide too.
  McpTool c;
  c.name = "get-time";
  McpTool d;
  d.name = "get_time";
  EXPECT_FALSE(bind_tools({{"one", c}, {"two", d}}).ok());
  auto ok = bind_tools({{"one", c}, {"two", a}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)[0].python.name, "get_time");
}

TEST(ServerConfig, ParsesTransportsAndInterpolatesPerServer) {
  Json conf = J(R"({"mcp_servers": {
      "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"], "env": {"TZ": "UTC"}},
      "docs": {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}, "timeout": 5},
      "old": {"url": "http://127.0.0.1:9000/sse"},
      "broken": {"url": "http://x/mcp", "headers": {"A": "${UNSET_VAR_FOR_TEST}"}},
      "bad": {"args": []}}})");
  auto env = [](const std::string& n) -> std::optional<std::string> {
    if (n == "DOCS_TOKEN") return "t0k";
    return std::nullopt;
  };
  auto r = parse_mcp_servers(conf, env);
  ASSERT_TRUE(r.ok());
  std::map<std::string, core::Result<McpServerConfig>> by;
  for (auto& e : *r) by.emplace(e.name, e.config);
  ASSERT_TRUE(by.at("time").ok());
  EXPECT_EQ(by.at("time")->transport, TransportKind::kStdio);
  EXPECT_EQ(by.at("time")->args.size(), 2u);
  ASSERT_TRUE(by.at("docs").ok());
  EXPECT_EQ(by.at("docs")->transport, TransportKind::kStreamableHttp);
  EXPECT_EQ(by.at("docs")->headers[0].second, "Bearer t0k");
  EXPECT_EQ(by.at("docs")->timeout.count(), 5000);
  EXPECT_EQ(by.at("docs")->to_json().dump().find("t0k"), std::string::npos);
  ASSERT_TRUE(by.at("old").ok());
  EXPECT_EQ(by.at("old")->transport, TransportKind::kSse);
  ASSERT_FALSE(by.at("broken").ok());
  EXPECT_NE(by.at("broken").error().message().find("UNSET_VAR_FOR_TEST"), std::string::npos);
  ASSERT_FALSE(by.at("bad").ok());
  EXPECT_NE(by.at("bad").error().message().find("command"), std::string::npos);
}

}  // namespace
}  // namespace codeact::mcp
