// SIGINT and SIGTERM for the long-running commands (`codeact worker`, `codeact server`): made
// before any thread starts, it blocks both in this thread and so in every thread started later;
// wait() returns when one arrives. Its name for the log line: describe(sig).
#pragma once

#include <signal.h>

namespace codeact::cli {

class StopSignals {
 public:
  StopSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  }
  // The signal that came (SIGINT or SIGTERM).
  int wait() {
    int sig = 0;
    sigwait(&set_, &sig);
    return sig;
  }
  static const char* describe(int sig) { return sig == SIGINT ? "interrupted" : "terminated"; }

 private:
  sigset_t set_;
};

}  // namespace codeact::cli
