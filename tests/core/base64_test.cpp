#include "codeact/core/base64.hpp"

#include <gtest/gtest.h>

using namespace codeact::core;

TEST(Base64, RoundTripsEveryByteAndAllPaddings) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  for (size_t n = 0; n <= 5; ++n) {
    std::string s = all.substr(0, n);
    EXPECT_EQ(*base64_decode(base64_encode(s)), s);
  }
  EXPECT_EQ(*base64_decode(base64_encode(all)), all);
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(*base64_decode("Zm9v\nYmFy"), "foobar");
  EXPECT_FALSE(base64_decode("Zm9v*").ok());
}

TEST(Base64, Utf8Validity) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xff\xfe"));
  EXPECT_FALSE(is_valid_utf8("\xc3"));        // truncated
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));    // overlong
}
