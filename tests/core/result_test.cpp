#include "codeact/core/result.hpp"

#include <gtest/gtest.h>

using namespace codeact::core;

namespace {
Result<int> half(int x) {
  if (x % 2) return invalid_argument("odd number " + std::to_string(x));
  return x / 2;
}
Result<int> quarter(int x) {
  CODEACT_TRY(int h, half(x));
  CODEACT_TRY(int q, half(h));
  return q;
}
}  // namespace

TEST(Result, PropagatesTheFirstErrorWithItsMessage) {
  EXPECT_EQ(*quarter(8), 2);
  auto r = quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.error().message(), "odd number 3");
}

TEST(Result, CodeDecidesRetryHttpAndExit) {
  EXPECT_TRUE(unavailable("x").retryable());
  EXPECT_TRUE(deadline_exceeded("x").retryable());
  EXPECT_FALSE(invalid_argument("x").retryable());
  EXPECT_FALSE(not_found("x").retryable());
  EXPECT_EQ(http_status(Code::kNotFound), 404);
  EXPECT_EQ(http_status(Code::kResourceExhausted), 429);
  EXPECT_EQ(exit_code(Code::kInvalidArgument), 2);
  EXPECT_EQ(exit_code(Code::kUnavailable), 3);
  EXPECT_EQ(code_from_name(code_name(Code::kFailedPrecondition)), Code::kFailedPrecondition);
  EXPECT_EQ(not_found("image").with_context("sandbox \"a\"").to_string(), "NotFound: sandbox \"a\": image");
}
