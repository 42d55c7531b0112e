// parse_json: the one way codeact reads JSON from outside the process.
#include "codeact/core/json.hpp"

#include <gtest/gtest.h>

#include <string>

namespace codeact::core {
namespace {

TEST(ParseJson, ASyntaxErrorNamesWhatAndTheByte) {
  auto j = parse_json("{\"a\": }", "the request");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.error().code(), Code::kInvalidArgument);
  EXPECT_NE(j.error().message().find("the request is not valid JSON (byte 7)"), std::string::npos)
      << j.error().message();
}

// Found by tests/fuzz (python_signature and json_schema_validator): a number too large for a
// double made nlohmann throw out_of_range, which parse_json did not catch, so a provider answer,
// an MCP message or a kernel frame holding 1e400 threw out of the code that reads them.
TEST(ParseJson, ANumberBeyondADoubleIsAnErrorNotAnException) {
  auto j = parse_json(R"({"inputSchema": {"maximum": 111110E111111111111111}})", "the tool");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.error().code(), Code::kInvalidArgument);
  EXPECT_NE(j.error().message().find("the tool cannot be read"), std::string::npos)
      << j.error().message();
  EXPECT_FALSE(parse_json("[2.5e+308]").ok());
  EXPECT_TRUE(parse_json("[1.7e+308, -1e-400]").ok());
}

// Seen while fixing the above (by reading, not by a fuzz run): json_int, which reads e.g. an MCP
// error's "code", cast a float outside int64_t to it, which is undefined behaviour.
TEST(JsonObject, GivesTheMemberOnlyWhenItIsAnObject) {
  Json j = Json::parse(R"({"m": {"id": 1}, "s": "ping", "a": [1]})");
  EXPECT_EQ(json_object(j, "m"), Json::parse(R"({"id": 1})"));
  EXPECT_EQ(json_object(j, "s"), Json::object());
  EXPECT_EQ(json_object(j, "a"), Json::object());
  EXPECT_EQ(json_object(j, "missing"), Json::object());
  EXPECT_EQ(json_object(Json::array({1}), "m"), Json::object());
  EXPECT_EQ(json_object(Json("text"), "m"), Json::object());
}

TEST(JsonInt, AFloatOutsideInt64GivesTheFallback) {
  Json j = Json::parse(R"({"big": 1e300, "neg": -1e19, "frac": 2.7, "u": 18446744073709551615,
                           "min": -9223372036854775808, "text": "3"})");
  EXPECT_EQ(json_int(j, "big", -1), -1);
  EXPECT_EQ(json_int(j, "neg", -1), -1);
  EXPECT_EQ(json_int(j, "frac", -1), 2);
  EXPECT_EQ(json_int(j, "u", -1), -1);
  EXPECT_EQ(json_int(j, "min", -1), INT64_MIN);
  EXPECT_EQ(json_int(j, "text", -1), -1);
}

TEST(ParseJson, NestingUpToTheLimitIsRead) {
  std::string text = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  auto j = parse_json(text);
  ASSERT_TRUE(j.ok()) << j.error().message();
  Json copy = *j;  // copies recurse once per level
  EXPECT_EQ(copy, *j);
}

TEST(ParseJson, AMillionDeepIsRefusedUnparsedInsteadOfCrashingTheProcess) {
  std::string text = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  auto j = parse_json(text, "the model's reply");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(j.error().message(),
            "the model's reply is nested more than 256 levels deep; it was refused unparsed");
  // Also objects, one level past the limit.
  std::string objects;
  for (int i = 0; i <= kMaxJsonDepth; ++i) objects += "{\"a\":";
  objects += "1" + std::string(kMaxJsonDepth + 1, '}');
  EXPECT_FALSE(parse_json(objects).ok());
}

TEST(ParseJson, BracketsInsideStringsDoNotCount) {
  std::string deep_string = "\"" + std::string(10'000, '[') + "\\\"" + "\"";
  auto j = parse_json("{\"s\": " + deep_string + "}");
  ASSERT_TRUE(j.ok()) << j.error().message();
  EXPECT_EQ((*j)["s"].get<std::string>().size(), 10'001u);
  EXPECT_FALSE(json_nests_deeper_than(deep_string, 1));
  EXPECT_TRUE(json_nests_deeper_than("[[1]]", 1));
  EXPECT_TRUE(json_nests_deeper_than("]]]][[[[", 3));  // closers first give no depth back
}

}  // namespace
}  // namespace codeact::core
