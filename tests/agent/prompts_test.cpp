// agent_prompts.yml / app_conf.yml: the shipped config/ files render with the seed's variables
// exactly as jinja2 renders them (expected texts recorded from jinja2 3.1.6), the seed's search
// order and ${VAR} interpolation.
#include "codeact/agent/prompts.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "codeact/core/app_config.hpp"

namespace codeact::agent {
namespace {

namespace fs = std::filesystem;

PromptVariables seed_variables() {
  PromptVariables v;
  v.container_id = "sbx-42";
  v.python_packages = {"numpy", "pandas"};
  v.system_packages = {"git", "curl"};
  v.sandbox_variable_names = {{"df", "DataFrame"}, {"total", "int"}};
  v.sandbox_files = {"/output/plot.png", "/output/report.md"};
  v.tools_as_func = {
      "def get_current_time(timezone: str | None = None) -> Any:\n"
      "    \"\"\"Get the current time in a specific timezone.\"\"\""};
  return v;
}

const std::string kShippedPrompts = std::string(CODEACT_SOURCE_DIR) + "/config/agent_prompts.yml";

TEST(PromptsTest, ShippedSimpleAgentRendersWithSeedVariables) {
  auto book = PromptBook::load(kShippedPrompts);
  ASSERT_TRUE(book.ok()) << book.error().to_string();
  auto text = book->render_instructions("simple_agent", seed_variables().to_json());
  ASSERT_TRUE(text.ok()) << text.error().to_string();
  EXPECT_EQ(*text,
            R"(You work in the sandbox sbx-42. Code you run there keeps its variables, imports
and files between calls.

Python packages already installed:
  - numpy
  - pandas

System packages already installed: git, curl

Variables already defined in the sandbox (2):
  - df: DataFrame
  - total: int

Files in the sandbox:
  1. /output/plot.png
  2. /output/report.md

These functions are available inside the sandbox; call them from your Python code like any
other function (no await needed):

```python
def get_current_time(timezone: str | None = None) -> Any:
    """Get the current time in a specific timezone."""
```

Use execute_python to run code. Install missing packages with install_additional_packages instead of
pip inside your code. Reply with a short summary when the task is done.)");
  auto system = book->render_system_prompt("simple_agent", seed_variables().to_json());
  ASSERT_TRUE(system.ok());
  EXPECT_EQ(system->rfind("You are a careful Python programmer.", 0), 0u);
  EXPECT_NE(system->find("print \"[FILE_GENERATED]: <path>\" for each."), std::string::npos);
}

TEST(PromptsTest, ShippedSimpleAgentRendersForAnEmptySandbox) {
  auto book = PromptBook::load(kShippedPrompts);
  ASSERT_TRUE(book.ok());
  PromptVariables v;
  v.container_id = "c1";
  auto text = book->render_instructions("simple_agent", v.to_json());
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, R"(You work in the sandbox c1. Code you run there keeps its variables, imports
and files between calls.

The sandbox has no variables yet.

Use execute_python to run code. Install missing packages with install_additional_packages instead of
pip inside your code. Reply with a short summary when the task is done.)");
}

TEST(PromptsTest, ShippedCodeactAgentRenders) {
  auto book = PromptBook::load(kShippedPrompts);
  ASSERT_TRUE(book.ok());
  EXPECT_EQ(book->agent_names(), (std::vector<std::string>{"codeact_agent", "simple_agent"}));
  auto text = book->render_instructions("codeact_agent", seed_variables().to_json());
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, R"(Sandbox: sbx-42.
Live variables: df, total.
Files: /output/plot.png, /output/report.md.
Callable functions:

def get_current_time(timezone: str | None = None) -> Any:
    """Get the current time in a specific timezone."""

Finish with the answer to the user's question.)");
}

// Templates in the style of the seed's README print lists and dicts the Python way.
TEST(PromptsTest, SeedStyleTemplatePrintsPythonValues) {
  const std::string yaml = R"(data_agent:
  system_prompt: "You analyse data."
  instructions: |
    Sandbox {{ container_id }} has {{ python_packages }} installed.
    Variables: {{ sandbox_variable_names }}
    Files: {{ sandbox_files }}
    {% if tools_as_func %}
    Tools:
    {% for func in tools_as_func %}
    {{ func }}
    {% endfor %}
    {% endif %}
    Go.
)";
  auto book = PromptBook::parse(yaml, "inline.yml");
  ASSERT_TRUE(book.ok()) << book.error().to_string();
  EXPECT_EQ(*book->render_instructions("data_agent", seed_variables().to_json()),
            "Sandbox sbx-42 has ['numpy', 'pandas'] installed.\nVariables: {'df': 'DataFrame', "
            "'total': 'int'}\n"
            "Files: ['/output/plot.png', '/output/report.md']\n\nTools:\n\ndef "
            "get_current_time(timezone: str | "
            "None = None) -> Any:\n    \"\"\"Get the current time in a specific "
            "timezone.\"\"\"\n\n\nGo.");
  PromptVariables empty;
  empty.container_id = "c";
  EXPECT_EQ(*book->render_instructions("data_agent", empty.to_json()),
            "Sandbox c has [] installed.\nVariables: {}\nFiles: []\n\nGo.");
  EXPECT_EQ(*book->render_system_prompt("data_agent", Json::object()), "You analyse data.");
}

TEST(PromptsTest, TemplateSyntaxErrorNamesAgentFieldLineAndColumn) {
  auto book = PromptBook::parse(
      "a:\n  instructions: |\n    line one\n    {% for x in xs %}\n    {{ x }\n", "p.yml");
  ASSERT_FALSE(book.ok());
  EXPECT_EQ(book.error().code(), core::Code::kInvalidArgument);
  EXPECT_NE(book.error().message().find("template \"p.yml:a.instructions\": line 3"),
            std::string::npos)
      << book.error().message();
}

TEST(PromptsTest, UnknownAgentListsTheKnownOnes) {
  auto book = PromptBook::parse("one: {instructions: hi}\ntwo: {instructions: ho}\n", "p.yml");
  ASSERT_TRUE(book.ok());
  auto missing = book->get("three");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), core::Code::kNotFound);
  EXPECT_EQ(missing.error().message(), "p.yml has no prompts for agent 'three' (it has: one, two)");
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("codeact-prompts-test-" + std::to_string(::getpid()));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return (path_ / name).string();
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(PromptsTest, FindsPromptsThroughAppPromptsPath) {
  TempDir dir;
  std::string file =
      dir.write("my_prompts.yml", "x: {instructions: 'from env {{ container_id }}'}\n");
  ::setenv(kPromptsPathEnv, file.c_str(), 1);
  auto book = PromptBook::load();
  ::unsetenv(kPromptsPathEnv);
  ASSERT_TRUE(book.ok()) << book.error().to_string();
  EXPECT_EQ(book->source(), file);
  EXPECT_EQ(*book->render_instructions("x", Json{{"container_id", "c9"}}), "from env c9");
  auto explicit_missing = PromptBook::load((dir.path() / "nope.yml").string());
  ASSERT_FALSE(explicit_missing.ok());
  EXPECT_EQ(explicit_missing.error().code(), core::Code::kNotFound);
}

TEST(AppConfigTest, InterpolatesAndFallsBackToProviderKeyVariables) {
  std::map<std::string, std::string> env = {{"TEMPORAL_ADDRESS", "temporal.internal:7233"},
                                            {"GEMINI_API_KEY", "g-key"}};
  core::EnvLookup lookup = [&](const std::string& n) -> std::optional<std::string> {
    auto it = env.find(n);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  auto doc = core::load_yaml_file(std::string(CODEACT_SOURCE_DIR) + "/config/app_conf.yml");
  ASSERT_TRUE(doc.ok()) << doc.error().to_string();
  auto config = core::AppConfig::from_json(*doc, "app_conf.yml", lookup);
  ASSERT_TRUE(config.ok()) << config.error().to_string();
  EXPECT_EQ(config->temporal_url, "temporal.internal:7233");
  EXPECT_EQ(config->temporal_namespace, "default");
  auto gemini = config->provider("gemini");
  ASSERT_TRUE(gemini.ok());
  EXPECT_EQ(gemini->api_key, "g-key");
  EXPECT_EQ(gemini->model_name, "gemini-2.5-pro");
  EXPECT_EQ(config->provider("openai")->api_key, "");
  auto missing = config->provider("mistral");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message(),
            "no llm.mistral in app_conf.yml (configured providers: anthropic, gemini, openai)");
}

TEST(AppConfigTest, TemporalTlsKeysComeFromTheTemporalCliVariables) {
  std::map<std::string, std::string> env;
  core::EnvLookup lookup = [&](const std::string& n) -> std::optional<std::string> {
    auto it = env.find(n);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  auto doc = core::load_yaml_file(std::string(CODEACT_SOURCE_DIR) + "/config/app_conf.yml");
  ASSERT_TRUE(doc.ok()) << doc.error().to_string();
  // Nothing set: nothing configured, a plain connection.
  auto plain = core::AppConfig::from_json(*doc, "app_conf.yml", lookup);
  ASSERT_TRUE(plain.ok()) << plain.error().to_string();
  EXPECT_TRUE(plain->temporal_tls.empty());
  EXPECT_FALSE(plain->temporal_tls.uses_tls());

  env = {{"TEMPORAL_TLS_CA", "/etc/ca.pem"},
         {"TEMPORAL_TLS_CERT", "/etc/c.pem"},
         {"TEMPORAL_TLS_KEY", "/etc/c.key"},
         {"TEMPORAL_TLS_SERVER_NAME", "t.example"},
         {"TEMPORAL_API_KEY", "secret-key-123"}};
  auto c = core::AppConfig::from_json(*doc, "app_conf.yml", lookup);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_FALSE(c->temporal_tls.tls.has_value());
  EXPECT_TRUE(c->temporal_tls.uses_tls());  // implied by the files and the key
  EXPECT_EQ(c->temporal_tls.ca_file, "/etc/ca.pem");
  EXPECT_EQ(c->temporal_tls.cert_file, "/etc/c.pem");
  EXPECT_EQ(c->temporal_tls.key_file, "/etc/c.key");
  EXPECT_EQ(c->temporal_tls.server_name, "t.example");
  EXPECT_EQ(c->temporal_tls.api_key, "secret-key-123");

  // An API key alone implies TLS (Temporal Cloud); TEMPORAL_TLS=false turns it off.
  env = {{"TEMPORAL_API_KEY", "k"}};
  EXPECT_TRUE(core::AppConfig::from_json(*doc, "x", lookup)->temporal_tls.uses_tls());
  env = {{"TEMPORAL_API_KEY", "k"}, {"TEMPORAL_TLS", "false"}};
  EXPECT_FALSE(core::AppConfig::from_json(*doc, "x", lookup)->temporal_tls.uses_tls());
  env = {{"TEMPORAL_TLS", "True"}};
  EXPECT_TRUE(core::AppConfig::from_json(*doc, "x", lookup)->temporal_tls.uses_tls());
  env = {{"TEMPORAL_TLS", "maybe"}};
  auto bad = core::AppConfig::from_json(*doc, "x", lookup);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), core::Code::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("temporal.tls (TEMPORAL_TLS)"), std::string::npos)
      << bad.error().message();
  // A YAML boolean works too.
  auto yaml = core::parse_yaml("temporal: {url: 'h:1', tls: true}\n");
  ASSERT_TRUE(yaml.ok());
  EXPECT_TRUE(core::AppConfig::from_json(*yaml, "x", lookup)->temporal_tls.uses_tls());
}

TEST(AppConfigTest, UnsetVariableWithoutDefaultIsAnError) {
  auto doc = core::parse_yaml("llm:\n  openai:\n    api_key: ${CODEACT_TEST_SURELY_UNSET_VAR}\n");
  ASSERT_TRUE(doc.ok());
  auto config = core::AppConfig::from_json(
      *doc, "x.yml", [](const std::string&) { return std::optional<std::string>(); });
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.error().message().find("CODEACT_TEST_SURELY_UNSET_VAR"), std::string::npos)
      << config.error().message();
}

TEST(AppConfigTest, LoadsThroughAppConfigPathAndKeepsMcpServers) {
  TempDir dir;
  std::string file = dir.write("conf.yml",
                               "temporal: {url: 'h:1', namespace: ns}\n"
                               "mcp_servers:\n  time: {command: uvx, args: [mcp-server-time]}\n");
  ::setenv(core::kConfigPathEnv, file.c_str(), 1);
  auto config = core::AppConfig::load();
  ::unsetenv(core::kConfigPathEnv);
  ASSERT_TRUE(config.ok()) << config.error().to_string();
  EXPECT_EQ(config->source, file);
  EXPECT_EQ(config->temporal_url, "h:1");
  EXPECT_EQ(config->temporal_namespace, "ns");
  EXPECT_EQ(config->mcp_servers["time"]["args"][0], "mcp-server-time");
}

}  // namespace
}  // namespace codeact::agent
