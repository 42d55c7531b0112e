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
