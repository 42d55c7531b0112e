// DockerClient's side of the protocol without a daemon: version negotiation, path prefixes, how
// the engine's error replies and streams become values. A scripted HttpTransport plays the engine.
#include <gtest/gtest.h>

#include <deque>
#include <mutex>

#include "codeact/sandbox/docker_client.hpp"
#include "codeact/sandbox/sandbox_manager.hpp"
#include "docker_stream_internal.hpp"

namespace codeact::sandbox {
namespace {

using core::Code;

class ScriptedEngine : public core::HttpTransport {
 public:
  struct Reply {
    int status;
    std::string body;
  };
  explicit ScriptedEngine(std::string api_version) : api_version_(std::move(api_version)) {}

  void expect(std::string path_suffix, Reply reply) {
    std::lock_guard<std::mutex> lock(mu_);
    script_.push_back({std::move(path_suffix), std::move(reply)});
  }

  core::Result<core::HttpResponse> send(const core::HttpRequest& request) override {
    std::lock_guard<std::mutex> lock(mu_);
    requests.push_back(request.method + " " + request.url);
    bodies.push_back(request.body);
    sockets.push_back(request.unix_socket);
    core::HttpResponse response;
    if (request.url == "http://localhost/_ping") {
      response.status = 200;
      response.headers.emplace_back("api-version", api_version_);
      response.body = "OK";
    } else if (request.url == "http://localhost/version") {
      response.status = 200;
      response.body = R"({"Version":"99.0","ApiVersion":")" + api_version_ +
                      R"(","MinAPIVersion":"1.12","Os":"linux","Arch":"amd64"})";
    } else if (!script_.empty()) {
      auto [suffix, reply] = script_.front();
      script_.pop_front();
      EXPECT_NE(request.url.find(suffix), std::string::npos) << request.url;
      response.status = reply.status;
      if (request.on_body) {
        // Deliver in awkward pieces, like a network does.
        for (size_t i = 0; i < reply.body.size(); i += 7) {
          request.on_body(std::string_view(reply.body).substr(i, 7));
        }
      } else {
        response.body = reply.body;
      }
    } else {
      ADD_FAILURE() << "unexpected request " << request.url;
      response.status = 500;
    }
    return response;
  }

  std::vector<std::string> requests;
  std::vector<std::string> bodies;
  std::vector<std::string> sockets;

 private:
  std::mutex mu_;
  std::string api_version_;
  std::deque<std::pair<std::string, Reply>> script_;
};

std::shared_ptr<DockerClient> client_for(std::shared_ptr<ScriptedEngine> engine) {
  DockerClientOptions options;
  options.host = "unix:///tmp/fake-docker.sock";
  options.transport = engine;
  auto client = DockerClient::create(options);
  EXPECT_TRUE(client.ok());
  return *client;
}

TEST(DockerProtocol, NegotiatesTheLowerOfServerAndClientVersions) {
  auto old_engine = std::make_shared<ScriptedEngine>("1.41");
  old_engine->expect("/v1.41/containers/json", {200, "[]"});
  auto old_client = client_for(old_engine);
  ASSERT_TRUE(old_client->list_containers().ok());
  EXPECT_EQ(*old_client->api_version(), "1.41");
  EXPECT_EQ(old_engine->sockets.back(), "/tmp/fake-docker.sock");

  auto new_engine = std::make_shared<ScriptedEngine>("1.47");
  new_engine->expect("/v1.43/volumes", {200, R"({"Volumes":[]})"});
  auto new_client = client_for(new_engine);
  ASSERT_TRUE(new_client->list_volumes().ok());
  EXPECT_EQ(*new_client->api_version(), "1.43");
  // Negotiated once, not per call.
  new_engine->expect("/v1.43/volumes", {200, R"({"Volumes":[]})"});
  ASSERT_TRUE(new_client->list_volumes().ok());
  EXPECT_EQ(std::count(new_engine->requests.begin(), new_engine->requests.end(),
                       "GET http://localhost/version"),
            1);
}

// A CLI command is a ping and a call or two: the ping's Api-Version header settles the version,
// with no GET /version.
TEST(DockerProtocol, APingNegotiatesFromTheEnginesApiVersionHeader) {
  auto engine = std::make_shared<ScriptedEngine>("1.41");
  engine->expect("/v1.41/containers/json", {200, "[]"});
  auto client = client_for(engine);
  ASSERT_TRUE(client->ping().ok());
  ASSERT_TRUE(client->list_containers().ok());
  EXPECT_EQ(engine->requests,
            (std::vector<std::string>{"GET http://localhost/_ping",
                                      "GET http://localhost/v1.41/containers/json?all=1"}));

  auto old_engine = std::make_shared<ScriptedEngine>("1.30");
  auto pinged = client_for(old_engine)->ping();
  ASSERT_FALSE(pinged.ok());
  EXPECT_EQ(pinged.error().code(), Code::kFailedPrecondition);
  EXPECT_NE(pinged.error().message().find("speaks API 1.30; codeact needs API 1.40"),
            std::string::npos)
      << pinged.error().message();
}

// The volume the seed's NFS settings ask Docker for (these machines cannot mount NFS, so the
// request is what is checked): the local driver with the export as an nfs mount.
TEST(DockerProtocol, AnNfsVolumeIsRequestedWithTheLocalDriversNfsOptions) {
  auto engine = std::make_shared<ScriptedEngine>("1.41");
  engine->expect("/v1.41/volumes/create",
                 {201, R"({"Name":"workflow-abc","Driver":"local","Mountpoint":"/x"})"});
  auto docker = client_for(engine);
  SandboxManagerOptions o;
  o.data_dir = "/tmp/codeact-protocol-test";
  o.env = [](const std::string& k) -> std::optional<std::string> {
    if (k == "VOLUME_DRIVER") return "nfs";
    if (k == "NFS_SERVER") return "10.0.0.5";
    if (k == "NFS_PATH") return "/exports/codeact";
    return std::nullopt;
  };
  SandboxManager manager(docker, o);
  ASSERT_TRUE(docker->create_volume(manager.volume_spec("abc")).ok());
  auto body = core::Json::parse(engine->bodies.back());
  EXPECT_EQ(body["Name"], "workflow-abc");
  EXPECT_EQ(body["Driver"], "local");
  EXPECT_EQ(body["DriverOpts"], (core::Json{{"type", "nfs"},
                                            {"o", "addr=10.0.0.5,rw,nfsvers=4"},
                                            {"device", ":/exports/codeact"}}));
  EXPECT_EQ(body["Labels"]["io.codeact.sandbox.id"], "abc");
}

TEST(DockerProtocol, RefusesEnginesOlderThanApi140) {
  auto engine = std::make_shared<ScriptedEngine>("1.30");
  auto version = client_for(engine)->version();
  ASSERT_FALSE(version.ok());
  EXPECT_EQ(version.error().code(), Code::kFailedPrecondition);
  EXPECT_NE(version.error().message().find("1.40"), std::string::npos);
}

TEST(DockerProtocol, ErrorRepliesMapToCanonicalCodesWithTheDaemonMessage) {
  auto engine = std::make_shared<ScriptedEngine>("1.41");
  auto client = client_for(engine);
  engine->expect("/containers/create",
                 {404, R"({"message":"No such image: codeact-sandbox:0123456789ab"})"});
  ContainerSpec spec;
  spec.image = "codeact-sandbox:0123456789ab";
  auto created = client->create_container(spec);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.error().code(), Code::kNotFound);
  EXPECT_NE(created.error().message().find("No such image: codeact-sandbox:0123456789ab"),
            std::string::npos);
  EXPECT_NE(created.error().message().find("run `codeact image build`"), std::string::npos);

  engine->expect("/containers/create",
                 {409, R"({"message":"Conflict. The container name \"/x\" is already in use"})"});
  spec.name = "x";
  EXPECT_EQ(client->create_container(spec).error().code(), Code::kAlreadyExists);

  engine->expect("/kill", {409, R"({"message":"Container abc is not running"})"});
  auto killed = client->kill_container("abc");
  EXPECT_EQ(killed.error().code(), Code::kFailedPrecondition);
  EXPECT_NE(killed.error().message().find("is not running"), std::string::npos);

  engine->expect("/volumes/create", {400, R"({"message":"bad driver option"})"});
  EXPECT_EQ(client->create_volume({}).error().code(), Code::kInvalidArgument);

  engine->expect("/containers/abc/json", {500, "plain text failure"});
  auto inspected = client->inspect_container("abc");
  EXPECT_EQ(inspected.error().code(), Code::kInternal);
  EXPECT_NE(inspected.error().message().find("plain text failure"), std::string::npos);
}

TEST(DockerProtocol, BuildStreamsLinesAndTurnsStreamErrorsIntoErrors) {
  auto engine = std::make_shared<ScriptedEngine>("1.41");
  auto client = client_for(engine);
  engine->expect("/build?", {200,
                             "{\"stream\":\"Step 1/2 : FROM x\\n\"}\r\n"
                             "{\"stream\":\" ---> abc\\n\"}\r\n"
                             "{\"stream\":\"Step 2/2 : RUN false\\n\"}\r\n"
                             "{\"errorDetail\":{\"code\":1,\"message\":\"The command '/bin/sh -c "
                             "false' returned a non-zero code: 1\"},\"error\":\"The command "
                             "'/bin/sh -c false' returned a non-zero code: 1\"}\r\n"});
  std::vector<std::string> lines;
  BuildImageOptions options;
  options.tags = {"t:1"};
  options.context_tar = "tar";
  options.progress = [&](std::string_view l) { lines.emplace_back(l); };
  auto built = client->build_image(options);
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.error().code(), Code::kFailedPrecondition);
  EXPECT_NE(built.error().message().find("returned a non-zero code: 1"), std::string::npos);
  EXPECT_EQ(lines,
            (std::vector<std::string>{"Step 1/2 : FROM x", " ---> abc", "Step 2/2 : RUN false"}));
  EXPECT_NE(engine->requests.back().find("t=t%3A1"), std::string::npos);

  engine->expect("/build?", {200,
                             "{\"stream\":\"Step 1/1 : FROM x\\n\"}\r\n"
                             "{\"aux\":{\"ID\":\"sha256:feed\"}}\r\n"
                             "{\"stream\":\"Successfully built feed\\n\"}\r\n"});
  auto ok = client->build_image(options);
  ASSERT_TRUE(ok.ok()) << ok.error().to_string();
  EXPECT_EQ(ok->image_id, "sha256:feed");
}

TEST(DockerProtocol, OnlyUnixSocketHostsAreAccepted) {
  EXPECT_EQ(*docker_socket_path("unix:///var/run/docker.sock"), "/var/run/docker.sock");
  auto tcp = docker_socket_path("tcp://10.0.0.1:2375");
  ASSERT_FALSE(tcp.ok());
  EXPECT_EQ(tcp.error().code(), Code::kInvalidArgument);
  EXPECT_NE(tcp.error().message().find("unix://"), std::string::npos);
  DockerClientOptions options;
  options.host = "tcp://127.0.0.1:2375";
  EXPECT_FALSE(DockerClient::create(options).ok());
}

TEST(DockerProtocol, SplitsImageReferences) {
  EXPECT_EQ(split_image_reference("codeact-sandbox:abc"),
            std::make_pair(std::string("codeact-sandbox"), std::string("abc")));
  EXPECT_EQ(split_image_reference("registry:5000/debian"),
            std::make_pair(std::string("registry:5000/debian"), std::string()));
  EXPECT_EQ(split_image_reference("debian@sha256:00"),
            std::make_pair(std::string("debian"), std::string("@sha256:00")));
}

TEST(DockerStreams, DemultiplexesStdoutAndStderrFrames) {
  auto frame = [](char stream, std::string payload) {
    std::string f = {stream, 0, 0, 0};
    uint32_t n = static_cast<uint32_t>(payload.size());
    f += static_cast<char>(n >> 24);
    f += static_cast<char>(n >> 16);
    f += static_cast<char>(n >> 8);
    f += static_cast<char>(n);
    return f + payload;
  };
  std::string out, err;
  demultiplex(frame(1, "hello ") + frame(2, "oops\n") + frame(1, std::string("wor\0ld", 6)), &out,
              &err);
  EXPECT_EQ(out, std::string("hello wor\0ld", 12));
  EXPECT_EQ(err, "oops\n");
  std::string tty_out, tty_err;
  demultiplex("plain tty output\n", &tty_out, &tty_err);
  EXPECT_EQ(tty_out, "plain tty output\n");
  EXPECT_EQ(tty_err, "");
}

TEST(DockerStreams, JsonMessagesSplitAcrossChunks) {
  std::vector<std::string> statuses;
  JsonMessageStream stream([&](const core::Json& m) { statuses.push_back(m.value("status", "")); });
  std::string data = "{\"status\":\"a\"}\r\n{\"status\":\"b\"}\r\n{\"status\":\"c\"}";
  for (char c : data) stream.feed(std::string_view(&c, 1));
  stream.finish();
  EXPECT_EQ(statuses, (std::vector<std::string>{"a", "b", "c"}));
}

}  // namespace
}  // namespace codeact::sandbox
