// CodeActServer: the HTTP service of `codeact server` (docs/server.md) — the Api's handlers on an
// HttpServer, with the EventHub that feeds the event streams.
//
//   server::CodeActServer s(config, deps);   // deps: a Temporal client, task queue, sandboxes
//   s.start();                               // ok, or why it cannot serve
//   std::cout << s.url();                    // http://127.0.0.1:8000/
//   s.stop();                                // every stream gets `shutdown`; runs go on
//
// start() refuses a non-loopback listen address when no API key is configured. Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "codeact/server/api.hpp"

namespace codeact::server {

class CodeActServer {
 public:
  // deps.hub is set by the server (it owns the hub).
  CodeActServer(ServerConfig config, ApiDeps deps);
  ~CodeActServer();  // stop()

  core::Status start();
  int port() const;
  std::string url() const;
  // The hub, for events that are not in a workflow's progress (a cell's live output).
  EventHub& hub();
  // Drains: streams get `shutdown` and close, waiting handlers answer 503. Idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace codeact::server
