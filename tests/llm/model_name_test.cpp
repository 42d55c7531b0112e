#include <gtest/gtest.h>

#include <map>

#include "codeact/llm/model_factory.hpp"

namespace codeact::llm {
namespace {

core::EnvLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ModelName, ParsesTheFormsUsersWrite) {
  EXPECT_EQ(parse_model_name("openai:gpt-4.1").value(), (ModelName{"openai", "gpt-4.1", ""}));
  EXPECT_EQ(parse_model_name("google-gla:gemini-2.5-pro").value(),
            (ModelName{"google-gla", "gemini-2.5-pro", ""}));
  EXPECT_EQ(parse_model_name("gemini:gemini-2.5-flash").value(),
            (ModelName{"google-gla", "gemini-2.5-flash", ""}));
  EXPECT_EQ(parse_model_name("anthropic:claude-sonnet-4-5").value(),
            (ModelName{"anthropic", "claude-sonnet-4-5", ""}));
  EXPECT_EQ(parse_model_name("ollama:qwen2.5-coder").value(),
            (ModelName{"ollama", "qwen2.5-coder", ""}));
  EXPECT_EQ(parse_model_name("ollama:qwen2.5-coder:7b").value(),
            (ModelName{"ollama", "qwen2.5-coder:7b", ""}));
  EXPECT_EQ(parse_model_name("openai-compatible:Qwen/Qwen2.5@http://localhost:8000/v1").value(),
            (ModelName{"openai-compatible", "Qwen/Qwen2.5", "http://localhost:8000/v1"}));
  EXPECT_EQ(parse_model_name("openai-compatible:org@team/m@https://h.example/v1").value(),
            (ModelName{"openai-compatible", "org@team/m", "https://h.example/v1"}));
  EXPECT_EQ(parse_model_name("gpt-4.1").value().provider, "openai");
  EXPECT_EQ(parse_model_name("claude-sonnet-4-5").value().provider, "anthropic");
  EXPECT_EQ(parse_model_name("test").value().provider, "test");
}

TEST(ModelName, RejectsUnknownProvidersAndEmptyModels) {
  auto unknown = parse_model_name("mistral:large");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code(), core::Code::kInvalidArgument);
  EXPECT_NE(unknown.error().message().find("unknown provider \"mistral\""), std::string::npos);
  EXPECT_NE(unknown.error().message().find("openai-compatible:<model>@<base-url>"),
            std::string::npos);
  EXPECT_FALSE(parse_model_name("openai:").ok());
  EXPECT_FALSE(parse_model_name("openai-compatible:llama").ok());
  EXPECT_FALSE(parse_model_name("mystery-model").ok());
}

TEST(MakeModel, MissingKeySaysWhichVariableToSet) {
  ModelConfig config;
  config.env = fake_env({});
  struct Case {
    const char* name;
    const char* expected;
  };
  for (auto c :
       {Case{"openai:gpt-4.1", "set OPENAI_API_KEY or llm.openai.api_key"},
        Case{"google-gla:gemini-2.5-pro",
             "set GEMINI_API_KEY (or GOOGLE_API_KEY) or llm.gemini.api_key"},
        Case{"anthropic:claude-sonnet-4-5", "set ANTHROPIC_API_KEY or llm.anthropic.api_key"}}) {
    auto model = make_model(c.name, config);
    ASSERT_FALSE(model.ok()) << c.name;
    EXPECT_EQ(model.error().code(), core::Code::kFailedPrecondition);
    EXPECT_NE(model.error().message().find(c.expected), std::string::npos)
        << model.error().message();
  }
}

TEST(MakeModel, KeysFromEnvironmentOrConfigBuildTheRightProvider) {
  ModelConfig config;
  config.env = fake_env(
      {{"OPENAI_API_KEY", "sk-test"}, {"GOOGLE_API_KEY", "g-key"}, {"ANTHROPIC_API_KEY", "a-key"}});
  auto openai = make_model("openai:gpt-4.1", config);
  ASSERT_TRUE(openai.ok()) << openai.error().to_string();
  EXPECT_EQ((*openai)->system(), "openai");
  EXPECT_EQ((*openai)->model_name(), "gpt-4.1");
  auto gemini = make_model("google-gla:gemini-2.5-pro", config);
  ASSERT_TRUE(gemini.ok());
  EXPECT_EQ((*gemini)->system(), "google-gla");
  auto anthropic = make_model("anthropic:claude-sonnet-4-5", config);
  ASSERT_TRUE(anthropic.ok());
  EXPECT_EQ((*anthropic)->system(), "anthropic");
  auto ollama = make_model("ollama:qwen2.5-coder", ModelConfig{});
  ASSERT_TRUE(ollama.ok()) << "Ollama needs no key";
  EXPECT_EQ((*ollama)->system(), "ollama");
  auto compatible = make_model("openai-compatible:m@http://127.0.0.1:1/v1", ModelConfig{});
  ASSERT_TRUE(compatible.ok());
  EXPECT_EQ((*compatible)->system(), "openai-compatible");
  auto test = make_model("test");
  ASSERT_TRUE(test.ok());
  EXPECT_EQ((*test)->system(), "test");
}

TEST(MakeModel, EmptyNameUsesTheSeedsGeminiConfigBlock) {
  Json llm =
      Json::parse(R"({"gemini": {"api_key": "from-config", "model_name": "gemini-2.5-flash"}})");
  ModelConfig config;
  config.env = fake_env({});
  config.llm_config = llm;
  auto model = make_model("", config);
  ASSERT_TRUE(model.ok()) << model.error().to_string();
  EXPECT_EQ((*model)->system(), "google-gla");
  EXPECT_EQ((*model)->model_name(), "gemini-2.5-flash");

  config.llm_config = Json::object();
  auto none = make_model("", config);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("llm.gemini.model_name"), std::string::npos);
}

}  // namespace
}  // namespace codeact::llm
