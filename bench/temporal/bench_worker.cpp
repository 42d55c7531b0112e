// The C++ side of the Temporal benchmark: workflow "Bench"(n) runs n sequential no-op
// activities. Driven by run_bench.py, which runs the Python equivalent in the same session.
#include <csignal>
#include <cstring>
#include <iostream>

#include "codeact/temporal/worker.hpp"
#include "noop_sequence.hpp"

namespace tp = codeact::temporal;
using codeact::core::Json;

int main(int argc, char** argv) {
  tp::ClientOptions co;
  tp::WorkerOptions wo;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--address")) co.address = argv[i + 1];
    if (!std::strcmp(argv[i], "--task-queue")) wo.task_queue = argv[i + 1];
  }
  auto client = tp::Client::connect(co, std::chrono::seconds(30));
  if (!client.ok()) {
    std::cerr << client.error().to_string() << "\n";
    return 3;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  tp::Worker worker(std::move(client).value(), wo);
  codeact::bench::register_noop_sequence(worker, "Bench");
  if (auto st = worker.start(); !st.ok()) {
    std::cerr << st.error().to_string() << "\n";
    return 2;
  }
  std::cout << "ready" << std::endl;
  int sig = 0;
  sigwait(&set, &sig);
  worker.shutdown(std::chrono::seconds(5));
  return 0;
}
