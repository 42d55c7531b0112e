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

}  // namespace
}  // namespace codeact::temporal::internal
