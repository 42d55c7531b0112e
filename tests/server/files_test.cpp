#include "files.hpp"

#include <gtest/gtest.h>

using namespace codeact;
using namespace ::codeact::server;

TEST(Files, PathsAreConfinedToOutput) {
  EXPECT_EQ(*output_path("output/a/b.csv"), "/output/a/b.csv");
  EXPECT_EQ(*output_path("/output/a.csv"), "/output/a.csv");
  EXPECT_EQ(*output_path("a.csv"), "/output/a.csv");
  for (const char* bad : {"../../etc/passwd", "/etc/passwd", "/output/../etc/passwd", "a/../../b",
                          "/persistent-storage/x", "a\\..\\b"}) {
    auto r = output_path(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), core::Code::kPermissionDenied) << bad;
  }
  EXPECT_FALSE(output_path(std::string("a\0b", 3)).ok());
  EXPECT_FALSE(output_path("output/").ok());
}

TEST(Files, ContentTypesByExtension) {
  EXPECT_EQ(content_type_of("/output/plot.PNG"), "image/png");
  EXPECT_EQ(content_type_of("/output/t.csv"), "text/csv; charset=utf-8");
  EXPECT_EQ(content_type_of("/output/blob"), "application/octet-stream");
}
