// The real sandbox image on the real engine: built (or found), and a hardened container made from
// it can do what the agent's code needs. The first run here may build the image (minutes).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "codeact/sandbox/docker_client.hpp"
#include "codeact/sandbox/image_builder.hpp"

namespace codeact::sandbox {
namespace {

constexpr const char* kTestLabel = "io.codeact.test";

std::string unique(const std::string& prefix) {
  std::random_device rd;
  return prefix + "-" + std::to_string(rd() % 1000000000);
}

class ImageBuilderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto client = DockerClient::create();
    ASSERT_TRUE(client.ok()) << client.error().to_string();
    docker_ = *client;
    ImageBuilderOptions options;
    auto start = std::chrono::steady_clock::now();
    options.progress = [start](std::string_view line) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "[%7.1fs] %.*s\n", s, static_cast<int>(line.size()), line.data());
    };
    builder_ = new ImageBuilder(docker_, options);
    auto report = builder_->build(false);
    ASSERT_TRUE(report.ok()) << report.error().to_string();
    report_ = *report;
    std::fprintf(stderr, "image %s: built=%d method=%s rootfs_built=%d %.1f s, %.0f MB\n",
                 report_.tag.c_str(), report_.built,
                 std::string(build_method_name(report_.method)).c_str(), report_.rootfs_built,
                 static_cast<double>(report_.duration.count()) / 1000.0,
                 static_cast<double>(report_.size_bytes) / 1e6);
  }
  static void TearDownTestSuite() {
    delete builder_;
    builder_ = nullptr;
  }

  void TearDown() override {
    for (const auto& id : containers_) (void)docker_->remove_container(id, {.force = true});
    for (const auto& v : volumes_) (void)docker_->remove_volume(v, true);
  }

  // Runs `cmd` in a hardened container (as the sandbox manager will) and returns its output.
  ExecResult run(std::vector<std::string> cmd, const std::string& volume = "") {
    ContainerSpec spec;
    spec.name = unique("codeact-itest-image");
    spec.image = report_.tag;
    spec.cmd = std::move(cmd);
    spec.labels = {{kTestLabel, "image_builder"}};
    spec.read_only_rootfs = true;
    spec.tmpfs = {{"/tmp", "rw,size=64m,mode=1777"}};
    spec.cap_drop = {"ALL"};
    spec.security_opt = {"no-new-privileges"};
    spec.network_mode = "none";
    spec.pids_limit = 128;
    spec.memory_bytes = 512LL << 20;
    if (!volume.empty()) spec.volumes = {{volume, "/persistent-storage"}};
    auto id = docker_->create_container(spec);
    EXPECT_TRUE(id.ok()) << id.error().to_string();
    if (!id.ok()) return {};
    containers_.push_back(*id);
    EXPECT_TRUE(docker_->start_container(*id).ok());
    auto waited =
        docker_->wait_container(*id, WaitCondition::kNotRunning, std::chrono::seconds(120));
    EXPECT_TRUE(waited.ok()) << waited.error().to_string();
    auto logs = docker_->logs(*id);
    EXPECT_TRUE(logs.ok());
    ExecResult r;
    r.exit_code = waited.ok() ? waited->status_code : -1;
    if (logs.ok()) {
      r.stdout_text = logs->stdout_text;
      r.stderr_text = logs->stderr_text;
    }
    return r;
  }

  static inline std::shared_ptr<DockerClient> docker_;
  static inline ImageBuilder* builder_ = nullptr;
  static inline BuildReport report_;
  std::vector<std::string> containers_;
  std::vector<std::string> volumes_;
};

TEST_F(ImageBuilderTest, ImageIsTaggedByRecipeHashAndLatest) {
  auto info = docker_->inspect_image(report_.tag);
  ASSERT_TRUE(info.ok()) << info.error().to_string();
  EXPECT_EQ(info->labels[std::string(kRecipeHashLabel)], ImageRecipe::embedded().content_hash());
  auto latest = docker_->inspect_image("codeact-sandbox:latest");
  ASSERT_TRUE(latest.ok());
  // ensure_image() finds it without building again.
  auto again = builder_->ensure_image();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, report_.tag);
  EXPECT_EQ(info->user, "1000:1000");
  EXPECT_EQ(info->cmd, (std::vector<std::string>{"python3", "/opt/codeact/codeact_kernel"}));
  auto has_env = [&](const std::string& kv) {
    return std::find(info->env.begin(), info->env.end(), kv) != info->env.end();
  };
  EXPECT_TRUE(has_env("MPLBACKEND=Agg"));
  EXPECT_TRUE(has_env("HOME=/tmp"));
  EXPECT_TRUE(has_env("PYTHONUNBUFFERED=1"));
  EXPECT_TRUE(has_env("PYTHONDONTWRITEBYTECODE=1"));
}

TEST_F(ImageBuilderTest, ScientificStackImportsAsUid1000OnReadOnlyRoot) {
  auto start = std::chrono::steady_clock::now();
  auto r = run({"python3", "-c",
                "import os, numpy, pandas, matplotlib, cloudpickle, dill\n"
                "import matplotlib.pyplot as plt\n"
                "plt.plot([1, 2]); plt.savefig('/tmp/f.png')\n"
                "print(os.getuid(), os.getgid(), numpy.__version__, pandas.__version__)\n"
                "import sys; print(sys.version_info[:2])\n"});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.stdout_text.rfind("1000 1000 ", 0), 0u) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("(3, 11)"), std::string::npos) << r.stdout_text;
  // The baked font cache is used: matplotlib neither warns nor rebuilds it.
  EXPECT_EQ(r.stderr_text.find("Matplotlib"), std::string::npos) << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("font cache"), std::string::npos) << r.stderr_text;
  std::fprintf(stderr, "container run with imports: %.2f s\n", seconds);
}

TEST_F(ImageBuilderTest, NewVolumeAtPersistentStorageIsWritableBySandboxUser) {
  std::string volume = unique("codeact-itest-vol");
  VolumeSpec spec;
  spec.name = volume;
  spec.labels = {{kTestLabel, "image_builder"}};
  ASSERT_TRUE(docker_->create_volume(spec).ok());
  volumes_.push_back(volume);
  auto r = run({"sh", "-c",
                "stat -c %u:%g /persistent-storage && mkdir -p /persistent-storage/.current/output "
                "&& echo hi > /output/x.txt && cat /persistent-storage/.current/output/x.txt && "
                "ls -l /opt/codeact/codeact_kernel/__main__.py && test -d /run/codeact && "
                "stat -c %u /run/codeact && (touch /etc/x 2>/dev/null && echo rw || echo ro)"},
               volume);
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text << r.stderr_text;
  EXPECT_EQ(r.stdout_text.rfind("1000:1000\nhi\n", 0), 0u) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("/opt/codeact/codeact_kernel/__main__.py"), std::string::npos);
  EXPECT_NE(r.stdout_text.find("\n1000\nro\n"), std::string::npos) << r.stdout_text;
}

TEST_F(ImageBuilderTest, PipAndUvAreThere) {
  auto r = run({"sh", "-c", "python3 -m pip --version && (uv --version || echo 'no uv')"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("pip "), std::string::npos);
  std::fprintf(stderr, "%s", r.stdout_text.c_str());
}

}  // namespace
}  // namespace codeact::sandbox

namespace codeact::sandbox {
namespace {

// Timing of a cold build (debootstrap or base image + top layer) and of a kernel-only rebuild,
// on a recipe variant so the real image is untouched. Minutes of work: run explicitly with
//   sandbox_image_builder_itest --gtest_also_run_disabled_tests --gtest_filter='*ColdBuild*'
TEST(ImageBuilderTiming, DISABLED_ColdBuildAndKernelRebuild) {
  auto client = DockerClient::create();
  ASSERT_TRUE(client.ok());
  auto docker = *client;
  ImageRecipe recipe = ImageRecipe::embedded();
  std::random_device rd;
  std::string salt = std::to_string(rd());
  recipe.files["bootstrap.sh"] += "# timing variant " + salt + "\n";
  ImageBuilderOptions options;
  options.repository = "codeact-itest-cold";
  auto start = std::chrono::steady_clock::now();
  options.progress = [start](std::string_view line) {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "[%7.1fs] %.*s\n", s, static_cast<int>(line.size()), line.data());
  };
  ImageBuilder cold(docker, options, recipe);
  auto first = cold.build(false);
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  EXPECT_TRUE(first->built);

  recipe.files["codeact_kernel/__main__.py"] += "\n# kernel change " + salt + "\n";
  ImageBuilder kernel_changed(docker, options, recipe);
  EXPECT_NE(kernel_changed.image_tag(), cold.image_tag());
  auto second = kernel_changed.build(false);
  ASSERT_TRUE(second.ok()) << second.error().to_string();
  EXPECT_FALSE(second->rootfs_built) << "a kernel change must not redo the root file system";

  auto third = kernel_changed.build(false);
  ASSERT_TRUE(third.ok());
  EXPECT_FALSE(third->built);

  std::fprintf(stderr,
               "cold build (%s, rootfs built: %d): %.1f s, image %.0f MB; kernel-only rebuild: "
               "%.1f s; warm ensure: %.3f s\n",
               std::string(build_method_name(first->method)).c_str(), first->rootfs_built,
               static_cast<double>(first->duration.count()) / 1000.0,
               static_cast<double>(first->size_bytes) / 1e6,
               static_cast<double>(second->duration.count()) / 1000.0,
               static_cast<double>(third->duration.count()) / 1000.0);
  (void)docker->remove_image(second->tag, true);
  (void)docker->remove_image(first->tag, true);
  (void)docker->remove_image("codeact-itest-cold:latest", true);
  (void)docker->remove_image(
      std::string(kRootfsRepository) + ":" + recipe.rootfs_hash("bookworm").substr(0, 12), true);
}

}  // namespace
}  // namespace codeact::sandbox

namespace codeact::sandbox {
namespace {

// The base-image way (what runs where a registry provides debian:bookworm-slim), on this
// registry-less machine: the root file system image stands in for the registry's Debian image,
// so apt-get in the Dockerfile really runs. Minutes; run explicitly like the timing test.
TEST(ImageBuilderBaseImage, DISABLED_BaseImageWayBuildsAWorkingImage) {
  auto client = DockerClient::create();
  ASSERT_TRUE(client.ok());
  auto docker = *client;
  ImageBuilderOptions real_options;
  ImageBuilder real(docker, real_options);
  ASSERT_TRUE(real.ensure_image().ok());
  std::string rootfs = std::string(kRootfsRepository) + ":" +
                       ImageRecipe::embedded().rootfs_hash("bookworm").substr(0, 12);
  if (!docker->inspect_image(rootfs).ok()) GTEST_SKIP() << "no " << rootfs << " to stand in";

  ImageRecipe recipe = ImageRecipe::embedded();
  recipe.files["Dockerfile"] += "# base-image variant\n";
  ImageBuilderOptions options;
  options.repository = "codeact-itest-base";
  options.method = BuildMethod::kBaseImage;
  options.base_image = rootfs;
  options.progress = [](std::string_view line) {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
  };
  ImageBuilder builder(docker, options, recipe);
  auto report = builder.build(false);
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(report->method, BuildMethod::kBaseImage);
  EXPECT_FALSE(report->rootfs_built);

  ContainerSpec spec;
  spec.image = report->tag;
  spec.cmd = {"python3", "-c", "import numpy, pandas, matplotlib, cloudpickle, dill; print('ok')"};
  spec.read_only_rootfs = true;
  spec.tmpfs = {{"/tmp", "rw,size=64m,mode=1777"}};
  spec.network_mode = "none";
  spec.labels = {{"io.codeact.test", "image_builder"}};
  auto id = docker->create_container(spec);
  ASSERT_TRUE(id.ok()) << id.error().to_string();
  ASSERT_TRUE(docker->start_container(*id).ok());
  auto waited = docker->wait_container(*id, WaitCondition::kNotRunning, std::chrono::seconds(120));
  auto logs = docker->logs(*id);
  (void)docker->remove_container(*id, {.force = true});
  ASSERT_TRUE(waited.ok());
  EXPECT_EQ(waited->status_code, 0) << (logs.ok() ? logs->stderr_text : "");
  EXPECT_EQ(logs.ok() ? logs->stdout_text : "", "ok\n");
  std::fprintf(stderr, "base-image way: %.1f s, %.0f MB\n",
               static_cast<double>(report->duration.count()) / 1000.0,
               static_cast<double>(report->size_bytes) / 1e6);
  (void)docker->remove_image(report->tag, true);
  (void)docker->remove_image("codeact-itest-base:latest", true);
}

}  // namespace
}  // namespace codeact::sandbox
