#include "codeact/core/config.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

using namespace codeact::core;

namespace {
EnvLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}
}  // namespace

TEST(Config, YamlScalarsBecomeTypedJson) {
  auto j = parse_yaml(
      "temporal:\n  url: localhost:7233\n  port: 7233\nflag: true\nratio: 0.5\nquoted: \"42\"\n");
  ASSERT_TRUE(j.ok()) << j.error().to_string();
  EXPECT_EQ((*j)["temporal"]["url"], "localhost:7233");
  EXPECT_EQ((*j)["temporal"]["port"], 7233);
  EXPECT_EQ((*j)["flag"], true);
  EXPECT_DOUBLE_EQ((*j)["ratio"].get<double>(), 0.5);
  EXPECT_EQ((*j)["quoted"], "42");
}

TEST(Config, YamlSyntaxErrorNamesLineAndColumn) {
  auto j = parse_yaml("a: [1, 2\nb: 3\n", "app_conf.yml");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.error().message().find("app_conf.yml"), std::string::npos);
  EXPECT_NE(j.error().message().find("line"), std::string::npos);
}

TEST(Config, InterpolatesVariablesAndDefaults) {
  auto j = parse_yaml(
      "llm:\n  gemini:\n    api_key: ${GEMINI_API_KEY}\n    model_name: ${MODEL:-gemini-2.5-pro}\n"
      "    price: $$5 ${CUR}\n");
  ASSERT_TRUE(j.ok());
  auto r = interpolate_env(*j, fake_env({{"GEMINI_API_KEY", "k-123"}, {"CUR", "usd"}}));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)["llm"]["gemini"]["api_key"], "k-123");
  EXPECT_EQ((*r)["llm"]["gemini"]["model_name"], "gemini-2.5-pro");
  EXPECT_EQ((*r)["llm"]["gemini"]["price"], "$5 usd");
}

TEST(Config, UnsetVariableIsAnErrorNamingVariableAndKey) {
  auto r = interpolate_env(Json{{"llm", {{"openai", {{"api_key", "${OPENAI_API_KEY}"}}}}}},
                           fake_env({}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("OPENAI_API_KEY"), std::string::npos);
  EXPECT_NE(r.error().message().find("llm.openai.api_key"), std::string::npos);
}

TEST(Config, SearchOrderPrefersExplicitThenEnvThenCwd) {
  namespace fs = std::filesystem;
  auto dir = fs::temp_directory_path() / ("codeact-config-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto explicit_path = (dir / "mine.yml").string();
  std::ofstream(explicit_path) << "a: 1\n";
  EXPECT_EQ(*find_config_file("app_conf.yml", "CODEACT_TEST_CONF", explicit_path), explicit_path);
  auto missing = find_config_file("app_conf.yml", "CODEACT_TEST_CONF", (dir / "nope.yml").string());
  EXPECT_EQ(missing.error().code(), Code::kNotFound);
  ::setenv("CODEACT_TEST_CONF", explicit_path.c_str(), 1);
  EXPECT_EQ(*find_config_file("app_conf.yml", "CODEACT_TEST_CONF"), explicit_path);
  ::unsetenv("CODEACT_TEST_CONF");
  auto cwd = fs::current_path();
  fs::current_path(dir);
  auto none = find_config_file("app_conf_absent.yml", "CODEACT_TEST_CONF");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("/etc/codeact/app_conf_absent.yml"), std::string::npos);
  std::ofstream(dir / "app_conf_absent.yml") << "a: 2\n";
  EXPECT_EQ(*find_config_file("app_conf_absent.yml", "CODEACT_TEST_CONF"), "./app_conf_absent.yml");
  fs::current_path(cwd);
  fs::remove_all(dir);
}

// Found by tests/fuzz (yaml_config, input corpus/yaml_config/regression-recursive-alias): an
// alias inside the node it names (`base: &base {x: *base}`) made the YAML -> Json conversion
// recurse until the stack overflowed.
TEST(Config, RecursiveAliasIsAnErrorNotAStackOverflow) {
  auto j = parse_yaml("base: &base { model_name: m, again: *base }\n", "app_conf.yml");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.error().code(), Code::kInvalidArgument);
  EXPECT_NE(j.error().message().find("app_conf.yml is nested more than 256 levels deep"),
            std::string::npos)
      << j.error().message();
}

// The same conversion copies what an alias names, so aliases of aliases grow exponentially.
TEST(Config, AliasesThatExpandToBillionsOfValuesAreRefused) {
  std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    std::string prev = "*a" + std::to_string(i - 1);
    yaml += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) yaml += (k ? ", " : "") + prev;
    yaml += "]\n";
  }
  auto j = parse_yaml(yaml, "app_conf.yml");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.error().message().find("expands to more than 100000 values"), std::string::npos)
      << j.error().message();
  auto fine = parse_yaml("base: &b {t: 1}\nuse: *b\nagain: *b\n");
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ((*fine)["again"]["t"], 1);
}
