#include "codeact/core/time.hpp"

#include <gtest/gtest.h>

#include <regex>

using namespace codeact::core;
using namespace std::chrono;

TEST(Time, FormatsRfc3339InUtcWithMilliseconds) {
  // 2025-01-31T09:05:03Z is 1738314303 s after the epoch.
  system_clock::time_point t{seconds(1738314303) + milliseconds(42) + microseconds(999)};
  EXPECT_EQ(format_rfc3339(t), "2025-01-31T09:05:03.042Z");
  EXPECT_EQ(format_rfc3339(system_clock::time_point{}), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(format_rfc3339(system_clock::time_point{} - milliseconds(1)),
            "1969-12-31T23:59:59.999Z");
}

TEST(Time, NowIsTheCurrentTime) {
  std::string before = format_rfc3339(system_clock::now());
  std::string now = now_rfc3339();
  std::string after = format_rfc3339(system_clock::now());
  EXPECT_TRUE(std::regex_match(now, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << now;
  EXPECT_LE(before, now);  // the fixed-width form sorts as time does
  EXPECT_LE(now, after);
}

TEST(Time, ParseRfc3339ReadsWhatFormatWritesAndOffsets) {
  auto t = std::chrono::system_clock::time_point(std::chrono::milliseconds(1738314303042));
  auto back = parse_rfc3339(format_rfc3339(t));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, t);
  auto plus = parse_rfc3339("2025-01-31T11:05:03.042+02:00");
  ASSERT_TRUE(plus.has_value());
  EXPECT_EQ(*plus, t);
  EXPECT_FALSE(parse_rfc3339("2025-01-31 09:05:03Z").has_value());
  EXPECT_FALSE(parse_rfc3339("2025-01-31T09:05:03").has_value());
  EXPECT_FALSE(parse_rfc3339("").has_value());
}
