#include "codeact/server/auth.hpp"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <algorithm>
#include <set>

#include "codeact/core/log.hpp"
#include "codeact/core/strings.hpp"
#include "private_file.hpp"

namespace codeact::server {

std::string sha256_hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  std::string out;
  for (unsigned char c : digest) out += fmt::format("{:02x}", c);
  return out;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Compare digests: equal length, so CRYPTO_memcmp's time does not depend on where they differ.
  const std::string da = sha256_hex(a), db = sha256_hex(b);
  return CRYPTO_memcmp(da.data(), db.data(), da.size()) == 0;
}

std::string random_token() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("RAND_bytes failed");
  std::string out;
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  return out;
}

core::Result<std::vector<ApiKey>> parse_api_keys(const core::Json& config_value,
                                                 const std::string& env_value) {
  std::vector<ApiKey> keys;
  auto add = [&](std::string principal, std::string key, const std::string& where) -> core::Status {
    key = core::trim(key);
    if (key.size() < 16) {
      return core::invalid_argument(where +
                                    ": an API key must have at least 16 characters (use e.g. "
                                    "`openssl rand -hex 24`)");
    }
    if (principal.empty()) principal = "key-" + sha256_hex(key).substr(0, 8);
    for (const auto& k : keys) {
      if (k.key == key) return core::invalid_argument(where + ": the same key is given twice");
    }
    keys.push_back({std::move(principal), std::move(key)});
    return core::ok_status();
  };
  if (!config_value.is_null()) {
    if (!config_value.is_array())
      return core::invalid_argument("server.api_keys must be a list of keys or of {name, key}");
    for (size_t i = 0; i < config_value.size(); ++i) {
      const auto& e = config_value[i];
      const std::string where = fmt::format("server.api_keys[{}]", i);
      if (e.is_string()) {
        CODEACT_TRY_STATUS(add("", e.get<std::string>(), where));
      } else if (e.is_object() && e.contains("key") && e["key"].is_string()) {
        std::string name;
        for (const auto& [k, v] : e.items()) {
          if (k != "key" && k != "name")
            return core::invalid_argument(where + ": unknown key \"" + k + "\" (name, key)");
        }
        if (e.contains("name")) {
          if (!e["name"].is_string() || e["name"].get<std::string>().empty())
            return core::invalid_argument(where + ".name must be a non-empty string");
          name = e["name"].get<std::string>();
        }
        CODEACT_TRY_STATUS(add(name, e["key"].get<std::string>(), where));
      } else {
        return core::invalid_argument(where + " must be a key or {name, key}");
      }
    }
  }
  int i = 0;
  for (const auto& k : core::split(env_value, ',')) {
    ++i;
    if (core::trim(k).empty()) continue;
    CODEACT_TRY_STATUS(add("", k, fmt::format("CODEACT_API_KEYS (entry {})", i)));
  }
  return keys;
}

std::string sessions_file_name(const std::vector<ApiKey>& keys) {
  std::vector<std::string> digests;
  for (const auto& k : keys) digests.push_back(sha256_hex(k.key));
  std::sort(digests.begin(), digests.end());
  return "sessions-" + sha256_hex(core::join(digests, ",")).substr(0, 12) + ".json";
}

namespace {

int64_t unix_seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

Authenticator::Authenticator(std::vector<ApiKey> keys, std::string sessions_file,
                             core::Clock* clock)
    : sessions_file_(std::move(sessions_file)),
      clock_(core::clock_or_real(clock)),
      local_csrf_(random_token()) {
  std::set<std::string> principals;
  for (auto& k : keys) {
    digests_.emplace_back(sha256_hex(k.key), k.principal);
    principals.insert(k.principal);
  }
  if (sessions_file_.empty()) return;
  auto j = read_state_file(sessions_file_);
  if (!j.ok() && j.error().code() == core::Code::kNotFound) return;  // none yet
  if (!j.ok() || !j->is_object()) {
    core::log().warn("server: ignoring the sign-ins in {} ({}); the page asks to sign in again",
                     sessions_file_, j.ok() ? "not a JSON object" : j.error().message());
    return;
  }
  const int64_t now = unix_seconds(clock_.system_now());
  size_t dropped = 0;
  for (const auto& [digest, v] : j->items()) {
    CookieSession s{core::json_string(v, "principal"), core::json_string(v, "csrf_token"),
                    core::json_int(v, "expires")};
    if (s.expires <= now || !principals.count(s.principal) || s.csrf_token.empty()) {
      ++dropped;
      continue;
    }
    sessions_[digest] = std::move(s);
  }
  if (dropped > 0) {
    std::lock_guard lock(mu_);
    save_locked();
  }
}

void Authenticator::save_locked() const {
  if (sessions_file_.empty()) return;
  core::Json j = core::Json::object();
  for (const auto& [digest, s] : sessions_)
    j[digest] = {{"principal", s.principal}, {"csrf_token", s.csrf_token}, {"expires", s.expires}};
  auto written = write_private_file(sessions_file_, j.dump());
  if (!written.ok())
    core::log().warn("server: {}; sign-ins are not kept across a restart",
                     written.error().message());
}

std::optional<std::string> Authenticator::principal_of_key(std::string_view key) const {
  const std::string digest = sha256_hex(key);
  std::optional<std::string> found;
  for (const auto& [d, principal] : digests_) {  // every key, every time
    if (CRYPTO_memcmp(d.data(), digest.data(), digest.size()) == 0) found = principal;
  }
  return found;
}

std::pair<std::string, CookieSession> Authenticator::login(const std::string& principal) {
  std::string token = random_token();
  const auto expires = clock_.system_now() + kCookieSessionLifetime;
  CookieSession s{principal, random_token(), unix_seconds(expires)};
  std::lock_guard lock(mu_);
  const int64_t now = unix_seconds(clock_.system_now());
  std::erase_if(sessions_, [now](const auto& e) { return e.second.expires <= now; });
  sessions_[sha256_hex(token)] = s;
  save_locked();
  return {token, s};
}

std::optional<CookieSession> Authenticator::session(const std::string& token) const {
  if (token.empty()) return std::nullopt;
  std::lock_guard lock(mu_);
  auto it = sessions_.find(sha256_hex(token));  // a lookup by digest leaks nothing of the token
  if (it == sessions_.end() || it->second.expires <= unix_seconds(clock_.system_now()))
    return std::nullopt;
  return it->second;
}

void Authenticator::logout(const std::string& token) {
  std::lock_guard lock(mu_);
  if (sessions_.erase(sha256_hex(token)) > 0) save_locked();
}

RateLimiter::RateLimiter(int per_minute, core::Clock* clock)
    : per_minute_(std::max(1, per_minute)), clock_(core::clock_or_real(clock)) {}

std::optional<int> RateLimiter::check(const std::string& principal) {
  const auto now = clock_.steady_now();
  std::lock_guard lock(mu_);
  auto [it, fresh] = buckets_.try_emplace(principal, Bucket{per_minute_, now});
  Bucket& b = it->second;
  const double elapsed = std::chrono::duration<double>(now - b.at).count();
  b.tokens = std::min(per_minute_, b.tokens + elapsed * per_minute_ / 60.0);
  b.at = now;
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return std::nullopt;
  }
  const double wait = (1 - b.tokens) * 60.0 / per_minute_;
  return std::max(1, static_cast<int>(std::ceil(wait)));
}

}  // namespace codeact::server
