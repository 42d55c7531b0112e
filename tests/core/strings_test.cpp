#include "codeact/core/strings.hpp"

#include <gtest/gtest.h>

using namespace codeact::core;

TEST(Strings, TrimRemovesAsciiWhiteSpaceAtBothEndsOnly) {
  EXPECT_EQ(trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(trim("\v\fx"), "x");
  EXPECT_EQ(trim(" \n\t "), "");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim("inner  space"), "inner  space");
  EXPECT_EQ(trim("\xc2\xa0nbsp\xc2\xa0"), "\xc2\xa0nbsp\xc2\xa0")
      << "only ASCII white space is trimmed";
}

TEST(Strings, JoinPutsTheSeparatorBetweenItems) {
  EXPECT_EQ(join({}, ", "), "");
  EXPECT_EQ(join({"a"}, ", "), "a");
  EXPECT_EQ(join({"a", "", "c"}, ","), "a,,c");
  EXPECT_EQ(join({"numpy", "pandas"}, " "), "numpy pandas");
}

TEST(Strings, SplitKeepsEmptyPiecesBetweenSeparators) {
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(split("a,", ','), (std::vector<std::string>{"a", ""}));
  EXPECT_EQ(split("abc", ','), (std::vector<std::string>{"abc"}));
  EXPECT_TRUE(split("", ',').empty());
}

TEST(Strings, AbbreviateKeepsShortTextAndCutsLongTextToTheLimit) {
  EXPECT_EQ(abbreviate("short", 10), "short");
  EXPECT_EQ(abbreviate("exactly10!", 10), "exactly10!");
  EXPECT_EQ(abbreviate("one more char", 10), "one mor...");
  EXPECT_EQ(abbreviate("one more char", 10).size(), 10u);
  EXPECT_EQ(abbreviate("abcd", 3), "...");
  // "h\xc3\xa9llo w" is "héllo w": a cut after 2 bytes would split the é.
  EXPECT_EQ(abbreviate("h\xc3\xa9llo world", 5), "h...");
  EXPECT_TRUE(is_valid_utf8(abbreviate("\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac", 7)))
      << "a cut inside a three-byte sequence backs up to its start";
  EXPECT_EQ(abbreviate("\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac", 7), "\xe2\x82\xac...");
}

TEST(Strings, PythonReprStringQuotesAndEscapesAsPythonDoes) {
  EXPECT_EQ(python_repr_string("plain"), "'plain'");
  EXPECT_EQ(python_repr_string("it's"), "\"it's\"") << "a ' alone: double quotes";
  EXPECT_EQ(python_repr_string("it's \"x\""), "'it\\'s \"x\"'") << "both: single, ' escaped";
  EXPECT_EQ(python_repr_string("a\\b\n\t\r"), "'a\\\\b\\n\\t\\r'");
  EXPECT_EQ(python_repr_string(std::string("\x01\x7f", 2)), "'\\x01\\x7f'");
  EXPECT_EQ(python_repr_string("h\xc3\xa9"), "'h\xc3\xa9'") << "UTF-8 kept";
}

TEST(Strings, IndentPrefixesEveryNonEmptyLineAndEndsEachWithANewline) {
  EXPECT_EQ(indent("a\n\nb", "  "), "  a\n\n  b\n");
  EXPECT_EQ(indent("def f():\n    ...\n", "    "), "    def f():\n        ...\n")
      << "a final newline does not add an empty line";
  EXPECT_EQ(indent("one", "> "), "> one\n");
  EXPECT_EQ(indent("", "  "), "");
}

TEST(Strings, Utf8ValidityAcceptsWhatJsonCanCarry) {
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8(std::string("nul \0 inside", 12)));
  EXPECT_TRUE(is_valid_utf8("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_TRUE(is_valid_utf8("\xf4\x8f\xbf\xbf"));  // U+10FFFF, the last code point
  EXPECT_FALSE(is_valid_utf8("\xff\xfe"));
  EXPECT_FALSE(is_valid_utf8("\xc3"));              // truncated
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong 2-byte
  EXPECT_FALSE(is_valid_utf8("\xe0\x80\xaf"));      // overlong 3-byte
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // a UTF-16 surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(is_valid_utf8("a\x80"));             // stray continuation byte
}

TEST(ByteSizeText, UsesPowersOf1024WithOneDecimal) {
  EXPECT_EQ(codeact::core::byte_size_text(0), "0 B");
  EXPECT_EQ(codeact::core::byte_size_text(1023), "1023 B");
  EXPECT_EQ(codeact::core::byte_size_text(1536), "1.5 KiB");
  EXPECT_EQ(codeact::core::byte_size_text(200LL << 20), "200.0 MiB");
  EXPECT_EQ(codeact::core::byte_size_text(3LL << 40), "3.0 TiB");
  EXPECT_EQ(codeact::core::byte_size_text(5000LL << 40), "5000.0 TiB");
}
