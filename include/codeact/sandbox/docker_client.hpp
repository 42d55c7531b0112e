// DockerClient: a typed client for the Docker Engine REST API over its unix socket.
//
// Speaks to `unix:///var/run/docker.sock`, or to the socket named by DOCKER_HOST=unix://PATH
// (tcp:// hosts are rejected with InvalidArgument). Every request goes through a
// core::HttpTransport (the libcurl one by default; tests may inject another). The API version is
// negotiated on first use (from the reply to ping(), else by GET /version): min(server
// ApiVersion, max_api_version) prefixes every path (`/v1.41/containers/create`).
//
// Errors are Error values, never raw transport messages:
//   - daemon unreachable        -> Unavailable "cannot reach the Docker engine at unix://...:
//                                  <why>. Is it running? Try `systemctl start docker` or set
//                                  DOCKER_HOST."
//   - 404 (no such image/container/volume) -> NotFound, naming the object (a missing image adds
//                                  "run `codeact image build`" for codeact-sandbox images)
//   - 409 -> AlreadyExists (name in use) or FailedPrecondition (e.g. container not running),
//     400 -> InvalidArgument, 500 -> Internal; always with the daemon's `message`.
//
// Thread-safety: all methods may be called concurrently; the only state is the negotiated
// version (guarded by a mutex). The client does not own containers, images or volumes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codeact/core/cancel.hpp"
#include "codeact/core/http_client.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/result.hpp"

namespace codeact::sandbox {

using core::Json;

// A line of progress (build output, import status). Called on the calling thread.
using ProgressFn = std::function<void(std::string_view line)>;
// Supplies a streamed request body: fill `buffer` with up to `max` bytes, return 0 at the end.
using BodySource = std::function<size_t(char* buffer, size_t max)>;
// Docker filter map, e.g.
//   {"label": {"io.codeact.sandbox=1", "io.codeact.id=abc"}, "dangling": {"true"}}.
using Filters = std::map<std::string, std::vector<std::string>>;
using Labels = std::map<std::string, std::string>;

struct DockerClientOptions {
  // "" = $DOCKER_HOST, else unix:///var/run/docker.sock. Accepts "unix:///path".
  std::string host;
  // Highest API version this client speaks. Default: 1.43.
  std::string max_api_version = "1.43";
  // Null = core::default_transport().
  std::shared_ptr<core::HttpTransport> transport;
  // Timeout of ordinary (non-streaming) requests. Default: 60s.
  std::chrono::milliseconds request_timeout{60000};
};

struct DockerVersion {
  std::string version;                 // engine version, e.g. "20.10.24+dfsg1"
  std::string api_version;             // server's highest, e.g. "1.41"
  std::string min_api_version;         // e.g. "1.12"
  std::string negotiated_api_version;  // what this client uses, e.g. "1.41"
  std::string os, arch, kernel_version;
  Json raw;
};

// ---- images -------------------------------------------------------------------------------

struct ImageInfo {
  std::string id;  // "sha256:..."
  std::vector<std::string> repo_tags;
  std::string created;  // RFC 3339
  int64_t size = 0;     // bytes
  Labels labels;
  std::vector<std::string> env;  // "K=V"
  std::string user;
  std::string working_dir;
  std::vector<std::string> cmd;
  std::vector<std::string> entrypoint;
  Json raw;
};

struct ImageSummary {
  std::string id;
  std::vector<std::string> repo_tags;
  int64_t created = 0;  // unix seconds
  int64_t size = 0;
  Labels labels;
};

struct ImageListOptions {
  bool all = false;
  Filters filters;  // e.g. {"reference": {"codeact-sandbox"}}, {"label": {"k=v"}}
};

struct ImportImageOptions {
  std::string repo;  // e.g. "codeact-rootfs"
  std::string tag;   // e.g. "3f2a..."
  // Dockerfile instructions applied to the image: "ENV PATH=/usr/bin:/bin", "CMD [\"bash\"]",
  // "USER 1000", "WORKDIR /", "ENTRYPOINT [...]".
  std::vector<std::string> changes;
  std::string message;
  // Streamed tar: give exactly one of `tar_file` (a path on this host) or `source`.
  std::string tar_file;
  BodySource source;
  ProgressFn progress;
  const core::CancelToken* cancel = nullptr;
};

struct BuildImageOptions {
  std::vector<std::string> tags;          // "repo:tag"
  std::string dockerfile = "Dockerfile";  // path inside the context
  std::map<std::string, std::string> build_args;
  Labels labels;
  std::string network_mode;  // "" = daemon default (bridge); "host", "none"
  bool no_cache = false;
  bool pull = false;
  bool remove_intermediate = true;  // rm + forcerm
  // Build context as a tar: either in memory or streamed.
  std::string context_tar;
  BodySource context_source;
  // Every line the build prints ("Step 3/12 : RUN ...", command output, status lines).
  ProgressFn progress;
  const core::CancelToken* cancel = nullptr;
  // Default: none.
  std::chrono::milliseconds timeout{0};
};

struct BuildResult {
  std::string image_id;  // "sha256:..."
};

struct CommitOptions {
  std::string container;  // id or name
  std::string repo;
  std::string tag;
  std::vector<std::string> changes;  // as in ImportImageOptions
  std::string comment;
  std::string author;
  bool pause = true;
};

// ---- containers ---------------------------------------------------------------------------

struct BindMount {
  std::string host_path;
  std::string container_path;
  bool read_only = false;
};

struct VolumeMount {
  std::string volume;  // named volume (created on demand by the daemon if missing)
  std::string container_path;
  bool read_only = false;
  bool no_copy = false;  // do not fill a new volume from the image's directory
};

// Everything needed to create a container. Unset optionals leave the daemon's default.
struct ContainerSpec {
  std::string name;  // "" = daemon-generated
  std::string image;
  std::vector<std::string> cmd;                        // empty = the image's CMD
  std::optional<std::vector<std::string>> entrypoint;  // nullopt = image's; {} = none
  std::map<std::string, std::string> env;
  std::string user;  // "1000:1000", "sandbox"
  Labels labels;
  std::string working_dir;
  std::string hostname;
  std::vector<BindMount> binds;
  std::vector<VolumeMount> volumes;
  std::map<std::string, std::string> tmpfs;  // path -> mount options, e.g. "rw,size=64m,mode=1777"
  bool read_only_rootfs = false;
  std::vector<std::string> cap_drop;  // e.g. {"ALL"}
  std::vector<std::string> cap_add;
  std::vector<std::string> security_opt;  // e.g. {"no-new-privileges"}
  std::optional<int64_t> pids_limit;
  std::optional<int64_t> memory_bytes;
  std::optional<int64_t> memory_swap_bytes;  // -1 = unlimited swap
  std::optional<int64_t> nano_cpus;          // 1e9 = one CPU
  std::optional<int64_t> shm_size_bytes;
  std::string network_mode;  // "" = default (bridge), "none", "bridge", "host", a network name
  bool init = false;         // docker-init as PID 1 (reaps zombies, forwards signals)
  std::vector<std::string> extra_hosts;  // "name:ip", "host.docker.internal:host-gateway"
  bool tty = false;
  bool open_stdin = false;
  std::string stop_signal;
  std::optional<int> stop_timeout_seconds;
  bool auto_remove = false;
  std::string restart_policy;  // "", "no", "on-failure", "unless-stopped", "always"
  // Merged (JSON merge patch) into the request's top level / HostConfig, for fields not above.
  Json extra_config;
  Json extra_host_config;
};

struct ContainerState {
  std::string status;  // "created", "running", "paused", "restarting", "exited", "dead"
  bool running = false;
  bool paused = false;
  bool restarting = false;
  bool oom_killed = false;
  bool dead = false;
  int64_t pid = 0;
  int64_t exit_code = 0;
  std::string error;
  std::string started_at;  // RFC 3339 ("0001-01-01T00:00:00Z" when never)
  std::string finished_at;
  std::string health;  // "" (no health check), "starting", "healthy", "unhealthy"
};

struct ContainerInfo {
  std::string id;
  std::string name;          // without the leading '/'
  std::string image;         // image id
  std::string config_image;  // image reference as given at create
  std::string created;
  ContainerState state;
  Labels labels;
  int64_t restart_count = 0;
  Json raw;  // the whole inspect document (Config, HostConfig, Mounts, NetworkSettings, ...)
};

struct ContainerSummary {
  std::string id;
  std::vector<std::string> names;  // without leading '/'
  std::string image;
  std::string state;   // "running", "exited", ...
  std::string status;  // "Up 3 minutes"
  int64_t created = 0;
  Labels labels;
};

struct ContainerListOptions {
  bool all = true;  // include stopped containers
  Filters filters;  // e.g. {"label": {"io.codeact.sandbox"}}, {"name": {"^/sandbox-"}}
};

struct RemoveContainerOptions {
  bool force = false;    // kill a running container first
  bool volumes = false;  // remove anonymous volumes
};

enum class WaitCondition { kNotRunning, kNextExit, kRemoved };

struct WaitResult {
  int64_t status_code = 0;
  std::string error;
};

struct LogsOptions {
  bool stdout_stream = true;
  bool stderr_stream = true;
  bool timestamps = false;
  std::string tail = "all";  // or a number of lines
  int64_t since = 0;         // unix seconds
};

struct ContainerOutput {
  std::string stdout_text;
  std::string stderr_text;
};

struct ExecSpec {
  std::vector<std::string> cmd;
  std::map<std::string, std::string> env;
  std::string user;
  std::string working_dir;
  bool privileged = false;
};

struct ExecResult {
  int64_t exit_code = 0;
  std::string stdout_text;
  std::string stderr_text;
};

// The stat of a path inside a container (X-Docker-Container-Path-Stat).
struct PathStat {
  std::string name;
  int64_t size = 0;
  uint32_t mode = 0;  // Go os.FileMode bits: permission bits | 1<<31 for directories
  std::string mtime;
  std::string link_target;
  bool is_dir() const { return (mode & 0x80000000u) != 0; }
};

struct ArchiveResult {
  std::string tar;
  PathStat stat;
};

struct ContainerStats {
  int64_t memory_usage = 0;  // bytes, cache excluded where the daemon reports it
  int64_t memory_limit = 0;
  int64_t pids = 0;
  uint64_t cpu_total_ns = 0;
  Json raw;
};

// ---- volumes ------------------------------------------------------------------------------

struct VolumeSpec {
  std::string name;  // "" = daemon-generated
  std::string driver = "local";
  std::map<std::string, std::string>
      driver_opts;  // e.g. NFS: type=nfs, o=addr=...,rw, device=:/path
  Labels labels;
};

struct VolumeInfo {
  std::string name;
  std::string driver;
  std::string mountpoint;
  std::string created_at;
  Labels labels;
  std::map<std::string, std::string> options;
  Json raw;
};

class DockerClient {
 public:
  // Resolves the host (options, DOCKER_HOST, default) without contacting the daemon.
  // InvalidArgument for a host that is not unix://.
  static core::Result<std::shared_ptr<DockerClient>> create(DockerClientOptions options = {});

  // "unix:///var/run/docker.sock"
  const std::string& host() const;

  // Contacts the daemon (GET /_ping). Unavailable with the fix text when it cannot.
  core::Status ping();
  // GET /version; also performs (or refreshes) version negotiation.
  core::Result<DockerVersion> version();
  // The negotiated API version ("1.41"), negotiating first if needed.
  core::Result<std::string> api_version();

  // images
  core::Result<ImageInfo> inspect_image(const std::string& name);
  core::Result<std::vector<ImageSummary>> list_images(const ImageListOptions& options = {});
  // docker import: POST /images/create?fromSrc=-. Returns the new image id.
  core::Result<std::string> import_image(const ImportImageOptions& options);
  // docker pull: POST /images/create?fromImage=. Progress lines go to `progress`.
  core::Status pull_image(const std::string& reference, const ProgressFn& progress = nullptr,
                          const core::CancelToken* cancel = nullptr);
  // POST /build. An error reported in the build's JSON stream (a failing RUN) becomes an
  // Error (FailedPrecondition, with the daemon's message) after the lines before it were
  // passed to `progress`.
  core::Result<BuildResult> build_image(const BuildImageOptions& options);
  core::Status tag_image(const std::string& image, const std::string& repo, const std::string& tag);
  core::Status remove_image(const std::string& image, bool force = false);
  // Returns the new image id.
  core::Result<std::string> commit_container(const CommitOptions& options);

  // containers
  // Returns the container id.
  core::Result<std::string> create_container(const ContainerSpec& spec);
  core::Status start_container(const std::string& id);
  // Sends the stop signal, then SIGKILL after `timeout`. A container already stopped is OK.
  core::Status stop_container(const std::string& id,
                              std::chrono::seconds timeout = std::chrono::seconds(10));
  // FailedPrecondition if it is not running.
  core::Status kill_container(const std::string& id, const std::string& signal = "SIGKILL");
  core::Status restart_container(const std::string& id,
                                 std::chrono::seconds timeout = std::chrono::seconds(10));
  core::Status remove_container(const std::string& id, const RemoveContainerOptions& options = {});
  core::Result<ContainerInfo> inspect_container(const std::string& id);
  core::Result<std::vector<ContainerSummary>> list_containers(
      const ContainerListOptions& options = {});
  // Blocks until the condition holds. `timeout` 0 = no limit (DeadlineExceeded otherwise).
  core::Result<WaitResult> wait_container(const std::string& id,
                                          WaitCondition condition = WaitCondition::kNotRunning,
                                          std::chrono::milliseconds timeout = {},
                                          const core::CancelToken* cancel = nullptr);
  // Demultiplexed stdout/stderr (a TTY container's output is all in stdout_text).
  core::Result<ContainerOutput> logs(const std::string& id, const LogsOptions& options = {});

  // docker exec, for tests and baselines (the product talks to the kernel). Runs to completion.
  core::Result<ExecResult> exec(const std::string& id, const ExecSpec& spec,
                                std::chrono::milliseconds timeout = {});

  // Extracts a tar into `path` (a directory that must exist) inside the container.
  core::Status put_archive(const std::string& id, const std::string& path, std::string tar);
  // A tar of `path` (file or directory; the archive's top entry is the path's base name).
  core::Result<ArchiveResult> get_archive(const std::string& id, const std::string& path);

  // One-shot stats (GET /containers/{id}/stats?stream=false).
  core::Result<ContainerStats> stats(const std::string& id);

  // volumes
  core::Result<VolumeInfo> create_volume(const VolumeSpec& spec);
  core::Result<VolumeInfo> inspect_volume(const std::string& name);
  core::Result<std::vector<VolumeInfo>> list_volumes(const Filters& filters = {});
  core::Status remove_volume(const std::string& name, bool force = false);

  // Escape hatch: a request to the versioned API (path like "/containers/json?all=1").
  // Returns the parsed JSON body (null for an empty body), errors mapped as above.
  core::Result<Json> request_json(const std::string& method, const std::string& path,
                                  const Json* body = nullptr, std::string_view what = "");

  DockerClient(std::string host, std::string socket_path, DockerClientOptions options);
  ~DockerClient();
  DockerClient(const DockerClient&) = delete;
  DockerClient& operator=(const DockerClient&) = delete;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// "unix:///var/run/docker.sock" -> "/var/run/docker.sock"; InvalidArgument for tcp:// and others.
core::Result<std::string> docker_socket_path(std::string_view host);

// Splits "repo:tag" (also "registry:5000/repo:tag", "repo@sha256:...") into repo and tag;
// tag "" when absent.
std::pair<std::string, std::string> split_image_reference(std::string_view reference);

}  // namespace codeact::sandbox
