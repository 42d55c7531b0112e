// The Temporal server of an integration test process: a temporal::DevServer (dev_server.hpp, the
// project's one launcher) on a free 127.0.0.1 port with its own SQLite file in a temporary
// directory, started once per test process as a GoogleTest environment and killed at exit.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "codeact/temporal/client.hpp"
#include "codeact/temporal/dev_server.hpp"

namespace codeact::temporal::testing {

class DevServer : public ::testing::Environment {
 public:
  void SetUp() override;
  void TearDown() override;

  // "127.0.0.1:<port>" of the running server. REQUIRES: SetUp succeeded.
  static const std::string& address();
  static Client client();
  // The repo's .venv python, for tests that drive the Python temporalio client.
  static std::string python();
  // The server's directory (database, log); tests put marker files here too.
  static std::string temp_dir();
  // The `temporal` CLI the server runs from.
  static std::string temporal_cli();

 private:
  std::optional<temporal::DevServer> server_;
};

// A task queue / workflow id unique to this process and call.
std::string unique_name(const std::string& prefix);

}  // namespace codeact::temporal::testing
