// DockerClient against the real engine. The containers run a tiny image imported here from the
// host's static busybox (scripts/deps/sandbox.apt: busybox-static), which also exercises import.
// Everything created is labelled io.codeact.test=docker_client and removed.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <random>
#include <thread>

#include "codeact/sandbox/docker_client.hpp"
#include "codeact/sandbox/tar_archive.hpp"

namespace codeact::sandbox {
namespace {

using core::Code;

constexpr const char* kTestLabel = "io.codeact.test";
constexpr const char* kTestValue = "docker_client";
constexpr const char* kBusybox = "codeact-itest-busybox:1";

std::string unique(const std::string& prefix) {
  std::random_device rd;
  return prefix + "-" + std::to_string(rd() % 1000000000);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string binary_blob(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += static_cast<char>((i * 37 + 11) % 256);
  return s;
}

class DockerClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto client = DockerClient::create();
    ASSERT_TRUE(client.ok()) << client.error().to_string();
    docker_ = *client;
    ASSERT_TRUE(docker_->ping().ok()) << docker_->ping().error().to_string();
    cleanup_labelled();
    if (docker_->inspect_image(kBusybox).ok()) return;
    std::string busybox = read_file("/bin/busybox");
    ASSERT_FALSE(busybox.empty()) << "/bin/busybox missing: apt-get install busybox-static";
    TarWriter tar;
    ASSERT_TRUE(tar.add_directory("bin").ok());
    ASSERT_TRUE(tar.add_file("bin/busybox", busybox, 0755).ok());
    for (const char* tool : {"sh", "sleep", "cat", "id", "echo", "ls", "mkdir", "touch", "stat",
                             "true", "false", "env", "rm"}) {
      ASSERT_TRUE(tar.add_symlink(std::string("bin/") + tool, "busybox").ok());
    }
    ASSERT_TRUE(tar.add_directory("tmp", 01777).ok());
    ASSERT_TRUE(tar.add_directory("data", 0755, 1000, 1000).ok());
    ASSERT_TRUE(tar.add_directory("etc").ok());
    std::string archive = tar.finish();
    size_t offset = 0;
    ImportImageOptions import;
    auto [repo, tag] = split_image_reference(kBusybox);
    import.repo = repo;
    import.tag = tag;
    import.changes = {"ENV PATH=/bin", "CMD [\"sh\"]", "WORKDIR /tmp"};
    import.source = [&](char* buffer, size_t max) {
      size_t n = std::min(max, archive.size() - offset);
    std::memcpy(buffer, archive.data() + offset, n);
    offset += n;
    return n;
  };
  auto id = docker_->import_image(import);
  ASSERT_TRUE(id.ok()) << id.error().to_string();
  EXPECT_EQ(id->rfind("sha256:", 0), 0u) << *id;
}

static void
cleanup_labelled() {
  Filters f = {{"label", {std::string(kTestLabel) + "=" + kTestValue}}};
  auto containers = docker_->list_containers({.all = true, .filters = f});
  if (containers.ok()) {
    for (const auto& c : *containers) (void)docker_->remove_container(c.id, {.force = true});
  }
  auto volumes = docker_->list_volumes(f);
  if (volumes.ok()) {
    for (const auto& v : *volumes) (void)docker_->remove_volume(v.name, true);
  }
}

void TearDown() override {
  for (const auto& id : containers_) (void)docker_->remove_container(id, {.force = true});
  for (const auto& v : volumes_) (void)docker_->remove_volume(v, true);
  for (const auto& i : images_) (void)docker_->remove_image(i, true);
}

ContainerSpec base_spec(std::vector<std::string> cmd) {
  ContainerSpec spec;
  spec.name = unique("codeact-itest");
  spec.image = kBusybox;
  spec.cmd = std::move(cmd);
  spec.labels = {{kTestLabel, kTestValue}};
  return spec;
}

std::string create(const ContainerSpec& spec) {
  auto id = docker_->create_container(spec);
  EXPECT_TRUE(id.ok()) << id.error().to_string();
  if (id.ok()) containers_.push_back(*id);
  return id.ok() ? *id : "";
}

static inline std::shared_ptr<DockerClient> docker_;
std::vector<std::string> containers_, volumes_, images_;
};  // namespace

TEST_F(DockerClientTest, NegotiatesApiVersionWithTheEngine) {
  auto v = docker_->version();
  ASSERT_TRUE(v.ok()) << v.error().to_string();
  EXPECT_FALSE(v->version.empty());
  auto server = v->api_version;
  // This client speaks up to 1.43; the engine here (Docker 20.10) speaks 1.41.
  std::string expected = std::stod(server) < 1.43 ? server : "1.43";
  EXPECT_EQ(v->negotiated_api_version, expected);
  EXPECT_EQ(*docker_->api_version(), expected);
}

TEST_F(DockerClientTest, HardenedContainerLifecycleShowsEveryHardeningFieldInInspect) {
  ContainerSpec spec = base_spec({"sleep", "300"});
  spec.user = "1000:1000";
  spec.env = {{"CODEACT_SANDBOX_ID", "abc"}};
  spec.working_dir = "/tmp";
  spec.read_only_rootfs = true;
  spec.tmpfs = {{"/tmp", "rw,size=16m,mode=1777"}};
  spec.cap_drop = {"ALL"};
  spec.security_opt = {"no-new-privileges"};
  spec.pids_limit = 64;
  spec.memory_bytes = 128LL << 20;
  spec.nano_cpus = 500'000'000;
  spec.network_mode = "none";
  spec.init = true;
  spec.extra_hosts = {"example.test:127.0.0.1"};
  std::string id = create(spec);
  ASSERT_FALSE(id.empty());

  auto created = docker_->inspect_container(id);
  ASSERT_TRUE(created.ok()) << created.error().to_string();
  EXPECT_EQ(created->state.status, "created");
  EXPECT_EQ(created->name, spec.name);
  EXPECT_EQ(created->labels[kTestLabel], kTestValue);
  const Json& host = created->raw["HostConfig"];
  EXPECT_EQ(created->raw["Config"]["User"], "1000:1000");
  EXPECT_EQ(host["CapDrop"], Json::array({"ALL"}));
  EXPECT_EQ(host["SecurityOpt"], Json::array({"no-new-privileges"}));
  EXPECT_EQ(host["ReadonlyRootfs"], true);
  EXPECT_EQ(host["Tmpfs"]["/tmp"], "rw,size=16m,mode=1777");
  EXPECT_EQ(host["PidsLimit"], 64);
  EXPECT_EQ(host["Memory"], 128LL << 20);
  EXPECT_EQ(host["NanoCpus"], 500'000'000);
  EXPECT_EQ(host["NetworkMode"], "none");
  EXPECT_EQ(host["Init"], true);
  EXPECT_EQ(host["ExtraHosts"], Json::array({"example.test:127.0.0.1"}));

  ASSERT_TRUE(docker_->start_container(id).ok());
  ASSERT_TRUE(docker_->start_container(id).ok()) << "starting a running container is a no-op";
  auto running = docker_->inspect_container(id);
  ASSERT_TRUE(running.ok());
  EXPECT_TRUE(running->state.running);
  EXPECT_GT(running->state.pid, 0);

  auto who = docker_->exec(id, {.cmd = {"id", "-u"}});
  ASSERT_TRUE(who.ok()) << who.error().to_string();
  EXPECT_EQ(who->stdout_text, "1000\n");
  auto ro = docker_->exec(id, {.cmd = {"touch", "/etc/x"}});
  ASSERT_TRUE(ro.ok());
  EXPECT_NE(ro->exit_code, 0) << "the root file system must be read-only";
  EXPECT_NE(ro->stderr_text.find("Read-only"), std::string::npos) << ro->stderr_text;

  auto stats = docker_->stats(id);
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  EXPECT_GT(stats->memory_usage, 0);
  EXPECT_EQ(stats->memory_limit, 128LL << 20);
  EXPECT_GE(stats->pids, 1);

  ASSERT_TRUE(docker_->kill_container(id, "SIGKILL").ok());
  auto waited = docker_->wait_container(id, WaitCondition::kNotRunning, std::chrono::seconds(30));
  ASSERT_TRUE(waited.ok()) << waited.error().to_string();
  EXPECT_EQ(waited->status_code, 137);
  auto exited = docker_->inspect_container(id);
  ASSERT_TRUE(exited.ok());
  EXPECT_FALSE(exited->state.running);
  EXPECT_EQ(exited->state.status, "exited");
  EXPECT_EQ(exited->state.exit_code, 137);
  EXPECT_FALSE(exited->state.oom_killed);

  auto kill_again = docker_->kill_container(id);
  ASSERT_FALSE(kill_again.ok());
  EXPECT_EQ(kill_again.error().code(), Code::kFailedPrecondition);

  ASSERT_TRUE(docker_->restart_container(id, std::chrono::seconds(1)).ok());
  EXPECT_TRUE(docker_->inspect_container(id)->state.running);
  ASSERT_TRUE(docker_->stop_container(id, std::chrono::seconds(1)).ok());
  EXPECT_FALSE(docker_->inspect_container(id)->state.running);
  ASSERT_TRUE(docker_->stop_container(id, std::chrono::seconds(1)).ok()) << "already stopped";

  ASSERT_TRUE(docker_->remove_container(id, {.force = true, .volumes = true}).ok());
  auto gone = docker_->inspect_container(id);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code(), Code::kNotFound);
}

TEST_F(DockerClientTest, ArchivePutAndGetRoundTripBinaryFilesThroughAVolume) {
  std::string volume = unique("codeact-itest-vol");
  ASSERT_TRUE(docker_->create_volume({.name = volume, .labels = {{kTestLabel, kTestValue}}}).ok());
  volumes_.push_back(volume);
  ContainerSpec spec = base_spec({"sleep", "300"});
  spec.user = "1000:1000";
  spec.read_only_rootfs = true;
  spec.volumes = {{volume, "/data"}};
  std::string id = create(spec);
  ASSERT_TRUE(docker_->start_container(id).ok());

  const std::string blob = binary_blob(300000) + std::string("\0\0\xff", 3);
  const std::string long_name = std::string(130, 'L') + ".bin";
  TarWriter tar;
  ASSERT_TRUE(tar.add_directory("sub", 0755, 1000, 1000).ok());
  ASSERT_TRUE(tar.add_file("sub/blob.bin", blob, 0600, 1000, 1000).ok());
  ASSERT_TRUE(tar.add_file("sub/" + long_name, "long", 0644, 1000, 1000).ok());
  ASSERT_TRUE(docker_->put_archive(id, "/data", tar.finish()).ok());

  auto listed = docker_->exec(id, {.cmd = {"stat", "-c", "%s %u %a", "/data/sub/blob.bin"}});
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->stdout_text, std::to_string(blob.size()) + " 1000 600\n");

  auto got = docker_->get_archive(id, "/data/sub");
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  EXPECT_EQ(got->stat.name, "sub");
  EXPECT_TRUE(got->stat.is_dir());
  auto entries = read_tar(got->tar);
  ASSERT_TRUE(entries.ok()) << entries.error().to_string();
  std::map<std::string, TarEntry> by_path;
  for (auto& e : *entries) by_path[e.path] = e;
  ASSERT_TRUE(by_path.count("sub/blob.bin"));
  EXPECT_EQ(by_path["sub/blob.bin"].data, blob);
  EXPECT_EQ(by_path["sub/blob.bin"].uid, 1000u);
  ASSERT_TRUE(by_path.count("sub/" + long_name));
  EXPECT_EQ(by_path["sub/" + long_name].data, "long");

  auto missing = docker_->get_archive(id, "/data/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), Code::kNotFound);
  auto readonly = docker_->put_archive(id, "/tmp", *write_tar({{.path = "x", .data = "x"}}));
  EXPECT_FALSE(readonly.ok()) << "a read-only root file system refuses archives";
}

TEST_F(DockerClientTest, LogsAreDemultiplexedIntoStdoutAndStderr) {
  std::string id = create(base_spec({"sh", "-c", "echo out1; echo err1 >&2; echo out2; exit 3"}));
  ASSERT_TRUE(docker_->start_container(id).ok());
  auto waited = docker_->wait_container(id, WaitCondition::kNotRunning, std::chrono::seconds(30));
  ASSERT_TRUE(waited.ok());
  EXPECT_EQ(waited->status_code, 3);
  auto logs = docker_->logs(id);
  ASSERT_TRUE(logs.ok()) << logs.error().to_string();
  EXPECT_EQ(logs->stdout_text, "out1\nout2\n");
  EXPECT_EQ(logs->stderr_text, "err1\n");
}

TEST_F(DockerClientTest, VolumesAndContainersAreFoundByLabel) {
  std::string mine = unique("codeact-itest-vol");
  std::string other = unique("codeact-itest-vol");
  std::string run_label = unique("run");
  auto created = docker_->create_volume(
      {.name = mine, .labels = {{kTestLabel, kTestValue}, {"io.codeact.itest-run", run_label}}});
  ASSERT_TRUE(created.ok()) << created.error().to_string();
  volumes_.push_back(mine);
  EXPECT_EQ(created->name, mine);
  EXPECT_EQ(created->driver, "local");
  ASSERT_TRUE(docker_->create_volume({.name = other, .labels = {{kTestLabel, kTestValue}}}).ok());
  volumes_.push_back(other);

  auto listed = docker_->list_volumes({{"label", {"io.codeact.itest-run=" + run_label}}});
  ASSERT_TRUE(listed.ok()) << listed.error().to_string();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].name, mine);
  EXPECT_EQ((*listed)[0].labels["io.codeact.itest-run"], run_label);
  auto inspected = docker_->inspect_volume(mine);
  ASSERT_TRUE(inspected.ok());
  EXPECT_FALSE(inspected->mountpoint.empty());

  // A volume in use cannot be removed without stopping its container.
  ContainerSpec spec = base_spec({"sleep", "300"});
  spec.labels["io.codeact.itest-run"] = run_label;
  spec.volumes = {{mine, "/data"}};
  std::string id = create(spec);
  auto containers = docker_->list_containers(
      {.all = true, .filters = {{"label", {"io.codeact.itest-run=" + run_label}}}});
  ASSERT_TRUE(containers.ok());
  ASSERT_EQ(containers->size(), 1u);
  EXPECT_EQ((*containers)[0].id, id);
  EXPECT_EQ((*containers)[0].names[0], spec.name);
  EXPECT_EQ((*containers)[0].state, "created");
  auto busy = docker_->remove_volume(mine);
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().code(), Code::kFailedPrecondition) << busy.error().to_string();

  ASSERT_TRUE(docker_->remove_container(id, {.force = true}).ok());
  ASSERT_TRUE(docker_->remove_volume(mine).ok());
  auto gone = docker_->inspect_volume(mine);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code(), Code::kNotFound);
}

TEST_F(DockerClientTest, MissingImageIsNotFoundWithTheBuildHint) {
  ContainerSpec spec = base_spec({"true"});
  spec.image = "codeact-sandbox:000000000000";
  auto created = docker_->create_container(spec);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.error().code(), Code::kNotFound);
  EXPECT_NE(created.error().message().find("codeact-sandbox:000000000000"), std::string::npos);
  EXPECT_NE(created.error().message().find("run `codeact image build`"), std::string::npos)
      << created.error().message();
  auto inspected = docker_->inspect_image("codeact-sandbox:000000000000");
  ASSERT_FALSE(inspected.ok());
  EXPECT_EQ(inspected.error().code(), Code::kNotFound);
}

TEST_F(DockerClientTest, DuplicateNameIsAlreadyExists) {
  ContainerSpec spec = base_spec({"true"});
  create(spec);
  auto again = docker_->create_container(spec);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code(), Code::kAlreadyExists);
  EXPECT_NE(again.error().message().find(spec.name), std::string::npos);
}

TEST_F(DockerClientTest, UnreachableEngineIsUnavailableWithTheFix) {
  const char* saved = std::getenv("DOCKER_HOST");
  std::string saved_value = saved ? saved : "";
  ::setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock", 1);
  auto client = DockerClient::create();
  if (saved)
    ::setenv("DOCKER_HOST", saved_value.c_str(), 1);
  else
    ::unsetenv("DOCKER_HOST");
  ASSERT_TRUE(client.ok());
  EXPECT_EQ((*client)->host(), "unix:///nonexistent/docker.sock");
  auto start = std::chrono::steady_clock::now();
  auto listed = (*client)->list_containers();
  ASSERT_FALSE(listed.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  const auto& e = listed.error();
  EXPECT_EQ(e.code(), Code::kUnavailable);
  EXPECT_EQ(e.message(),
            "cannot reach the Docker engine at unix:///nonexistent/docker.sock: the socket "
            "/nonexistent/docker.sock does not exist. Is it running? Try `systemctl start "
            "docker` or set DOCKER_HOST.");
  EXPECT_EQ(e.message().find("curl"), std::string::npos);
}

TEST_F(DockerClientTest, BuildStreamsProgressAndReportsAFailingStep) {
  std::string tag = unique("codeact-itest-build") + ":1";
  TarWriter context;
  ASSERT_TRUE(context
                  .add_file("Dockerfile", std::string("FROM ") + kBusybox +
                                              "\nARG GREETING\nRUN echo \"$GREETING\" > "
                                              "/greeting.txt && echo built-step-output\n")
                  .ok());
  std::vector<std::string> lines;
  BuildImageOptions options;
  options.tags = {tag};
  options.build_args = {{"GREETING", "hello from build"}};
  options.labels = {{kTestLabel, kTestValue}};
  options.network_mode = "none";
  options.context_tar = context.finish();
  options.progress = [&](std::string_view l) { lines.emplace_back(l); };
  auto built = docker_->build_image(options);
  ASSERT_TRUE(built.ok()) << built.error().to_string();
  images_.push_back(tag);
  EXPECT_EQ(built->image_id.rfind("sha256:", 0), 0u);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "built-step-output"), lines.end());
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.rfind("Step 1/", 0) == 0 &&
           l.find(": FROM codeact-itest-busybox:1") != std::string::npos;
  }));
  auto info = docker_->inspect_image(tag);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->labels[kTestLabel], kTestValue);

  // Commit a container made from it, with a change, and tag the result.
  std::string id = create(base_spec({"cat", "/greeting.txt"}));
  std::string committed_tag = unique("codeact-itest-commit");
  auto committed = docker_->commit_container(
      {.container = id, .repo = committed_tag, .tag = "v1", .changes = {"ENV FOO=bar"}});
  ASSERT_TRUE(committed.ok()) << committed.error().to_string();
  images_.push_back(committed_tag + ":v1");
  auto committed_info = docker_->inspect_image(committed_tag + ":v1");
  ASSERT_TRUE(committed_info.ok());
  EXPECT_NE(std::find(committed_info->env.begin(), committed_info->env.end(), "FOO=bar"),
            committed_info->env.end());
  ASSERT_TRUE(docker_->tag_image(committed_tag + ":v1", committed_tag, "v2").ok());
  images_.push_back(committed_tag + ":v2");
  auto listed = docker_->list_images({.filters = {{"reference", {committed_tag}}}});
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ(listed->front().repo_tags.size(), 2u);

  TarWriter failing;
  ASSERT_TRUE(failing
                  .add_file("Dockerfile", std::string("FROM ") + kBusybox +
                                              "\nRUN echo about-to-fail && exit 7\n")
                  .ok());
  lines.clear();
  options.tags = {unique("codeact-itest-fail") + ":1"};
  options.context_tar = failing.finish();
  auto failed = docker_->build_image(options);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code(), Code::kFailedPrecondition);
  EXPECT_NE(failed.error().message().find("non-zero code: 7"), std::string::npos)
      << failed.error().message();
  EXPECT_NE(std::find(lines.begin(), lines.end(), "about-to-fail"), lines.end());
}

TEST_F(DockerClientTest, ConcurrentCallsFromManyThreads) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 5; ++j) {
        if (docker_->list_containers({.all = true}).ok() && docker_->ping().ok()) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 40);
}

}  // namespace codeact::sandbox
}  // namespace codeact::sandbox
