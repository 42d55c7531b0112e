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
  EXPECT_EQ(code_from_name(code_name(Code::kFailedPrecondition)), Code::kFailedPrecondition);
  EXPECT_EQ(not_found("image").with_context("sandbox \"a\"").to_string(),
            "NotFound: sandbox \"a\": image");
}

// README.md: `sandbox exec` exits 0 when the cell ran, 1 when it raised, 2 on a usage error, 3
// when the sandbox or Docker is unavailable (a missing sandbox is NotFound, a daemon that does not
// answer in time DeadlineExceeded).
TEST(Result, ExitCodesKeepTheCliContract) {
  EXPECT_EQ(exit_code(Code::kOk), 0);
  EXPECT_EQ(exit_code(Code::kInvalidArgument), 2);
  EXPECT_EQ(exit_code(Code::kUnavailable), 3);
  EXPECT_EQ(exit_code(Code::kNotFound), 3);
  EXPECT_EQ(exit_code(Code::kDeadlineExceeded), 3);
  EXPECT_EQ(exit_code(Code::kFailedPrecondition), 1);
  EXPECT_EQ(exit_code(Code::kInternal), 1);
  EXPECT_EQ(kExitFailed, 1);
}

TEST(Result, HttpStatusesMapToCodesAsAClientSeesThem) {
  EXPECT_EQ(code_from_http_status(200), Code::kOk);
  EXPECT_EQ(code_from_http_status(204), Code::kOk);
  EXPECT_EQ(code_from_http_status(400), Code::kInvalidArgument);
  EXPECT_EQ(code_from_http_status(401), Code::kUnauthenticated);
  EXPECT_EQ(code_from_http_status(403), Code::kPermissionDenied);
  EXPECT_EQ(code_from_http_status(404), Code::kNotFound);
  EXPECT_EQ(code_from_http_status(409), Code::kAborted);
  EXPECT_EQ(code_from_http_status(412), Code::kFailedPrecondition);
  EXPECT_EQ(code_from_http_status(413), Code::kInvalidArgument);
  EXPECT_EQ(code_from_http_status(422), Code::kInvalidArgument);
  EXPECT_EQ(code_from_http_status(429), Code::kResourceExhausted);
  EXPECT_EQ(code_from_http_status(499), Code::kCancelled);
  EXPECT_EQ(code_from_http_status(501), Code::kUnimplemented);
  EXPECT_EQ(code_from_http_status(302), Code::kUnknown);
  // What a server may be asked again for later is retryable; what the request got wrong is not.
  for (int status : {408, 500, 502, 503, 504, 529}) {
    EXPECT_EQ(code_from_http_status(status), Code::kUnavailable) << status;
    EXPECT_TRUE(is_retryable(code_from_http_status(status))) << status;
  }
  for (int status : {400, 401, 403, 404, 422, 501})
    EXPECT_FALSE(is_retryable(code_from_http_status(status))) << status;
  // The statuses this side answers with read back as the same code.
  for (Code c :
       {Code::kInvalidArgument, Code::kUnauthenticated, Code::kPermissionDenied, Code::kNotFound,
        Code::kResourceExhausted, Code::kCancelled, Code::kUnimplemented, Code::kUnavailable})
    EXPECT_EQ(code_from_http_status(http_status(c)), c) << code_name(c);
}
