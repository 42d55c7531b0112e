#include "codeact/sandbox/docker_client.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "codeact/core/base64.hpp"
#include "codeact/core/config.hpp"
#include "codeact/core/log.hpp"
#include "codeact/core/strings.hpp"
#include "docker_stream_internal.hpp"

namespace codeact::sandbox {

using core::Error;
using core::HttpRequest;
using core::HttpResponse;
using core::Result;
using core::Status;

namespace {

constexpr std::string_view kDefaultHost = "unix:///var/run/docker.sock";

// Percent-encodes a path segment, keeping the characters image references and ids use.
std::string path_escape(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-' || c == ':' || c == '/' || c == '@') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::pair<int, int> parse_api_version(std::string_view v) {
  int major = 0, minor = 0;
  if (std::sscanf(std::string(v).c_str(), "%d.%d", &major, &minor) < 1) return {0, 0};
  return {major, minor};
}

std::string filters_json(const Filters& filters) {
  Json j = Json::object();
  for (const auto& [key, values] : filters) j[key] = values;
  return core::dump_json(j);
}

Labels labels_of(const Json& j) {
  Labels out;
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.value().is_string()) out[it.key()] = it.value().get<std::string>();
    }
  }
  return out;
}

std::vector<std::string> strings_of(const Json& j) {
  std::vector<std::string> out;
  if (j.is_array()) {
    for (const auto& v : j) {
      if (v.is_string()) out.push_back(v.get<std::string>());
    }
  } else if (j.is_string()) {
    out.push_back(j.get<std::string>());
  }
  return out;
}

// The daemon's error text: {"message": "..."} or the raw body.
std::string daemon_message(const std::string& body) {
  auto parsed = core::parse_json(body);
  if (parsed.ok() && parsed->is_object() && parsed->contains("message")) {
    return core::json_string(*parsed, "message");
  }
  std::string text = core::abbreviate(core::trim(body), 500);
  return text.empty() ? "(no message)" : text;
}

bool contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// Adds what to do when an image is missing.
std::string missing_image_hint(std::string_view message) {
  if (contains(message, "codeact-sandbox") || contains(message, "codeact-rootfs")) {
    return " — run `codeact image build`";
  }
  return " — pull or build it first (for the sandbox image, run `codeact image build`)";
}

const char* bool_param(bool b) { return b ? "1" : "0"; }

}  // namespace

Error docker_http_error(int status, const std::string& body, std::string_view what) {
  std::string message = daemon_message(body);
  std::string text = fmt::format("docker: {}: {}", what, message);
  // core's mapping, refined where Docker's statuses mean more.
  core::Code code = core::code_from_http_status(status);
  if (status == 404 &&
      (contains(message, "No such image") || contains(message, "pull access denied") ||
       contains(message, "repository does not exist"))) {
    return core::not_found(text + missing_image_hint(message));
  }
  if (status == 409) {
    // A conflict with the object's state ("is not running", "in use"), not a race worth retrying.
    code = contains(message, "already in use") || contains(message, "already exists")
               ? core::Code::kAlreadyExists
               : core::Code::kFailedPrecondition;
  }
  // The daemon failed the operation itself (a mount, a build step): retrying does not help.
  if (status == 500) code = core::Code::kInternal;
  if (code == core::Code::kUnknown || code == core::Code::kOk) {
    return core::unknown_error(fmt::format("{} (HTTP {})", text, status));
  }
  return Error(code, text);
}

// ---- host resolution --------------------------------------------------------------------------

Result<std::string> docker_socket_path(std::string_view host) {
  if (host.starts_with("unix://")) {
    std::string path(host.substr(7));
    if (path.empty() || path.front() != '/') {
      return core::invalid_argument(fmt::format(
          "DOCKER_HOST \"{}\": a unix socket needs an absolute path, e.g. {}", host, kDefaultHost));
    }
    return path;
  }
  if (host.starts_with("/")) return std::string(host);
  return core::invalid_argument(fmt::format(
      "DOCKER_HOST \"{}\" is not supported: codeact talks to the Docker engine over its unix "
      "socket only; set DOCKER_HOST=unix:///path/to/docker.sock or unset it for {}",
      host, kDefaultHost));
}

std::pair<std::string, std::string> split_image_reference(std::string_view reference) {
  auto at = reference.find('@');
  if (at != std::string_view::npos) {
    return {std::string(reference.substr(0, at)), std::string(reference.substr(at))};
  }
  auto colon = reference.rfind(':');
  auto slash = reference.rfind('/');
  if (colon == std::string_view::npos || (slash != std::string_view::npos && colon < slash)) {
    return {std::string(reference), ""};
  }
  return {std::string(reference.substr(0, colon)), std::string(reference.substr(colon + 1))};
}

Result<std::shared_ptr<DockerClient>> DockerClient::create(DockerClientOptions options) {
  std::string host = options.host;
  if (host.empty()) host = core::getenv_string("DOCKER_HOST").value_or("");
  if (host.empty()) host = std::string(kDefaultHost);
  CODEACT_TRY(std::string socket, docker_socket_path(host));
  if (host.front() == '/') host = "unix://" + host;
  return std::make_shared<DockerClient>(host, socket, std::move(options));
}

// ---- request plumbing -------------------------------------------------------------------------

namespace {

// One API call: method, path (without version prefix), body, and how to read the reply.
struct Call {
  std::string method = "GET";
  std::string path;  // "/containers/json?all=1"
  bool versioned = true;
  std::string what;  // "create container \"x\"" for messages
  std::string body;
  std::string content_type;  // default application/json when body set
  BodySource body_source;
  std::optional<uint64_t> body_size;
  std::function<bool(std::string_view)> on_body;
  std::chrono::milliseconds timeout{-1};  // -1 = options.request_timeout, 0 = none
  const core::CancelToken* cancel = nullptr;
};

}  // namespace

// The connection and the negotiated API version.
class DockerClient::Impl {
 public:
  Impl(std::string host_in, std::string socket_in, DockerClientOptions options_in)
      : host(std::move(host_in)),
        socket_path(std::move(socket_in)),
        options(std::move(options_in)) {
    transport = options.transport ? options.transport : core::default_transport();
  }

  Result<HttpResponse> send(HttpRequest request, std::string_view what);
  // `self` negotiates the API version on first use.
  Result<HttpResponse> call(DockerClient& self, Call& c);
  // Settles the API version from the engine's (`engine`, as "Docker 24.0.7" or "", goes in the
  // error): the lower of it and options.max_api_version; FailedPrecondition below 1.40.
  Result<std::string> negotiate(const std::string& server_api, const std::string& engine);

  const std::string host;         // as shown to users
  const std::string socket_path;  // unix socket
  const DockerClientOptions options;
  std::shared_ptr<core::HttpTransport> transport;
  std::mutex mu;
  std::string api_version;  // GUARDED_BY(mu); "" until negotiated
};

DockerClient::DockerClient(std::string host, std::string socket_path, DockerClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(host), std::move(socket_path), std::move(options))) {}

DockerClient::~DockerClient() = default;

const std::string& DockerClient::host() const { return impl_->host; }

Result<HttpResponse> DockerClient::Impl::send(HttpRequest request, std::string_view what) {
  request.unix_socket = socket_path;
  auto result = transport->send(request);
  if (result.ok()) return result;
  const Error& e = result.error();
  if (e.code() == core::Code::kUnavailable) {
    std::string reason;
    struct stat st {};
    if (::stat(socket_path.c_str(), &st) != 0) {
      reason = fmt::format("the socket {} does not exist", socket_path);
    } else if (!S_ISSOCK(st.st_mode)) {
      reason = fmt::format("{} is not a socket", socket_path);
    } else if (::access(socket_path.c_str(), R_OK | W_OK) != 0) {
      reason = fmt::format("permission denied on {} (run as root or join the `docker` group)",
                           socket_path);
    } else {
      reason = "the connection was refused or dropped";
    }
    return core::unavailable(fmt::format(
        "cannot reach the Docker engine at {}: {}. Is it running? Try `systemctl start docker` "
        "or set DOCKER_HOST.",
        host, reason));
  }
  if (e.code() == core::Code::kDeadlineExceeded) {
    return core::deadline_exceeded(
        fmt::format("docker: {}: no answer from the Docker engine at {} within {} ms", what, host,
                    request.timeout.count()));
  }
  if (e.code() == core::Code::kCancelled) {
    return core::cancelled(fmt::format("docker: {}: cancelled", what));
  }
  return Error(e.code(), fmt::format("docker: {}: {}", what, e.message()));
}

Result<HttpResponse> DockerClient::Impl::call(DockerClient& self, Call& c) {
  std::string prefix;
  if (c.versioned) {
    std::unique_lock lock(mu);
    if (api_version.empty()) {
      lock.unlock();
      CODEACT_TRY(DockerVersion v, self.version());
      prefix = "/v" + v.negotiated_api_version;
    } else {
      prefix = "/v" + api_version;
    }
  }
  HttpRequest request;
  request.method = c.method;
  request.url = "http://localhost" + prefix + c.path;
  request.timeout = c.timeout.count() < 0 ? options.request_timeout : c.timeout;
  request.cancel = c.cancel;
  if (!c.body.empty() || c.body_source) {
    request.headers.emplace_back("Content-Type",
                                 c.content_type.empty() ? "application/json" : c.content_type);
  }
  request.body = c.body;
  request.body_source = c.body_source;
  request.body_size = c.body_size;
  // A streamed reply still needs its text when the status says error.
  std::string error_body;
  if (c.on_body) {
    auto on_body = c.on_body;
    request.on_body = [on_body, &error_body](std::string_view chunk) {
      if (error_body.size() < 65536) error_body.append(chunk.substr(0, 65536 - error_body.size()));
      return on_body(chunk);
    };
  }
  CODEACT_TRY(HttpResponse response, send(std::move(request), c.what));
  if (response.status >= 400) {
    return docker_http_error(response.status, c.on_body ? error_body : response.body, c.what);
  }
  return response;
}

Result<Json> DockerClient::request_json(const std::string& method, const std::string& path,
                                        const Json* body, std::string_view what) {
  Call c;
  c.method = method;
  c.path = path;
  c.what = what.empty() ? method + " " + path : std::string(what);
  if (body) c.body = core::dump_json(*body);
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));
  if (core::trim(r.body).empty()) return Json();
  return core::parse_json(r.body, "Docker API reply to " + c.what);
}

// ---- system -----------------------------------------------------------------------------------

Status DockerClient::ping() {
  Call c;
  c.path = "/_ping";
  c.versioned = false;
  c.what = "ping";
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));
  // The reply names the engine's API version: negotiating from it spares the first versioned
  // call a GET /version (a CLI command is a ping and one or two calls).
  if (std::string api = r.header("api-version"); !api.empty()) {
    CODEACT_TRY_STATUS(impl_->negotiate(api, ""));
  }
  return core::ok_status();
}

Result<DockerVersion> DockerClient::version() {
  Call c;
  c.path = "/version";
  c.versioned = false;
  c.what = "version";
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));
  CODEACT_TRY(Json j, core::parse_json(r.body, "Docker /version reply"));
  DockerVersion v;
  v.version = core::json_string(j, "Version");
  v.api_version = core::json_string(j, "ApiVersion");
  v.min_api_version = core::json_string(j, "MinAPIVersion");
  v.os = core::json_string(j, "Os");
  v.arch = core::json_string(j, "Arch");
  v.kernel_version = core::json_string(j, "KernelVersion");
  v.raw = j;
  if (v.api_version.empty()) {
    return core::internal_error("docker: version: the engine did not report its ApiVersion");
  }
  CODEACT_TRY(v.negotiated_api_version, impl_->negotiate(v.api_version, "Docker " + v.version));
  return v;
}

Result<std::string> DockerClient::Impl::negotiate(const std::string& server_api,
                                                  const std::string& engine) {
  auto server = parse_api_version(server_api);
  auto mine = parse_api_version(options.max_api_version);
  std::string negotiated = server < mine ? server_api : options.max_api_version;
  if (parse_api_version(negotiated) < std::make_pair(1, 40)) {
    return core::failed_precondition(
        fmt::format("docker: the engine at {} speaks API {}{}; codeact needs API 1.40 or newer "
                    "(Docker 19.03+)",
                    host, server_api, engine.empty() ? "" : " (" + engine + ")"));
  }
  std::lock_guard<std::mutex> lock(mu);
  api_version = negotiated;
  return negotiated;
}

Result<std::string> DockerClient::api_version() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->api_version.empty()) return impl_->api_version;
  }
  CODEACT_TRY(DockerVersion v, version());
  return v.negotiated_api_version;
}

// ---- images -----------------------------------------------------------------------------------

namespace {

ImageInfo image_info_from(const Json& j) {
  ImageInfo info;
  info.id = core::json_string(j, "Id");
  info.repo_tags = strings_of(j.value("RepoTags", Json()));
  info.created = core::json_string(j, "Created");
  info.size = core::json_int(j, "Size");
  Json config = j.value("Config", Json());
  if (config.is_object()) {
    info.labels = labels_of(config.value("Labels", Json()));
    info.env = strings_of(config.value("Env", Json()));
    info.user = core::json_string(config, "User");
    info.working_dir = core::json_string(config, "WorkingDir");
    info.cmd = strings_of(config.value("Cmd", Json()));
    info.entrypoint = strings_of(config.value("Entrypoint", Json()));
  }
  info.raw = j;
  return info;
}

// Collects the outcome of a JSON-message stream (build, pull, import).
struct StreamOutcome {
  std::string error;
  std::string aux_id;
  std::string last_status;
};

std::function<bool(std::string_view)> json_stream_reader(JsonMessageStream* stream) {
  return [stream](std::string_view chunk) {
    stream->feed(chunk);
    return true;
  };
}

}  // namespace

Result<ImageInfo> DockerClient::inspect_image(const std::string& name) {
  CODEACT_TRY(Json j, request_json("GET", "/images/" + path_escape(name) + "/json", nullptr,
                                   fmt::format("inspect image \"{}\"", name)));
  return image_info_from(j);
}

Result<std::vector<ImageSummary>> DockerClient::list_images(const ImageListOptions& options) {
  std::string path = fmt::format("/images/json?all={}", bool_param(options.all));
  if (!options.filters.empty())
    path += "&filters=" + core::url_encode(filters_json(options.filters));
  CODEACT_TRY(Json j, request_json("GET", path, nullptr, "list images"));
  std::vector<ImageSummary> out;
  for (const auto& item : j) {
    ImageSummary s;
    s.id = core::json_string(item, "Id");
    s.repo_tags = strings_of(item.value("RepoTags", Json()));
    s.created = core::json_int(item, "Created");
    s.size = core::json_int(item, "Size");
    s.labels = labels_of(item.value("Labels", Json()));
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::string> DockerClient::import_image(const ImportImageOptions& options) {
  std::string what = fmt::format("import image {}:{}", options.repo, options.tag);
  if (options.tar_file.empty() == !options.source) {
    return core::invalid_argument(what + ": give exactly one of tar_file or source");
  }
  std::string path = "/images/create?fromSrc=-";
  if (!options.repo.empty()) path += "&repo=" + core::url_encode(options.repo);
  if (!options.tag.empty()) path += "&tag=" + core::url_encode(options.tag);
  if (!options.message.empty()) path += "&message=" + core::url_encode(options.message);
  for (const auto& change : options.changes) path += "&changes=" + core::url_encode(change);

  Call c;
  c.method = "POST";
  c.path = path;
  c.what = what;
  c.content_type = "application/x-tar";
  c.timeout = std::chrono::milliseconds(0);
  c.cancel = options.cancel;
  std::unique_ptr<FILE, int (*)(FILE*)> file(nullptr, &fclose);
  if (!options.tar_file.empty()) {
    file.reset(std::fopen(options.tar_file.c_str(), "rb"));
    if (!file) {
      return core::not_found(fmt::format("docker: {}: cannot open {}: {}", what, options.tar_file,
                                         std::strerror(errno)));
    }
    struct stat st {};
    if (::fstat(fileno(file.get()), &st) == 0) c.body_size = static_cast<uint64_t>(st.st_size);
    FILE* f = file.get();
    c.body_source = [f](char* buffer, size_t max) { return std::fread(buffer, 1, max, f); };
  } else {
    c.body_source = options.source;
  }
  StreamOutcome outcome;
  JsonMessageStream stream([&](const Json& msg) {
    if (msg.contains("error")) {
      outcome.error = core::json_string(msg, "error");
      return;
    }
    std::string status = core::json_string(msg, "status");
    if (!status.empty()) {
      outcome.last_status = status;
      if (options.progress) options.progress(status);
    }
  });
  c.on_body = json_stream_reader(&stream);
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));
  (void)r;
  stream.finish();
  if (!outcome.error.empty()) {
    return core::internal_error(fmt::format("docker: {}: {}", what, outcome.error));
  }
  // The last status of an import is the new image id.
  if (outcome.last_status.starts_with("sha256:")) return outcome.last_status;
  CODEACT_TRY(ImageInfo info,
              inspect_image(options.repo + ":" + (options.tag.empty() ? "latest" : options.tag)));
  return info.id;
}

Status DockerClient::pull_image(const std::string& reference, const ProgressFn& progress,
                                const core::CancelToken* cancel) {
  auto [repo, tag] = split_image_reference(reference);
  std::string what = fmt::format("pull image \"{}\"", reference);
  Call c;
  c.method = "POST";
  c.path = "/images/create?fromImage=" + core::url_encode(repo) +
           "&tag=" + core::url_encode(tag.empty() ? "latest" : tag);
  c.what = what;
  c.timeout = std::chrono::milliseconds(0);
  c.cancel = cancel;
  std::string error;
  JsonMessageStream stream([&](const Json& msg) {
    if (msg.contains("error")) {
      error = core::json_string(msg, "error");
      return;
    }
    if (!progress || (msg.contains("progressDetail") && !msg["progressDetail"].empty())) return;
    std::string id = core::json_string(msg, "id");
    std::string status = core::json_string(msg, "status");
    if (!status.empty()) progress(id.empty() ? status : id + ": " + status);
  });
  c.on_body = json_stream_reader(&stream);
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));
  (void)r;
  stream.finish();
  if (!error.empty()) {
    if (contains(error, "not found") || contains(error, "does not exist")) {
      return core::not_found(fmt::format("docker: {}: {}", what, error));
    }
    return core::unavailable(fmt::format("docker: {}: {}", what, error));
  }
  return core::ok_status();
}

Result<BuildResult> DockerClient::build_image(const BuildImageOptions& options) {
  std::string what = fmt::format(
      "build image {}", options.tags.empty() ? std::string("(untagged)") : options.tags[0]);
  if (options.context_tar.empty() == !options.context_source) {
    return core::invalid_argument(what + ": give exactly one of context_tar or context_source");
  }
  std::string path = "/build?dockerfile=" + core::url_encode(options.dockerfile);
  for (const auto& t : options.tags) path += "&t=" + core::url_encode(t);
  if (!options.build_args.empty()) {
    Json args = Json::object();
    for (const auto& [k, v] : options.build_args) args[k] = v;
    path += "&buildargs=" + core::url_encode(core::dump_json(args));
  }
  if (!options.labels.empty()) {
    Json labels = Json::object();
    for (const auto& [k, v] : options.labels) labels[k] = v;
    path += "&labels=" + core::url_encode(core::dump_json(labels));
  }
  if (!options.network_mode.empty())
    path += "&networkmode=" + core::url_encode(options.network_mode);
  if (options.no_cache) path += "&nocache=1";
  if (options.pull) path += "&pull=1";
  path += options.remove_intermediate ? "&rm=1&forcerm=1" : "&rm=0";

  Call c;
  c.method = "POST";
  c.path = path;
  c.what = what;
  c.content_type = "application/x-tar";
  c.timeout = options.timeout;
  c.cancel = options.cancel;
  if (options.context_source) {
    c.body_source = options.context_source;
  } else {
    c.body = options.context_tar;
    c.body_size = options.context_tar.size();
  }
  StreamOutcome outcome;
  LineAssembler lines([&](std::string_view line) {
    if (options.progress) options.progress(line);
  });
  JsonMessageStream stream([&](const Json& msg) {
    if (msg.contains("error")) {
      outcome.error = core::json_string(msg, "error");
      return;
    }
    if (msg.contains("stream") && msg["stream"].is_string()) {
      std::string text = msg["stream"].get<std::string>();
      lines.feed(text);
      static constexpr std::string_view kBuilt = "Successfully built ";
      if (text.starts_with(kBuilt)) outcome.last_status = core::trim(text.substr(kBuilt.size()));
      return;
    }
    if (msg.contains("aux") && msg["aux"].is_object()) {
      std::string id = core::json_string(msg["aux"], "ID");
      if (!id.empty()) outcome.aux_id = id;
      return;
    }
    std::string status = core::json_string(msg, "status");
    if (!status.empty() && options.progress &&
        !(msg.contains("progressDetail") && !msg["progressDetail"].empty())) {
      std::string id = core::json_string(msg, "id");
      options.progress(id.empty() ? status : id + ": " + status);
    }
  });
  c.on_body = json_stream_reader(&stream);
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));
  (void)r;
  stream.finish();
  lines.finish();
  if (!outcome.error.empty()) {
    return core::failed_precondition(
        fmt::format("docker: {}: {}", what, core::trim(outcome.error)));
  }
  BuildResult result;
  result.image_id = !outcome.aux_id.empty() ? outcome.aux_id : outcome.last_status;
  if (result.image_id.empty() && !options.tags.empty()) {
    CODEACT_TRY(ImageInfo info, inspect_image(options.tags[0]));
    result.image_id = info.id;
  }
  if (result.image_id.empty()) {
    return core::internal_error(fmt::format("docker: {}: the build reported no image id", what));
  }
  return result;
}

Status DockerClient::tag_image(const std::string& image, const std::string& repo,
                               const std::string& tag) {
  Call c;
  c.method = "POST";
  c.path = "/images/" + path_escape(image) + "/tag?repo=" + core::url_encode(repo) +
           "&tag=" + core::url_encode(tag);
  c.what = fmt::format("tag image \"{}\" as {}:{}", image, repo, tag);
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));
  (void)r;
  return core::ok_status();
}

Status DockerClient::remove_image(const std::string& image, bool force) {
  Call c;
  c.method = "DELETE";
  c.path = "/images/" + path_escape(image) + "?force=" + bool_param(force);
  c.what = fmt::format("remove image \"{}\"", image);
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));
  (void)r;
  return core::ok_status();
}

Result<std::string> DockerClient::commit_container(const CommitOptions& options) {
  std::string path = "/commit?container=" + core::url_encode(options.container);
  if (!options.repo.empty()) path += "&repo=" + core::url_encode(options.repo);
  if (!options.tag.empty()) path += "&tag=" + core::url_encode(options.tag);
  if (!options.comment.empty()) path += "&comment=" + core::url_encode(options.comment);
  if (!options.author.empty()) path += "&author=" + core::url_encode(options.author);
  path += std::string("&pause=") + bool_param(options.pause);
  for (const auto& change : options.changes) path += "&changes=" + core::url_encode(change);
  CODEACT_TRY(Json j, request_json("POST", path, nullptr,
                                   fmt::format("commit container \"{}\"", options.container)));
  return core::json_string(j, "Id");
}

// ---- containers -------------------------------------------------------------------------------

namespace {

Json container_create_body(const ContainerSpec& spec) {
  Json body = Json::object();
  body["Image"] = spec.image;
  if (!spec.cmd.empty()) body["Cmd"] = spec.cmd;
  if (spec.entrypoint) {
    body["Entrypoint"] = spec.entrypoint->empty() ? std::vector<std::string>{""} : *spec.entrypoint;
  }
  if (!spec.env.empty()) {
    std::vector<std::string> env;
    for (const auto& [k, v] : spec.env) env.push_back(k + "=" + v);
    body["Env"] = env;
  }
  if (!spec.user.empty()) body["User"] = spec.user;
  if (!spec.labels.empty()) body["Labels"] = spec.labels;
  if (!spec.working_dir.empty()) body["WorkingDir"] = spec.working_dir;
  if (!spec.hostname.empty()) body["Hostname"] = spec.hostname;
  body["Tty"] = spec.tty;
  body["OpenStdin"] = spec.open_stdin;
  body["AttachStdout"] = false;
  body["AttachStderr"] = false;
  if (!spec.stop_signal.empty()) body["StopSignal"] = spec.stop_signal;
  if (spec.stop_timeout_seconds) body["StopTimeout"] = *spec.stop_timeout_seconds;
  if (spec.network_mode == "none") body["NetworkDisabled"] = true;

  Json host = Json::object();
  if (!spec.binds.empty()) {
    std::vector<std::string> binds;
    for (const auto& b : spec.binds) {
      binds.push_back(b.host_path + ":" + b.container_path + (b.read_only ? ":ro" : ""));
    }
    host["Binds"] = binds;
  }
  if (!spec.volumes.empty()) {
    Json mounts = Json::array();
    for (const auto& v : spec.volumes) {
      Json m = {{"Type", "volume"},
                {"Source", v.volume},
                {"Target", v.container_path},
                {"ReadOnly", v.read_only}};
      if (v.no_copy) m["VolumeOptions"] = {{"NoCopy", true}};
      mounts.push_back(m);
    }
    host["Mounts"] = mounts;
  }
  if (!spec.tmpfs.empty()) host["Tmpfs"] = spec.tmpfs;
  host["ReadonlyRootfs"] = spec.read_only_rootfs;
  if (!spec.cap_drop.empty()) host["CapDrop"] = spec.cap_drop;
  if (!spec.cap_add.empty()) host["CapAdd"] = spec.cap_add;
  if (!spec.security_opt.empty()) host["SecurityOpt"] = spec.security_opt;
  if (spec.pids_limit) host["PidsLimit"] = *spec.pids_limit;
  if (spec.memory_bytes) host["Memory"] = *spec.memory_bytes;
  if (spec.memory_swap_bytes) host["MemorySwap"] = *spec.memory_swap_bytes;
  if (spec.nano_cpus) host["NanoCpus"] = *spec.nano_cpus;
  if (spec.shm_size_bytes) host["ShmSize"] = *spec.shm_size_bytes;
  if (!spec.network_mode.empty()) host["NetworkMode"] = spec.network_mode;
  if (spec.init) host["Init"] = true;
  if (!spec.extra_hosts.empty()) host["ExtraHosts"] = spec.extra_hosts;
  if (spec.auto_remove) host["AutoRemove"] = true;
  if (!spec.restart_policy.empty()) host["RestartPolicy"] = {{"Name", spec.restart_policy}};
  if (spec.extra_host_config.is_object()) host.merge_patch(spec.extra_host_config);
  body["HostConfig"] = host;
  if (spec.extra_config.is_object()) body.merge_patch(spec.extra_config);
  return body;
}

ContainerInfo container_info_from(const Json& j) {
  ContainerInfo info;
  info.id = core::json_string(j, "Id");
  info.name = core::json_string(j, "Name");
  if (info.name.starts_with("/")) info.name.erase(0, 1);
  info.image = core::json_string(j, "Image");
  info.created = core::json_string(j, "Created");
  info.restart_count = core::json_int(j, "RestartCount");
  Json config = j.value("Config", Json());
  if (config.is_object()) {
    info.config_image = core::json_string(config, "Image");
    info.labels = labels_of(config.value("Labels", Json()));
  }
  Json s = j.value("State", Json());
  if (s.is_object()) {
    ContainerState& st = info.state;
    st.status = core::json_string(s, "Status");
    st.running = core::json_bool(s, "Running");
    st.paused = core::json_bool(s, "Paused");
    st.restarting = core::json_bool(s, "Restarting");
    st.oom_killed = core::json_bool(s, "OOMKilled");
    st.dead = core::json_bool(s, "Dead");
    st.pid = core::json_int(s, "Pid");
    st.exit_code = core::json_int(s, "ExitCode");
    st.error = core::json_string(s, "Error");
    st.started_at = core::json_string(s, "StartedAt");
    st.finished_at = core::json_string(s, "FinishedAt");
    Json health = s.value("Health", Json());
    if (health.is_object()) st.health = core::json_string(health, "Status");
  }
  info.raw = j;
  return info;
}

}  // namespace

Result<std::string> DockerClient::create_container(const ContainerSpec& spec) {
  std::string what =
      spec.name.empty()
          ? fmt::format("create container from image \"{}\"", spec.image)
          : fmt::format("create container \"{}\" from image \"{}\"", spec.name, spec.image);
  if (spec.image.empty()) return core::invalid_argument("docker: " + what + ": no image given");
  std::string path = "/containers/create";
  if (!spec.name.empty()) path += "?name=" + core::url_encode(spec.name);
  Json body = container_create_body(spec);
  CODEACT_TRY(Json j, request_json("POST", path, &body, what));
  for (const auto& w : strings_of(j.value("Warnings", Json()))) {
    core::log().warn("docker: {}: {}", what, w);
  }
  return core::json_string(j, "Id");
}

Status DockerClient::start_container(const std::string& id) {
  Call c;
  c.method = "POST";
  c.path = "/containers/" + path_escape(id) + "/start";
  c.what = fmt::format("start container \"{}\"", id);
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));  // 304: already running, fine
  (void)r;
  return core::ok_status();
}

Status DockerClient::stop_container(const std::string& id, std::chrono::seconds timeout) {
  Call c;
  c.method = "POST";
  c.path = fmt::format("/containers/{}/stop?t={}", path_escape(id), timeout.count());
  c.what = fmt::format("stop container \"{}\"", id);
  c.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout) +
              impl_->options.request_timeout;
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));  // 304: already stopped
  (void)r;
  return core::ok_status();
}

Status DockerClient::kill_container(const std::string& id, const std::string& signal) {
  Call c;
  c.method = "POST";
  c.path = fmt::format("/containers/{}/kill?signal={}", path_escape(id), core::url_encode(signal));
  c.what = fmt::format("kill container \"{}\" with {}", id, signal);
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));
  (void)r;
  return core::ok_status();
}

Status DockerClient::restart_container(const std::string& id, std::chrono::seconds timeout) {
  Call c;
  c.method = "POST";
  c.path = fmt::format("/containers/{}/restart?t={}", path_escape(id), timeout.count());
  c.what = fmt::format("restart container \"{}\"", id);
  c.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout) +
              impl_->options.request_timeout;
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));
  (void)r;
  return core::ok_status();
}

Status DockerClient::remove_container(const std::string& id,
                                      const RemoveContainerOptions& options) {
  Call c;
  c.method = "DELETE";
  c.path = fmt::format("/containers/{}?force={}&v={}", path_escape(id), bool_param(options.force),
                       bool_param(options.volumes));
  c.what = fmt::format("remove container \"{}\"", id);
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));
  (void)r;
  return core::ok_status();
}

Result<ContainerInfo> DockerClient::inspect_container(const std::string& id) {
  CODEACT_TRY(Json j, request_json("GET", "/containers/" + path_escape(id) + "/json", nullptr,
                                   fmt::format("inspect container \"{}\"", id)));
  return container_info_from(j);
}

Result<std::vector<ContainerSummary>> DockerClient::list_containers(
    const ContainerListOptions& options) {
  std::string path = fmt::format("/containers/json?all={}", bool_param(options.all));
  if (!options.filters.empty())
    path += "&filters=" + core::url_encode(filters_json(options.filters));
  CODEACT_TRY(Json j, request_json("GET", path, nullptr, "list containers"));
  std::vector<ContainerSummary> out;
  for (const auto& item : j) {
    ContainerSummary s;
    s.id = core::json_string(item, "Id");
    for (auto name : strings_of(item.value("Names", Json()))) {
      if (name.starts_with("/")) name.erase(0, 1);
      s.names.push_back(name);
    }
    s.image = core::json_string(item, "Image");
    s.state = core::json_string(item, "State");
    s.status = core::json_string(item, "Status");
    s.created = core::json_int(item, "Created");
    s.labels = labels_of(item.value("Labels", Json()));
    out.push_back(std::move(s));
  }
  return out;
}

Result<WaitResult> DockerClient::wait_container(const std::string& id, WaitCondition condition,
                                                std::chrono::milliseconds timeout,
                                                const core::CancelToken* cancel) {
  const char* cond = condition == WaitCondition::kNextExit  ? "next-exit"
                     : condition == WaitCondition::kRemoved ? "removed"
                                                            : "not-running";
  Call c;
  c.method = "POST";
  c.path = fmt::format("/containers/{}/wait?condition={}", path_escape(id), cond);
  c.what = fmt::format("wait for container \"{}\"", id);
  c.timeout = timeout;
  c.cancel = cancel;
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));
  CODEACT_TRY(Json j, core::parse_json(r.body, "Docker wait reply"));
  WaitResult w;
  w.status_code = core::json_int(j, "StatusCode");
  Json err = j.value("Error", Json());
  if (err.is_object()) w.error = core::json_string(err, "Message");
  return w;
}

Result<ContainerOutput> DockerClient::logs(const std::string& id, const LogsOptions& options) {
  Call c;
  c.path =
      fmt::format("/containers/{}/logs?stdout={}&stderr={}&timestamps={}&tail={}", path_escape(id),
                  bool_param(options.stdout_stream), bool_param(options.stderr_stream),
                  bool_param(options.timestamps), core::url_encode(options.tail));
  if (options.since > 0) c.path += fmt::format("&since={}", options.since);
  c.what = fmt::format("read logs of container \"{}\"", id);
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));
  ContainerOutput out;
  demultiplex(r.body, &out.stdout_text, &out.stderr_text);
  return out;
}

Result<ExecResult> DockerClient::exec(const std::string& id, const ExecSpec& spec,
                                      std::chrono::milliseconds timeout) {
  std::string what = fmt::format("exec in container \"{}\"", id);
  Json body = {{"AttachStdin", false}, {"AttachStdout", true}, {"AttachStderr", true},
               {"Tty", false},         {"Cmd", spec.cmd},      {"Privileged", spec.privileged}};
  if (!spec.env.empty()) {
    std::vector<std::string> env;
    for (const auto& [k, v] : spec.env) env.push_back(k + "=" + v);
    body["Env"] = env;
  }
  if (!spec.user.empty()) body["User"] = spec.user;
  if (!spec.working_dir.empty()) body["WorkingDir"] = spec.working_dir;
  CODEACT_TRY(Json created,
              request_json("POST", "/containers/" + path_escape(id) + "/exec", &body, what));
  std::string exec_id = core::json_string(created, "Id");

  Call c;
  c.method = "POST";
  c.path = "/exec/" + exec_id + "/start";
  c.what = what;
  c.body = R"({"Detach":false,"Tty":false})";
  c.timeout = timeout;
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));
  ExecResult result;
  demultiplex(r.body, &result.stdout_text, &result.stderr_text);
  CODEACT_TRY(Json info, request_json("GET", "/exec/" + exec_id + "/json", nullptr, what));
  result.exit_code = core::json_int(info, "ExitCode", -1);
  return result;
}

// A sandbox's whole state (a fork) can be gigabytes.
constexpr std::chrono::milliseconds kArchiveTimeout = std::chrono::minutes(30);

Status DockerClient::put_archive(const std::string& id, const std::string& path, std::string tar) {
  Call c;
  c.method = "PUT";
  c.path = fmt::format("/containers/{}/archive?path={}", path_escape(id), core::url_encode(path));
  c.what = fmt::format("copy files into container \"{}\" at {}", id, path);
  c.timeout = kArchiveTimeout;
  c.content_type = "application/x-tar";
  c.body_size = tar.size();
  c.body = std::move(tar);
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));
  (void)r;
  return core::ok_status();
}

Result<ArchiveResult> DockerClient::get_archive(const std::string& id, const std::string& path) {
  Call c;
  c.path = fmt::format("/containers/{}/archive?path={}", path_escape(id), core::url_encode(path));
  c.what = fmt::format("copy {} out of container \"{}\"", path, id);
  c.timeout = kArchiveTimeout;
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));
  ArchiveResult out;
  out.tar = std::move(r.body);
  std::string stat_header = r.header("x-docker-container-path-stat");
  if (!stat_header.empty()) {
    auto decoded = core::base64_decode(stat_header);
    if (!decoded.ok()) return decoded.error().with_context("X-Docker-Container-Path-Stat");
    auto stat = core::parse_json(*decoded, "X-Docker-Container-Path-Stat");
    if (stat.ok()) {
      out.stat.name = core::json_string(*stat, "name");
      out.stat.size = core::json_int(*stat, "size");
      out.stat.mode = static_cast<uint32_t>(core::json_int(*stat, "mode"));
      out.stat.mtime = core::json_string(*stat, "mtime");
      out.stat.link_target = core::json_string(*stat, "linkTarget");
    }
  }
  return out;
}

Result<ContainerStats> DockerClient::stats(const std::string& id) {
  CODEACT_TRY(Json j,
              request_json("GET", "/containers/" + path_escape(id) + "/stats?stream=0&one-shot=1",
                           nullptr, fmt::format("read stats of container \"{}\"", id)));
  ContainerStats s;
  Json mem = j.value("memory_stats", Json());
  if (mem.is_object()) {
    s.memory_usage = core::json_int(mem, "usage");
    s.memory_limit = core::json_int(mem, "limit");
    Json detail = mem.value("stats", Json());
    if (detail.is_object()) {
      // What `docker stats` shows: usage minus page cache (cgroup v1) / inactive files (v2).
      int64_t cache = detail.contains("total_inactive_file")
                          ? core::json_int(detail, "total_inactive_file")
                          : core::json_int(detail, "inactive_file");
      if (cache > 0 && cache < s.memory_usage) s.memory_usage -= cache;
    }
  }
  Json pids = j.value("pids_stats", Json());
  if (pids.is_object()) s.pids = core::json_int(pids, "current");
  Json cpu = j.value("cpu_stats", Json());
  if (cpu.is_object() && cpu.contains("cpu_usage")) {
    s.cpu_total_ns = static_cast<uint64_t>(core::json_int(cpu["cpu_usage"], "total_usage"));
  }
  s.raw = j;
  return s;
}

// ---- volumes ----------------------------------------------------------------------------------

namespace {

VolumeInfo volume_info_from(const Json& j) {
  VolumeInfo v;
  v.name = core::json_string(j, "Name");
  v.driver = core::json_string(j, "Driver");
  v.mountpoint = core::json_string(j, "Mountpoint");
  v.created_at = core::json_string(j, "CreatedAt");
  v.labels = labels_of(j.value("Labels", Json()));
  v.options = labels_of(j.value("Options", Json()));
  v.raw = j;
  return v;
}

}  // namespace

Result<VolumeInfo> DockerClient::create_volume(const VolumeSpec& spec) {
  Json body = {{"Name", spec.name}, {"Driver", spec.driver.empty() ? "local" : spec.driver}};
  if (!spec.driver_opts.empty()) body["DriverOpts"] = spec.driver_opts;
  if (!spec.labels.empty()) body["Labels"] = spec.labels;
  CODEACT_TRY(Json j, request_json("POST", "/volumes/create", &body,
                                   fmt::format("create volume \"{}\"", spec.name)));
  return volume_info_from(j);
}

Result<VolumeInfo> DockerClient::inspect_volume(const std::string& name) {
  CODEACT_TRY(Json j, request_json("GET", "/volumes/" + path_escape(name), nullptr,
                                   fmt::format("inspect volume \"{}\"", name)));
  return volume_info_from(j);
}

Result<std::vector<VolumeInfo>> DockerClient::list_volumes(const Filters& filters) {
  std::string path = "/volumes";
  if (!filters.empty()) path += "?filters=" + core::url_encode(filters_json(filters));
  CODEACT_TRY(Json j, request_json("GET", path, nullptr, "list volumes"));
  std::vector<VolumeInfo> out;
  Json volumes = j.value("Volumes", Json());
  if (volumes.is_array()) {
    for (const auto& v : volumes) out.push_back(volume_info_from(v));
  }
  return out;
}

Status DockerClient::remove_volume(const std::string& name, bool force) {
  Call c;
  c.method = "DELETE";
  c.path = fmt::format("/volumes/{}?force={}", path_escape(name), bool_param(force));
  c.what = fmt::format("remove volume \"{}\"", name);
  CODEACT_TRY(HttpResponse r, impl_->call(*this, c));
  (void)r;
  return core::ok_status();
}

}  // namespace codeact::sandbox
