// Payload decoding: what workflow code receives for each encoding, and for hostile JSON.
#include "codec.hpp"

#include <gtest/gtest.h>

#include <string>

namespace codeact::temporal::internal {
namespace {

commonv1::Payload json_payload(const std::string& data) {
  commonv1::Payload p;
  (*p.mutable_metadata())["encoding"] = "json/plain";
  p.set_data(data);
  return p;
}

TEST(DecodePayload, RoundTripsJsonAndKeepsNonJsonTextAsText) {
  commonv1::Payload p;
  encode_payload(Json{{"task", "hi"}}, &p);
  EXPECT_EQ(decode_payload(p), (Json{{"task", "hi"}}));
  EXPECT_EQ(decode_payload(json_payload("not json")), Json("not json"));
}

TEST(DecodePayload, JsonNestedTooDeepIsAnUndecodableObjectNeverItsText) {
  // A 300-deep signal used to parse; as text, a chat would have taken it for a message.
  Json v = decode_payload(json_payload(std::string(300, '[') + std::string(300, ']')));
  ASSERT_TRUE(v.is_object()) << v.dump().substr(0, 80);
  ASSERT_TRUE(v.contains("undecodable_payload"));
  EXPECT_NE(v["undecodable_payload"].get<std::string>().find("nested more than 256"),
            std::string::npos);
}

TEST(Memo, EachKeyIsAPayloadFieldAndDecodesBackToTheSameObject) {
  Json memo = {{"owner", "alice"}, {"n", 3}, {"tags", {"a"}}, {"none", nullptr}};
  commonv1::Memo m;
  encode_memo(memo, &m);
  ASSERT_EQ(m.fields_size(), 4);
  EXPECT_EQ(m.fields().at("owner").metadata().at("encoding"), "json/plain");
  EXPECT_EQ(m.fields().at("owner").data(), "\"alice\"");
  EXPECT_EQ(m.fields().at("none").metadata().at("encoding"), "binary/null");
  EXPECT_EQ(decode_memo(m), memo);
  EXPECT_EQ(decode_memo(commonv1::Memo()), Json::object());
}

TEST(Timestamp, UnsetIsEmptyAndSetIsRfc3339) {
  google::protobuf::Timestamp t;
  EXPECT_EQ(to_rfc3339(t), "");
  t.set_seconds(1738314303);
  t.set_nanos(42000000);
  EXPECT_EQ(to_rfc3339(t), "2025-01-31T09:05:03.042Z");
}

}  // namespace
}  // namespace codeact::temporal::internal
