// A worker process hosting the test workflows, so tests can SIGKILL and restart it.
#include <csignal>
#include <cstring>
#include <iostream>

#include "test_workflows.hpp"

int main(int argc, char** argv) {
  using namespace codeact::temporal;
  ClientOptions co;
  WorkerOptions wo;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--address")) co.address = argv[i + 1];
    if (!std::strcmp(argv[i], "--task-queue")) wo.task_queue = argv[i + 1];
  }
  auto client = Client::connect(co, std::chrono::seconds(30));
  if (!client.ok()) {
    std::cerr << client.error().to_string() << "\n";
    return 3;
  }
  Worker worker(std::move(client).value(), wo);
  testing::register_test_workflows(worker);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  if (auto st = worker.start(); !st.ok()) {
    std::cerr << st.error().to_string() << "\n";
    return 2;
  }
  int sig = 0;
  sigwait(&set, &sig);
  worker.shutdown(std::chrono::seconds(5));
  return 0;
}
