#include "codeact/core/sha256.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace codeact::core;

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, PiecesDigestLikeTheWhole) {
  Sha256 sha;
  sha.update("a");
  sha.update("bc");
  EXPECT_EQ(sha.hex(), sha256_hex("abc"));
}

TEST(Sha256, FieldsKeepTheirBoundaries) {
  Sha256 one, two;
  one.field("ab");
  one.field("c");
  two.field("a");
  two.field("bc");
  EXPECT_NE(one.hex(), two.hex());
}

TEST(Sha256, FileDigestEqualsTheDigestOfItsBytes) {
  auto path =
      std::filesystem::temp_directory_path() / ("codeact-sha-" + std::to_string(::getpid()));
  std::string data(3 << 20, 'x');  // more than one read
  data[12345] = 'y';
  std::ofstream(path, std::ios::binary) << data;
  auto digest = sha256_file(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(digest.ok()) << digest.error().message();
  EXPECT_EQ(*digest, sha256_hex(data));
  auto missing = sha256_file(path.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), Code::kNotFound);
}
