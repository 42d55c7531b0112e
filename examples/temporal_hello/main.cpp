// temporal_hello: a C++ Temporal worker any Temporal client can drive.
//
//   temporal_hello --address 127.0.0.1:7233 --task-queue hello
//   temporal workflow execute --type HelloWorkflow --task-queue hello --input '"World"'
//   -> "Hello, World!"
//
// Registers workflow HelloWorkflow(name: str) -> str, which calls activity compose_greeting.
#include <csignal>
#include <cstring>
#include <iostream>
#include <string>

#include "codeact/temporal/worker.hpp"

namespace tp = codeact::temporal;
using codeact::core::Json;
using codeact::core::Result;

namespace {

Result<Json> compose_greeting(tp::ActivityContext&, const tp::Args& args) {
  if (args.empty() || !args[0].is_string())
    return codeact::core::invalid_argument(
        "compose_greeting: expected one string argument (a name)");
  return Json("Hello, " + args[0].get<std::string>() + "!");
}

tp::Task<Json> hello_workflow(tp::WorkflowContext& ctx, tp::Args args) {
  tp::ActivityOptions options;
  options.start_to_close_timeout = std::chrono::seconds(10);
  Json name = args.empty() ? Json("World") : args[0];
  auto greeting = co_await ctx.execute_activity("compose_greeting", name, options);
  co_return std::move(greeting).value_or_throw();
}

void usage() {
  std::cerr << "usage: temporal_hello --task-queue QUEUE [--address HOST:PORT] [--namespace NS]\n";
}

}  // namespace

int main(int argc, char** argv) {
  tp::ClientOptions client_options;
  tp::WorkerOptions worker_options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) {
      usage();
      return 2;
    }
    if (arg == "--address") {
      client_options.address = argv[++i];
    } else if (arg == "--task-queue") {
      worker_options.task_queue = argv[++i];
    } else if (arg == "--namespace") {
      client_options.ns = argv[++i];
    } else {
      usage();
      return 2;
    }
  }
  if (worker_options.task_queue.empty()) {
    usage();
    return 2;
  }
  auto client = tp::Client::connect(client_options, std::chrono::seconds(10));
  if (!client.ok()) {
    std::cerr << "temporal_hello: " << client.error().to_string() << "\n";
    return codeact::core::exit_code(client.error().code());
  }
  // Block termination signals; the main thread waits for one and shuts down gracefully.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  tp::Worker worker(std::move(client).value(), worker_options);
  worker.register_workflow("HelloWorkflow", hello_workflow);
  worker.register_activity("compose_greeting", compose_greeting);
  if (auto st = worker.start(); !st.ok()) {
    std::cerr << "temporal_hello: " << st.error().to_string() << "\n";
    return 1;
  }
  std::cerr << "temporal_hello: worker on task queue '" << worker_options.task_queue << "' at "
            << client_options.address << "; Ctrl-C to stop\n";
  int sig = 0;
  sigwait(&signals, &sig);
  worker.shutdown(std::chrono::seconds(10));
  return 0;
}
