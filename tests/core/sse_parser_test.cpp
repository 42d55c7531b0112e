#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codeact/core/sse.hpp"

namespace codeact::core {
namespace {

std::vector<SseEvent> feed_in_chunks(std::string_view stream, size_t chunk) {
  SseParser parser;
  std::vector<SseEvent> events;
  for (size_t i = 0; i < stream.size(); i += chunk) {
    for (auto& e : parser.feed(stream.substr(i, chunk))) events.push_back(std::move(e));
  }
  return events;
}

TEST(SseParser, ParsesEventTypeDataAndDefaultType) {
  SseParser parser;
  auto events = parser.feed("event: message_start\ndata: {\"a\":1}\n\ndata: plain\n\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].event, "message_start");
  EXPECT_EQ(events[0].data, "{\"a\":1}");
  EXPECT_EQ(events[1].event, "message");
  EXPECT_EQ(events[1].data, "plain");
  EXPECT_FALSE(parser.has_partial_event());
}

TEST(SseParser, JoinsMultiLineDataWithNewlines) {
  SseParser parser;
  auto events = parser.feed("data: first\ndata:second\ndata\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "first\nsecond\n");
}

TEST(SseParser, HandlesCrLfAndBareCrLineEndings) {
  SseParser parser;
  auto events = parser.feed("event: a\r\ndata: x\r\n\r\nevent: b\rdata: y\r\r");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].event, "a");
  EXPECT_EQ(events[0].data, "x");
  EXPECT_EQ(events[1].event, "b");
  EXPECT_EQ(events[1].data, "y");
}

TEST(SseParser, SameEventsWhateverTheChunkBoundaries) {
  const std::string stream =
      "\xEF\xBB\xBF: keep-alive comment\r\n"
      "event: content_block_delta\r\n"
      "id: 7\r\n"
      "data: {\"partial_json\": \"{\\\"pa\"}\r\n"
      "\r\n"
      "retry: 1500\n"
      "data: line1\n"
      "data: line2\n"
      "\n";
  auto whole = feed_in_chunks(stream, stream.size());
  ASSERT_EQ(whole.size(), 2u);
  EXPECT_EQ(whole[0].event, "content_block_delta");
  EXPECT_EQ(whole[0].id, "7");
  EXPECT_EQ(whole[0].data, "{\"partial_json\": \"{\\\"pa\"}");
  EXPECT_EQ(whole[1].data, "line1\nline2");
  EXPECT_EQ(whole[1].id, "7") << "the last event id persists";
  EXPECT_EQ(whole[1].retry, 1500);
  for (size_t chunk = 1; chunk <= 7; ++chunk) {
    EXPECT_EQ(feed_in_chunks(stream, chunk), whole) << "chunk size " << chunk;
  }
}

TEST(SseParser, CommentsAndUnknownFieldsAreIgnored) {
  SseParser parser;
  auto events = parser.feed(": ping\n\nfoo: bar\ndata: d\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "d");
}

TEST(SseParser, BlockWithoutDataIsNotDispatched) {
  SseParser parser;
  EXPECT_TRUE(parser.feed("event: ping\n\n").empty());
  auto events = parser.feed("data: x\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "message") << "the type of an undispatched block does not leak";
}

TEST(SseParser, ReportsEventCutMidWay) {
  SseParser parser;
  EXPECT_TRUE(parser.feed("data: {\"choices\":[{\"delta\"").empty());
  EXPECT_TRUE(parser.has_partial_event());
  EXPECT_TRUE(parser.feed("}]}\n").empty());
  EXPECT_TRUE(parser.has_partial_event()) << "line complete but event not terminated";
  EXPECT_EQ(parser.feed("\n").size(), 1u);
  EXPECT_FALSE(parser.has_partial_event());
}

TEST(SseParser, ResetForgetsState) {
  SseParser parser;
  (void)parser.feed("id: 3\ndata: half");
  parser.reset();
  auto events = parser.feed("data: fresh\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "fresh");
  EXPECT_EQ(events[0].id, "");
}

}  // namespace
}  // namespace codeact::core
