// Who is asking: API keys as principals, the page's cookie sessions with their CSRF tokens, and
// per-principal rate limits (docs/server.md, "Authentication and principals").
//
// Keys are compared in constant time (SHA-256 digests compared with CRYPTO_memcmp, every key
// every time) and never logged or returned. Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codeact/core/clock.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::server {

struct ApiKey {
  std::string principal;  // the name it authenticates as
  std::string key;
};

// server.api_keys of app_conf.yml (null, a list of keys, or of {name, key}) and CODEACT_API_KEYS
// (comma-separated keys). A key without a name is the principal "key-<8 hex of its SHA-256>".
// InvalidArgument naming the entry for a malformed one, a key shorter than 16 characters, or two
// entries with the same key.
core::Result<std::vector<ApiKey>> parse_api_keys(const core::Json& config_value,
                                                 const std::string& env_value);

// Hex SHA-256 of `data`.
std::string sha256_hex(std::string_view data);

// The page's login: an opaque session token (the cookie) with its CSRF token.
struct CookieSession {
  std::string principal;
  std::string csrf_token;
  int64_t expires = 0;  // Unix seconds
};

// "sessions-<12 hex>.json": the default name of the sign-ins file of a set of keys (a digest of
// their digests), so servers with other keys never share one, and a server with the same keys
// keeps its sign-ins.
std::string sessions_file_name(const std::vector<ApiKey>& keys);

// How long a sign-in of the page lasts (the cookie's Max-Age).
inline constexpr std::chrono::hours kCookieSessionLifetime{24 * 14};

class Authenticator {
 public:
  // `sessions_file` ("" = memory only) keeps the page's sign-ins across restarts: a JSON object
  // {sha256(token): {principal, csrf_token, expires}}, mode 0600, rewritten on each login and
  // logout (the tokens themselves are never stored). Read at construction: sign-ins that
  // expired, or whose principal no longer has a key, are dropped; an unreadable file is logged
  // and ignored (everyone signs in again). `clock` null = core::real_clock().
  explicit Authenticator(std::vector<ApiKey> keys, std::string sessions_file = "",
                         core::Clock* clock = nullptr);

  bool keys_configured() const { return !digests_.empty(); }
  // The principal of a key; nullopt when it is not one of the keys.
  std::optional<std::string> principal_of_key(std::string_view key) const;
  // A new cookie session for `principal`: {token, session}.
  std::pair<std::string, CookieSession> login(const std::string& principal);
  // The sign-in of a cookie; nullopt when unknown or expired.
  std::optional<CookieSession> session(const std::string& token) const;
  void logout(const std::string& token);
  // The CSRF token writes need when no key is configured (one per server process).
  const std::string& local_csrf_token() const { return local_csrf_; }

 private:
  void save_locked() const;  // REQUIRES: mu_ held

  std::vector<std::pair<std::string, std::string>> digests_;  // (sha256(key), principal)
  std::string sessions_file_;
  core::Clock& clock_;
  mutable std::mutex mu_;
  std::map<std::string, CookieSession> sessions_;  // by sha256(token); GUARDED_BY(mu_)
  std::string local_csrf_;
};

// Constant-time equality of two strings of any length.
bool constant_time_equal(std::string_view a, std::string_view b);
// 32 random bytes, hex.
std::string random_token();

// A token bucket per principal: `per_minute` requests, bursts up to that many.
class RateLimiter {
 public:
  // `clock` null = core::real_clock().
  explicit RateLimiter(int per_minute, core::Clock* clock = nullptr);
  // nullopt when the request may go on, else the seconds to wait (>= 1).
  std::optional<int> check(const std::string& principal);

 private:
  struct Bucket {
    double tokens;
    std::chrono::steady_clock::time_point at;
  };
  double per_minute_;
  core::Clock& clock_;
  std::mutex mu_;
  std::map<std::string, Bucket> buckets_;
};

}  // namespace codeact::server
