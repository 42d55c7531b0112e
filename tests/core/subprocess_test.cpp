#include "codeact/core/subprocess.hpp"

#include <gtest/gtest.h>

#include <chrono>

using namespace codeact::core;
using namespace std::chrono_literals;

TEST(Subprocess, RunsWithArgumentsInputAndEnvironment) {
  ProcessOptions opts;
  opts.env["CODEACT_X"] = "hello";
  auto r = run_process(
      {"sh", "-c", "read line; echo \"$line $CODEACT_X $1\"; echo err >&2; exit 3", "sh", "a b;c"},
      5s, "input\n", opts);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_EQ(r->stdout_text, "input hello a b;c\n");
  EXPECT_EQ(r->stderr_text, "err\n");
}

TEST(Subprocess, MissingProgramIsNotFound) {
  auto r = run_process({"codeact-no-such-program"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Code::kNotFound);
  EXPECT_NE(r.error().message().find("codeact-no-such-program"), std::string::npos);
}

TEST(Subprocess, TimeoutKillsTheWholeProcessGroup) {
  auto start = std::chrono::steady_clock::now();
  auto r = run_process({"sh", "-c", "sleep 30 & sleep 30"}, 300ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Code::kDeadlineExceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(Subprocess, LargeOutputDoesNotDeadlock) {
  auto r =
      run_process({"sh", "-c", "head -c 3000000 /dev/zero; head -c 3000000 /dev/zero >&2"}, 20s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_text.size(), 3000000u);
  EXPECT_EQ(r->stderr_text.size(), 3000000u);
}

TEST(Subprocess, KilledBySignalReports128PlusSignal) {
  auto p = Subprocess::spawn({.argv = {"sleep", "30"}});
  ASSERT_TRUE(p.ok());
  p->kill(9);
  EXPECT_EQ(*p->wait(5000ms), 137);
}
