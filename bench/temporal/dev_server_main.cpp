// temporal_dev_server: temporal::DevServer (the project's one dev-server launcher) for programs
// that are not C++, such as the Python benchmarks. Starts an owned dev server on a free
// 127.0.0.1 port (or --port P: a restart on the same port and database is the same server to its
// clients), prints its address on one line once the namespace serves, and kills it when
// stdin closes or on SIGTERM/SIGINT. Exit status 1 when it could not start (the reason on stderr).
//
//   temporal_dev_server [--temporal CLI] [--db FILE (default: a temporary file)] [--log FILE]
//                       [--log-level warn] [--port P]
#include <poll.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include "codeact/temporal/dev_server.hpp"

namespace tp = codeact::temporal;

namespace {
volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }
}  // namespace

int main(int argc, char** argv) {
  tp::DevServerOptions o;
  o.log_level = "error";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--temporal")) o.cli = argv[i + 1];
    if (!std::strcmp(argv[i], "--db")) o.db_file = argv[i + 1];
    if (!std::strcmp(argv[i], "--log")) o.log_file = argv[i + 1];
    if (!std::strcmp(argv[i], "--log-level")) o.log_level = argv[i + 1];
    if (!std::strcmp(argv[i], "--port")) o.port = std::atoi(argv[i + 1]);
  }
  std::string tmp;
  if (o.db_file.empty()) {
    char tmpl[] = "/tmp/codeact-dev-server-XXXXXX";
    tmp = mkdtemp(tmpl);
    o.db_file = tmp + "/temporal.db";
  }
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  int status = 0;
  {
    auto server = tp::DevServer::start(o);
    if (!server.ok()) {
      std::cerr << server.error().to_string() << "\n";
      status = 1;
    } else {
      std::cout << server->address() << std::endl;
      // Until stdin closes (the parent ended or closed the pipe) or a signal arrives.
      pollfd in{STDIN_FILENO, POLLIN, 0};
      char buf[256];
      while (!g_stop) {
        int n = ::poll(&in, 1, 200);
        if (n > 0 && ::read(STDIN_FILENO, buf, sizeof buf) <= 0) break;
      }
    }
  }  // the DevServer is destroyed here: the server is killed
  if (!tmp.empty()) std::filesystem::remove_all(tmp);
  return status;
}
