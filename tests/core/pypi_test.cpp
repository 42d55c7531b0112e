// download_pypi_file against a local index speaking PEP 691 (the JSON Simple API).
#include "codeact/core/pypi.hpp"

#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "codeact/core/json.hpp"
#include "codeact/core/sha256.hpp"

using namespace codeact::core;
namespace fs = std::filesystem;

namespace {

const std::string kContent(100000, 'w');

class FakeIndex {
 public:
  FakeIndex() {
    server_.Get("/simple/some-project/",
                [this](const httplib::Request& req, httplib::Response& res) {
                  accept_ = req.get_header_value("Accept");
                  Json files = Json::array();
                  files.push_back({{"filename", "some_project-1.0-py3-none-any.whl"},
                                   {"url", "../../files/good.whl"},
                                   {"hashes", {{"sha256", sha256_hex(kContent)}}},
                                   {"size", kContent.size()}});
                  files.push_back({{"filename", "some_project-1.0.tar.gz"},
                                   {"url", url("/files/tampered.tar.gz")},
                                   {"hashes", {{"sha256", sha256_hex("what was uploaded")}}}});
                  res.set_content(Json{{"meta", {{"api-version", "1.1"}}}, {"files", files}}.dump(),
                                  "application/vnd.pypi.simple.v1+json");
                });
    server_.Get("/files/good.whl", [this](const httplib::Request&, httplib::Response& res) {
      ++downloads_;
      res.set_content(kContent, "application/octet-stream");
    });
    server_.Get("/files/tampered.tar.gz", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("something else", "application/octet-stream");
    });
    server_.set_keep_alive_max_count(1);  // stop() need not wait out a pooled connection
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ::setenv("PIP_INDEX_URL", url("/simple/").c_str(), 1);
    dir_ = fs::temp_directory_path() / ("codeact-pypi-" + std::to_string(::getpid()));
  }
  ~FakeIndex() {
    ::unsetenv("PIP_INDEX_URL");
    server_.stop();
    thread_.join();
    fs::remove_all(dir_);
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::string dir() const { return dir_.string(); }
  int downloads() const { return downloads_; }
  std::string accept() const { return accept_; }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  fs::path dir_;
  std::atomic<int> downloads_{0};
  std::string accept_;
};

}  // namespace

TEST(Pypi, IndexUrlComesFromPipIndexUrlWithoutATrailingSlash) {
  FakeIndex index;
  EXPECT_EQ(pypi_index_url(), index.url("/simple"));
}

TEST(Pypi, DownloadsAVerifiedFileOnceAndReportsProgress) {
  FakeIndex index;
  uint64_t last_done = 0, last_total = 0;
  // The project name as a user writes it: normalized to the index's some-project.
  auto path = download_pypi_file({"Some_Project", "some_project-1.0-py3-none-any.whl"}, index.dir(),
                                 [&](uint64_t done, uint64_t total) {
                                   last_done = done;
                                   last_total = total;
                                 });
  ASSERT_TRUE(path.ok()) << path.error().message();
  EXPECT_EQ(index.accept(), "application/vnd.pypi.simple.v1+json");
  std::ifstream in(*path, std::ios::binary);
  std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(got, kContent);
  EXPECT_EQ(last_done, kContent.size());
  EXPECT_EQ(last_total, kContent.size());
  auto again =
      download_pypi_file({"some-project", "some_project-1.0-py3-none-any.whl"}, index.dir());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(index.downloads(), 1) << "a file present with the right digest is kept";
}

TEST(Pypi, AFileWhoseDigestDiffersIsRefusedAndNotKept) {
  FakeIndex index;
  auto path = download_pypi_file({"some-project", "some_project-1.0.tar.gz"}, index.dir());
  ASSERT_FALSE(path.ok());
  EXPECT_EQ(path.error().code(), Code::kDataLoss);
  EXPECT_NE(path.error().message().find("the index says"), std::string::npos)
      << path.error().message();
  EXPECT_FALSE(fs::exists(fs::path(index.dir()) / "some_project-1.0.tar.gz"));
  EXPECT_FALSE(fs::exists(fs::path(index.dir()) / "some_project-1.0.tar.gz.partial"));
}

TEST(Pypi, AnUnknownFileOrProjectIsNotFoundByName) {
  FakeIndex index;
  auto file = download_pypi_file({"some-project", "some_project-2.0.tar.gz"}, index.dir());
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().code(), Code::kNotFound);
  EXPECT_NE(file.error().message().find("some_project-2.0.tar.gz"), std::string::npos);
  auto project = download_pypi_file({"no-such-project", "x.whl"}, index.dir());
  ASSERT_FALSE(project.ok());
  EXPECT_EQ(project.error().code(), Code::kNotFound);
  EXPECT_NE(project.error().message().find("no-such-project"), std::string::npos);
}
