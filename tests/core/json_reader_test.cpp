// JsonReader: typed fields out of a JSON object, with errors naming the object and the key.
#include "codeact/core/json_reader.hpp"

#include <gtest/gtest.h>

namespace codeact::core {
namespace {

struct Settings {
  std::string name;
  bool network = false;
  int64_t limit = 0;
  int cpus = 0;
  double ratio = 0;
  std::vector<std::string> tags;
  std::optional<int64_t> seed;
  std::optional<bool> strict;
  Json extra;
};

Result<Settings> read(const Json& j, bool strict) {
  Settings s;
  JsonReader r(j, "the settings");
  CODEACT_TRY_STATUS(r.valid());
  CODEACT_TRY_STATUS(r.required("name", s.name));
  CODEACT_TRY_STATUS(r.optional("network", s.network));
  CODEACT_TRY_STATUS(r.optional("limit", s.limit));
  CODEACT_TRY_STATUS(r.optional("cpus", s.cpus));
  CODEACT_TRY_STATUS(r.optional("ratio", s.ratio));
  CODEACT_TRY_STATUS(r.optional("tags", s.tags));
  CODEACT_TRY_STATUS(r.optional("seed", s.seed));
  CODEACT_TRY_STATUS(r.optional("strict", s.strict));
  CODEACT_TRY_STATUS(r.optional("extra", s.extra));
  if (strict) CODEACT_TRY_STATUS(r.finish());
  return s;
}

std::string error_of(const Json& j, bool strict = true) {
  auto r = read(j, strict);
  if (r.ok()) return "(ok)";
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
  return r.error().message();
}

TEST(JsonReader, ReadsEachTypeAndLeavesAbsentOrNullFieldsAlone) {
  auto s = read(Json::parse(R"({"name": "a", "network": true, "limit": 3.0, "cpus": 2,
                                "ratio": 0.5, "tags": ["x", "y"], "seed": 7, "strict": null,
                                "extra": {"k": [1]}})"),
                true);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s->name, "a");
  EXPECT_TRUE(s->network);
  EXPECT_EQ(s->limit, 3) << "an integral float is an integer";
  EXPECT_EQ(s->cpus, 2);
  EXPECT_EQ(s->ratio, 0.5);
  EXPECT_EQ(s->tags, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(s->seed, 7);
  EXPECT_FALSE(s->strict.has_value()) << "null is absent";
  EXPECT_EQ(s->extra, Json::parse(R"({"k": [1]})"));
}

TEST(JsonReader, ErrorsNameTheObjectTheKeyAndWhatWasThere) {
  EXPECT_EQ(error_of(Json::array()), "the settings: expected a JSON object, got []");
  EXPECT_EQ(error_of(Json::object()), "the settings: \"name\" is required");
  EXPECT_EQ(error_of(Json{{"name", nullptr}}), "the settings: \"name\" is required");
  EXPECT_EQ(error_of(Json{{"name", 5}}), "the settings: \"name\" must be a string, got 5");
  EXPECT_EQ(error_of(Json{{"name", "a"}, {"network", "yes"}}),
            "the settings: \"network\" must be true or false, got \"yes\"");
  EXPECT_EQ(error_of(Json{{"name", "a"}, {"limit", 1.5}}),
            "the settings: \"limit\" must be an integer, got 1.5");
  EXPECT_EQ(error_of(Json{{"name", "a"}, {"cpus", 1LL << 40}}),
            "the settings: \"cpus\" must be a 32-bit integer, got 1099511627776");
  EXPECT_EQ(error_of(Json{{"name", "a"}, {"tags", {"x", 1}}}),
            "the settings: \"tags\" must be a list of strings, got [\"x\",1]");
  EXPECT_EQ(error_of(Json{{"name", "a"}, {"seed", "7"}}),
            "the settings: \"seed\" must be an integer, got \"7\"");
  EXPECT_EQ(error_of(Json{{"name", std::string(100, 'n')}, {"ratio", std::string(100, 'r')}}),
            "the settings: \"ratio\" must be a number, got \"" + std::string(56, 'r') + "...")
      << "a long value is cut";
}

TEST(JsonReader, FinishNamesTheKeysNobodyRead) {
  EXPECT_EQ(error_of(Json{{"name", "a"}, {"netwrok", true}}),
            "the settings: unknown key \"netwrok\" (known: cpus, extra, limit, name, network, "
            "ratio, seed, strict, tags)");
  EXPECT_EQ(error_of(Json{{"name", "a"}, {"netwrok", true}}, /*strict=*/false), "(ok)")
      << "a reader that does not call finish() accepts unknown keys";
}

TEST(JsonReader, NestedReadersAndCustomChecksKeepThePath) {
  Json j = Json::parse(R"({"inner": {"size": "big"}, "mode": 3})");
  JsonReader r(j, "messages[0]");
  int size = 0;
  auto status = r.required_with<int>("inner", size, [](const Json& inner) -> Result<int> {
    int out = 0;
    JsonReader ir(inner, "inner");
    CODEACT_TRY_STATUS(ir.optional("size", out));
    return out;
  });
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message(),
            "messages[0]: \"inner\": inner: \"size\" must be an integer, got \"big\"");
  EXPECT_EQ(r.wrong("mode", "\"r\" or \"w\"").message(),
            "messages[0]: \"mode\" must be \"r\" or \"w\", got 3");
  int missing = 0;
  EXPECT_EQ(r.required_with<int>("absent", missing, [](const Json&) -> Result<int> { return 1; })
                .error()
                .message(),
            "messages[0]: \"absent\" is required");
}

}  // namespace
}  // namespace codeact::core
