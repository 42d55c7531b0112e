// DurableConfig: the `durable:` section of app_conf.yml, which workers (the reaper) and the
// commands that start runs (activity options) read.
//
//   durable:
//     reap_interval_seconds: 60          # 0 = no reaper (runner.hpp)
//     activities: {model: {...}, tool: {...}, sandbox: {...},   # ActivityPolicies, payloads.hpp
//                  host_timeout_seconds: 600}                  # a lost host (docs/deploy.md)
//
// Read strictly, like the payloads: an unknown key (a misspelling), a value of the wrong type or
// out of range is an InvalidArgument error naming the key ("durable: unknown key
// \"reap_interval_secs\" ..."), never a silent default. Plain data; thread-compatible.
#pragma once

#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"
#include "codeact/durable/payloads.hpp"

namespace codeact::durable {

struct DurableConfig {
  double reap_interval_seconds = 60;
  ActivityPolicies activities;

  // `config` is the whole app_conf.yml document (core::AppConfig::raw); without a `durable:`
  // key (or with `durable: null`) every default holds.
  static core::Result<DurableConfig> from_config(const Json& config);
};

}  // namespace codeact::durable
