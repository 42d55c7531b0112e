// The command line both codeact executables share (docs/architecture.md, module cli):
// `codeact` holds the commands that need no Temporal (sandbox, image, volume, mcp, model) and
// hands every other one to `codeact-full`, installed beside it, which holds them all. A command
// that never talks to Temporal so never pays for loading its libraries (gRPC, protobuf, abseil:
// most of a process start).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "cli_context.hpp"

namespace codeact::cli {

// What the commands that live only in codeact-full say of themselves in `codeact --help`; both
// executables register them with these words.
inline constexpr const char* kDoctorSummary =
    "Check what codeact needs (Docker, the sandbox image, ...) and say what to fix";
inline constexpr const char* kRunSummary =
    "Solve a task with a CodeAct agent: it writes Python that runs in a sandbox";
inline constexpr const char* kWorkerSummary =
    "Run a worker for durable agent runs (workflows and activities) on a task queue";
inline constexpr const char* kChatSummary =
    "Chat with a CodeAct agent: each line is a message; one sandbox for the conversation";
inline constexpr const char* kServerSummary =
    "Serve the HTTP API (runs, sessions, files, events) and the web chat page (docs/server.md)";

// Parses argv into an app named codeact (with --version, --log-level and a crash report) whose
// subcommands `add_commands` registers, runs the chosen one and returns its exit status.
int run_cli(int argc, char** argv,
            const std::function<void(CLI::App& app, ExitCode& exit)>& add_commands);

}  // namespace codeact::cli
