#include "codeact/server/auth.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "codeact/server/api.hpp"
#include "support/manual_clock.hpp"

using namespace codeact;
using namespace ::codeact::server;
using core::Json;

TEST(ApiKeys, ConfigAndEnvironmentKeysBecomePrincipals) {
  auto keys = parse_api_keys(Json::parse(R"([{"name": "alice", "key": "0123456789abcdef-a"},
                                              "0123456789abcdef-b"])"),
                             " 0123456789abcdef-c ,");
  ASSERT_TRUE(keys.ok()) << keys.error().message();
  ASSERT_EQ(keys->size(), 3u);
  EXPECT_EQ((*keys)[0].principal, "alice");
  EXPECT_EQ((*keys)[1].principal, "key-" + sha256_hex("0123456789abcdef-b").substr(0, 8));
  EXPECT_EQ((*keys)[2].key, "0123456789abcdef-c");
}

TEST(ApiKeys, ShortDuplicateAndMalformedKeysAreRefusedNamingTheEntry) {
  auto short_key = parse_api_keys(Json::parse(R"(["short"])"), "");
  ASSERT_FALSE(short_key.ok());
  EXPECT_NE(short_key.error().message().find("server.api_keys[0]"), std::string::npos);
  EXPECT_FALSE(parse_api_keys(Json::parse(R"(["0123456789abcdef-a"])"), "0123456789abcdef-a").ok());
  EXPECT_FALSE(
      parse_api_keys(Json::parse(R"([{"nme": "x", "key": "0123456789abcdef-a"}])"), "").ok());
  EXPECT_FALSE(parse_api_keys(Json::parse(R"({"a": 1})"), "").ok());
  EXPECT_TRUE(parse_api_keys(Json(), "")->empty());
}

TEST(Authenticator, KnowsItsKeysAndCookieSessionsAndForgetsALoggedOutOne) {
  Authenticator auth(
      std::vector<ApiKey>{{"alice", "0123456789abcdef-a"}, {"bob", "0123456789abcdef-b"}});
  EXPECT_TRUE(auth.keys_configured());
  EXPECT_EQ(auth.principal_of_key("0123456789abcdef-b").value_or(""), "bob");
  EXPECT_FALSE(auth.principal_of_key("0123456789abcdef-").has_value());
  EXPECT_FALSE(auth.principal_of_key("").has_value());
  auto [token, session] = auth.login("alice");
  EXPECT_EQ(token.size(), 64u);
  EXPECT_NE(session.csrf_token, token);
  EXPECT_EQ(auth.session(token)->principal, "alice");
  EXPECT_FALSE(auth.session(token + "x").has_value());
  auth.logout(token);
  EXPECT_FALSE(auth.session(token).has_value());
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "abcd"));
}

TEST(Authenticator, SignInsOutliveARestartButNotTheirExpiryOrTheirKey) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / ("auth-" + random_token().substr(0, 8));
  const std::string file = (dir / "sessions.json").string();
  ::codeact::testing::ManualClock clock;
  std::vector<ApiKey> keys = {{"alice", "0123456789abcdef-a"}, {"bob", "0123456789abcdef-b"}};
  std::string alice, bob, gone;
  {
    Authenticator auth(keys, file, &clock);
    alice = auth.login("alice").first;
    bob = auth.login("bob").first;
    gone = auth.login("alice").first;
    auth.logout(gone);
  }
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text.find(alice), std::string::npos) << "the file holds a cookie itself";

  Authenticator restarted(keys, file, &clock);
  ASSERT_TRUE(restarted.session(alice).has_value());
  EXPECT_EQ(restarted.session(alice)->principal, "alice");
  EXPECT_FALSE(restarted.session(gone).has_value());  // logged out before the restart

  Authenticator without_bob(std::vector<ApiKey>{keys[0]}, file, &clock);  // bob's key was removed
  EXPECT_FALSE(without_bob.session(bob).has_value());
  EXPECT_TRUE(without_bob.session(alice).has_value());

  clock.advance(kCookieSessionLifetime + std::chrono::seconds(1));
  EXPECT_FALSE(without_bob.session(alice).has_value());
  Authenticator later(keys, file, &clock);
  EXPECT_FALSE(later.session(alice).has_value());

  fs::create_directories(dir);
  std::ofstream(file) << "not json";
  Authenticator corrupt(keys, file, &clock);  // logged and ignored
  EXPECT_TRUE(corrupt.session(corrupt.login("bob").first).has_value());
  fs::remove_all(dir);
}

TEST(RateLimiter, AllowsTheRateAndSaysHowLongToWait) {
  ::codeact::testing::ManualClock clock;
  RateLimiter limiter(60, &clock);
  for (int i = 0; i < 60; ++i) EXPECT_FALSE(limiter.check("a").has_value()) << i;
  auto wait = limiter.check("a");
  ASSERT_TRUE(wait.has_value());
  EXPECT_EQ(*wait, 1);
  EXPECT_FALSE(limiter.check("b").has_value());  // per principal
  clock.advance(std::chrono::seconds(2));
  EXPECT_FALSE(limiter.check("a").has_value());
}

TEST(ServerConfig, ReadsTheServerSectionStrictly) {
  auto c = ServerConfig::from_config(Json::parse(R"({"server": {"listen": "0.0.0.0:9000",
      "max_active_runs": 3, "api_keys": ["0123456789abcdef-a"]}})"),
                                     "");
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->listen, "0.0.0.0:9000");
  EXPECT_EQ(c->max_active_runs, 3);
  EXPECT_EQ(c->api_keys.size(), 1u);
  auto bad = ServerConfig::from_config(Json::parse(R"({"server": {"max_actve_runs": 3}})"), "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("max_actve_runs"), std::string::npos);
  EXPECT_FALSE(
      ServerConfig::from_config(Json::parse(R"({"server": {"rate_per_minute": 0}})"), "").ok());
  EXPECT_TRUE(ServerConfig::from_config(Json::object(), "").ok());
}
