// Shared plumbing of the `codeact` subcommands: how errors are printed and turned into exit
// codes, and how the Docker client and sandbox manager are made. Internal to the CLI.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>

#include "codeact/core/result.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"

namespace codeact::cli {

// Exit statuses of the CLI contract (README.md), defined with the code mapping in core.
using core::kExitOk;
using core::kExitUnavailable;
using core::kExitUsage;
inline constexpr int kExitCellRaised = core::kExitFailed;  // sandbox exec/bash: the cell raised

// Prints "codeact: <message>" to stderr and returns core::exit_code of its code: 2 for bad
// input, 3 when Docker/the sandbox is unavailable or missing, 1 otherwise.
int report(const core::Error& error);

// A Docker client and sandbox manager; progress of a first-use image build goes to stderr. The
// `sandbox:` section of app_conf.yml (`config_path`, else the usual search) sets its defaults.
// The containers it makes are labelled with `host_id` ("" = durable::default_host_id()).
core::Result<std::shared_ptr<sandbox::SandboxManager>> make_manager(
    const std::string& config_path = "", const std::string& host_id = "");

// Where each subcommand stores the status it exits with.
struct ExitCode {
  int value = 0;
};

void add_image_commands(CLI::App& app, ExitCode& exit);
void add_sandbox_commands(CLI::App& app, ExitCode& exit);
void add_volume_commands(CLI::App& app, ExitCode& exit);
void add_doctor_command(CLI::App& app, ExitCode& exit);
void add_run_command(CLI::App& app, ExitCode& exit);
void add_mcp_commands(CLI::App& app, ExitCode& exit);
void add_worker_commands(CLI::App& app, ExitCode& exit);
void add_server_command(CLI::App& app, ExitCode& exit);
void add_model_commands(CLI::App& app, ExitCode& exit);

// Runs a cell with the tools of these MCP servers (from app_conf.yml; `config_path` "" = the
// usual search) and the functions of these Python files callable from it (mcp_commands.cpp).
core::Result<sandbox::ExecuteResult> execute_with_tools(
    sandbox::SandboxManager& manager, const std::string& id, sandbox::ExecuteRequest request,
    const std::vector<std::string>& mcp_servers, const std::vector<std::string>& function_files,
    const std::string& config_path = "");

// Splits "a,b,c" (also accepts repeated flags) into items, dropping empties.
std::vector<std::string> split_csv(const std::vector<std::string>& values);
// True when stdout is a terminal (colors, live output).
bool stdout_is_tty();

}  // namespace codeact::cli
