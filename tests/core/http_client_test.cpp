#include "codeact/core/http_client.hpp"

#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <thread>

using namespace codeact::core;
using namespace std::chrono_literals;

namespace {
class LocalServer {
 public:
  explicit LocalServer(bool unix_socket = false) {
    server_.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
      res.set_header("X-Seen-Auth", req.get_header_value("Authorization"));
      res.set_content(req.body, "text/plain");
    });
    server_.Get("/slow", [](const httplib::Request&, httplib::Response& res) {
      std::this_thread::sleep_for(2s);
      res.set_content("late", "text/plain");
    });
    server_.Get("/stream", [](const httplib::Request&, httplib::Response& res) {
      res.set_chunked_content_provider("text/event-stream", [](size_t, httplib::DataSink& sink) {
        for (int i = 0; i < 5; ++i) {
          std::string chunk = "data: " + std::to_string(i) + "\n\n";
          sink.write(chunk.data(), chunk.size());
        }
        sink.done();
        return true;
      });
    });
    server_.Get("/missing", [](const httplib::Request&, httplib::Response& res) {
      res.status = 404;
      res.set_content("{\"message\":\"no such thing\"}", "application/json");
    });
    if (unix_socket) {
      socket_path_ = (std::filesystem::temp_directory_path() /
                      ("codeact-http-" + std::to_string(::getpid()) + ".sock"))
                         .string();
      std::filesystem::remove(socket_path_);
      server_.set_address_family(AF_UNIX);
      thread_ = std::thread([this] { server_.listen(socket_path_, 80); });
    } else {
      port_ = server_.bind_to_any_port("127.0.0.1");
      thread_ = std::thread([this] { server_.listen_after_bind(); });
    }
    while (!server_.is_running()) std::this_thread::sleep_for(1ms);
  }
  ~LocalServer() {
    server_.stop();
    thread_.join();
    if (!socket_path_.empty()) std::filesystem::remove(socket_path_);
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  const std::string& socket_path() const { return socket_path_; }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::string socket_path_;
};
}  // namespace

TEST(HttpClient, PostsBodyAndHeadersAndReadsResponse) {
  LocalServer server;
  CurlTransport http;
  HttpRequest req{.method = "POST",
                  .url = server.url("/echo"),
                  .headers = {{"Authorization", "Bearer t"}},
                  .body = "payload"};
  auto r = http.send(req);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "payload");
  EXPECT_EQ(r->header("x-seen-auth"), "Bearer t");
}

TEST(HttpClient, ErrorStatusIsAResponseNotAnError) {
  LocalServer server;
  auto r = CurlTransport().send({.url = server.url("/missing")});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 404);
}

TEST(HttpClient, StreamsBodyChunksToCallback) {
  LocalServer server;
  std::string seen;
  HttpRequest req{.url = server.url("/stream")};
  req.on_body = [&](std::string_view chunk) {
    seen.append(chunk);
    return true;
  };
  auto r = CurlTransport().send(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(seen, "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n");
  EXPECT_TRUE(r->body.empty());
}

TEST(HttpClient, TimeoutAndCancellationAreDistinctErrors) {
  LocalServer server;
  HttpRequest req{.url = server.url("/slow"), .timeout = 200ms};
  auto r = CurlTransport().send(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Code::kDeadlineExceeded);

  CancelToken token;
  HttpRequest req2{.url = server.url("/slow")};
  req2.cancel = &token;
  std::thread canceller([&] {
    std::this_thread::sleep_for(100ms);
    token.cancel();
  });
  auto start = std::chrono::steady_clock::now();
  auto r2 = CurlTransport().send(req2);
  canceller.join();
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.error().code(), Code::kCancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
}

TEST(HttpClient, UnreachableServerIsUnavailable) {
  auto r = CurlTransport().send({.url = "http://127.0.0.1:1/x", .connect_timeout = 2000ms});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), Code::kUnavailable);
}

TEST(HttpClient, TalksOverAUnixSocket) {
  LocalServer server(/*unix_socket=*/true);
  HttpRequest req{.method = "POST", .url = "http://localhost/echo", .body = "over unix"};
  req.unix_socket = server.socket_path();
  auto r = CurlTransport().send(req);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->body, "over unix");
}

TEST(HttpClient, StreamsRequestBodyFromSource) {
  LocalServer server;
  std::string data(200000, 'x');
  size_t off = 0;
  HttpRequest req{.method = "POST", .url = server.url("/echo")};
  req.body_source = [&](char* buf, size_t max) {
    size_t n = std::min(max, data.size() - off);
    std::copy_n(data.data() + off, n, buf);
    off += n;
    return n;
  };
  auto r = CurlTransport().send(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body.size(), data.size());
}
