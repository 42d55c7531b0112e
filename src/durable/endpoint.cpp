#include "codeact/durable/endpoint.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "codeact/core/config.hpp"
#include "codeact/core/file_lock.hpp"
#include "codeact/core/files.hpp"
#include "codeact/temporal/dev_server.hpp"

namespace codeact::durable {
namespace {

namespace fs = std::filesystem;
using core::Result;

constexpr int kDefaultPort = 7233;

// True when a Temporal frontend answers at `address` (quickly: this is a probe).
bool temporal_answers(const std::string& address, const std::string& ns,
                      std::chrono::milliseconds wait) {
  TemporalEndpoint e;
  e.address = address;
  e.ns = ns;
  return connect_temporal(e, wait).ok();
}

// A TLS setting as the shipped app_conf.yml spells it: the key and its environment variable.
std::string key_name(std::string_view key, std::string_view env) {
  return fmt::format("temporal.{} ({})", key, env);
}

// The PEM file a TLS key names, whole. InvalidArgument naming the key and the file.
Result<std::string> read_pem(const std::string& path, std::string_view key, std::string_view env) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec(errno, std::generic_category());
    return core::invalid_argument(
        fmt::format("cannot read {} {}: {}", key_name(key, env), path, ec.message()));
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.find("-----BEGIN ") == std::string::npos)
    return core::invalid_argument(
        fmt::format("{} {} holds no PEM block (-----BEGIN ...)", key_name(key, env), path));
  return text;
}

std::string lowercase(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

// What to check after a failed TLS handshake, from gRPC's (OpenSSL's) reason.
std::string tls_hint(const std::string& reason) {
  const std::string r = lowercase(reason);
  if (r.find("certificate verify failed") != std::string::npos ||
      r.find("unable to get local issuer") != std::string::npos ||
      r.find("self signed") != std::string::npos || r.find("self-signed") != std::string::npos)
    return "the server's certificate is not signed by a CA this client trusts: set " +
           key_name("tls_ca_file", "TEMPORAL_TLS_CA") + " to the CA that signed it";
  if (r.find("peer name") != std::string::npos || r.find("hostname") != std::string::npos)
    return "the server's certificate is for another name: set " +
           key_name("tls_server_name", "TEMPORAL_TLS_SERVER_NAME") + " to a name it carries";
  if (r.find("certificate required") != std::string::npos)
    return "the server wants a client certificate: set " +
           key_name("tls_cert_file", "TEMPORAL_TLS_CERT") + " and " +
           key_name("tls_key_file", "TEMPORAL_TLS_KEY");
  if (r.find("wrong version number") != std::string::npos ||
      r.find("packet length too long") != std::string::npos)
    return "the server does not speak TLS: set " + key_name("tls", "TEMPORAL_TLS") + " to false";
  return "check " + key_name("tls_ca_file", "TEMPORAL_TLS_CA") + ", " +
         key_name("tls_server_name", "TEMPORAL_TLS_SERVER_NAME") + " and the client certificate";
}

// `error` of connecting to `endpoint`, said so that a user knows where and what to fix.
core::Error explain_connect_failure(const TemporalEndpoint& endpoint, const core::Error& error) {
  const TemporalCredentials& cr = endpoint.credentials;
  const std::string& reason = error.message();
  switch (error.code()) {
    case core::Code::kUnauthenticated:
      return core::Error(
          error.code(),
          fmt::format("Temporal at {} refused this client ({}): {}; {}", endpoint.address,
                      cr.describe(), reason,
                      cr.api_key.empty()
                          ? "it wants credentials: set " + key_name("api_key", "TEMPORAL_API_KEY") +
                                " or a client certificate"
                          : "check " + key_name("api_key", "TEMPORAL_API_KEY")));
    case core::Code::kPermissionDenied:
      return core::Error(error.code(),
                         fmt::format("Temporal at {} does not let this client ({}) use namespace "
                                     "\"{}\": {}; the API key or client certificate must be "
                                     "allowed there",
                                     endpoint.address, cr.describe(), endpoint.ns, reason));
    case core::Code::kUnavailable: {
      const std::string r = lowercase(reason);
      if (cr.tls && (r.find("ssl handshake") != std::string::npos ||
                     r.find("handshake failed") != std::string::npos ||
                     r.find("certificate") != std::string::npos))
        return core::unavailable(fmt::format("TLS with Temporal at {} failed ({}): {}; {}",
                                             endpoint.address, cr.describe(), reason,
                                             tls_hint(reason)));
      // A TLS server closes a plain connection during gRPC's handshake.
      const bool closed = r.find("handshaker shutdown") != std::string::npos ||
                          r.find("socket closed") != std::string::npos;
      return core::unavailable(fmt::format(
          "no Temporal server answers at {} ({}): {}{}", endpoint.address, cr.describe(), reason,
          !cr.tls && closed
              ? "; if it wants TLS, set " + key_name("tls", "TEMPORAL_TLS") + " to true"
              : std::string()));
    }
    default: {
      // An HTTP 400 where gRPC was expected: a proxy's error page. nginx answers so when it
      // wants a client certificate and got none (ssl_verify_client on).
      std::string hint;
      if (cr.tls && cr.cert_chain_pem.empty() &&
          lowercase(reason).find("header with status: 400") != std::string::npos)
        hint = "; a proxy that wants a client certificate answers so: set " +
               key_name("tls_cert_file", "TEMPORAL_TLS_CERT") + " and " +
               key_name("tls_key_file", "TEMPORAL_TLS_KEY");
      return core::Error(error.code(), fmt::format("Temporal at {} ({}) answered: {}{}",
                                                   endpoint.address, cr.describe(), reason, hint));
    }
  }
}

}  // namespace

std::string TemporalCredentials::describe() const {
  std::string s = !tls ? "plain" : cert_chain_pem.empty() ? "TLS" : "mTLS (client certificate)";
  if (!api_key.empty()) s += ", API key";
  return s;
}

Result<TemporalCredentials> load_temporal_credentials(const core::TemporalTlsConfig& config) {
  TemporalCredentials cr;
  cr.tls = config.uses_tls();
  if (config.cert_file.empty() != config.key_file.empty()) {
    const bool cert = !config.cert_file.empty();
    return core::invalid_argument(
        fmt::format("{} is set ({}) but {} is not: a client certificate (mTLS) needs both",
                    cert ? key_name("tls_cert_file", "TEMPORAL_TLS_CERT")
                         : key_name("tls_key_file", "TEMPORAL_TLS_KEY"),
                    cert ? config.cert_file : config.key_file,
                    cert ? key_name("tls_key_file", "TEMPORAL_TLS_KEY")
                         : key_name("tls_cert_file", "TEMPORAL_TLS_CERT")));
  }
  if (!cr.tls &&
      (!config.ca_file.empty() || !config.cert_file.empty() || !config.server_name.empty()))
    return core::invalid_argument(
        fmt::format("{} is false but TLS settings are given ({}): remove them or turn TLS on",
                    key_name("tls", "TEMPORAL_TLS"),
                    !config.ca_file.empty()     ? "temporal.tls_ca_file"
                    : !config.cert_file.empty() ? "temporal.tls_cert_file"
                                                : "temporal.tls_server_name"));
  if (!config.ca_file.empty()) {
    CODEACT_TRY(cr.root_certs_pem, read_pem(config.ca_file, "tls_ca_file", "TEMPORAL_TLS_CA"));
  }
  if (!config.cert_file.empty()) {
    CODEACT_TRY(cr.cert_chain_pem,
                read_pem(config.cert_file, "tls_cert_file", "TEMPORAL_TLS_CERT"));
    CODEACT_TRY(cr.private_key_pem, read_pem(config.key_file, "tls_key_file", "TEMPORAL_TLS_KEY"));
  }
  cr.server_name = config.server_name;
  cr.api_key = config.api_key;
  return cr;
}

Result<temporal::Client> connect_temporal(const TemporalEndpoint& endpoint,
                                          std::chrono::milliseconds wait) {
  temporal::ClientOptions co;
  co.address = endpoint.address;
  co.ns = endpoint.ns;
  const TemporalCredentials& cr = endpoint.credentials;
  co.tls = cr.tls;
  co.tls_root_certs_pem = cr.root_certs_pem;
  co.tls_cert_chain_pem = cr.cert_chain_pem;
  co.tls_private_key_pem = cr.private_key_pem;
  co.tls_server_name = cr.server_name;
  co.api_key = cr.api_key;
  auto deadline = std::chrono::steady_clock::now() + wait;
  auto client = temporal::Client::connect(co, wait);
  if (!client.ok()) return explain_connect_failure(endpoint, client.error());
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  auto serving = client->wait_until_serving(std::max(left, std::chrono::milliseconds(0)));
  if (!serving.ok()) {
    const auto code = serving.error().code();
    if (code == core::Code::kUnauthenticated || code == core::Code::kPermissionDenied)
      return explain_connect_failure(endpoint, serving.error());
    return std::move(serving).error();
  }
  return std::move(client).value();
}

Result<TemporalEndpoint> resolve_temporal(const EndpointRequest& request,
                                          const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  TemporalEndpoint e;
  e.ns = request.ns.empty() ? "default" : request.ns;
  if (!request.flag.empty() || !request.config_url.empty()) {
    e.address = request.flag.empty() ? request.config_url : request.flag;
    // Accept URL forms people paste: grpc://host:port, http://host:port.
    if (auto p = e.address.find("://"); p != std::string::npos) e.address = e.address.substr(p + 3);
    if (e.address.find(':') == std::string::npos) e.address += ":7233";
    CODEACT_TRY(e.credentials, load_temporal_credentials(request.tls));
    return e;
  }

  e.embedded = true;
  fs::path dir =
      fs::path(request.data_dir.empty() ? core::data_dir() : request.data_dir) / "temporal";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return core::internal_error("cannot create " + dir.string() + ": " + ec.message());
  e.log_path = (dir / "server.log").string();
  core::FileLock lock((dir / "lock").string());

  // A server this data directory started before, still running.
  std::string known = core::read_first_line((dir / "address").string());
  if (!known.empty() && temporal_answers(known, e.ns, std::chrono::milliseconds(1500))) {
    e.address = known;
    say(fmt::format("using the embedded Temporal dev server at {} (already running; data in {})",
                    known, dir.string()));
    return e;
  }

  int port = kDefaultPort;
  if (auto env = core::getenv_string("CODEACT_TEMPORAL_PORT"); env && !env->empty()) {
    try {
      port = std::stoi(*env);
    } catch (const std::exception&) {
      return core::invalid_argument("CODEACT_TEMPORAL_PORT=" + *env + " is not a port number");
    }
  }
  if (!temporal::loopback_port_free(port)) {
    std::string fallback = fmt::format("127.0.0.1:{}", port);
    if (temporal_answers(fallback, e.ns, std::chrono::milliseconds(1500))) {
      e.address = fallback;
      say(fmt::format("using the Temporal server already running at {}", fallback));
      return e;
    }
    port = temporal::free_loopback_port();
  }
  temporal::DevServerOptions server;
  CODEACT_TRY(server.cli, temporal::find_temporal_cli());
  server.port = port;
  server.db_file = (dir / "temporal.db").string();
  server.log_file = e.log_path;
  server.ns = e.ns;
  server.detached = true;  // it outlives this command on purpose
  server.pid_file = (dir / "pid").string();
  e.address = fmt::format("127.0.0.1:{}", port);
  say(fmt::format("starting the embedded Temporal dev server at {} (data in {}, log {})", e.address,
                  dir.string(), e.log_path));
  auto started = temporal::DevServer::start(server);
  if (!started.ok()) return std::move(started).error();
  std::ofstream(dir / "address") << e.address << "\n";
  e.started_now = true;
  say("embedded Temporal dev server ready");
  return e;
}

}  // namespace codeact::durable
