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
