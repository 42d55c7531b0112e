// The `durable:` section of app_conf.yml (durable_config.hpp), read with JsonReader.
#include "codeact/durable/durable_config.hpp"

#include "codeact/core/json_reader.hpp"

namespace codeact::durable {

core::Result<DurableConfig> DurableConfig::from_config(const Json& config) {
  DurableConfig c;
  if (!config.is_object() || !config.contains("durable") || config["durable"].is_null()) return c;
  core::JsonReader r(config["durable"], "durable");
  CODEACT_TRY_STATUS(r.valid());
  CODEACT_TRY_STATUS(r.optional("reap_interval_seconds", c.reap_interval_seconds));
  // Below a second the reaper would poll Docker and Temporal in a busy loop.
  if (c.reap_interval_seconds < 0 || (c.reap_interval_seconds > 0 && c.reap_interval_seconds < 1) ||
      c.reap_interval_seconds > kMaxPolicySeconds) {
    return core::invalid_argument(
        fmt::format("durable: \"reap_interval_seconds\" must be 0 (no reaper) or between 1 and {}",
                    kMaxPolicySeconds));
  }
  CODEACT_TRY_STATUS(
      r.optional_with<ActivityPolicies>("activities", c.activities, ActivityPolicies::from_json));
  CODEACT_TRY_STATUS(r.finish());
  return c;
}

}  // namespace codeact::durable
