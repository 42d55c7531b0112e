#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "codeact/core/http_client.hpp"
#include "codeact/server/http.hpp"

using namespace codeact;
using namespace ::codeact::server;

namespace {

std::string base(const HttpServer& s) { return "http://127.0.0.1:" + std::to_string(s.port()); }

}  // namespace

TEST(HttpServer, AnswersJsonDecodesThePathAndReadsHeadersAndQuery) {
  HttpServer server({.listen = "127.0.0.1:0"}, [](const HttpRequest& r) -> HttpReply {
    return HttpResponse::json(200, {{"method", r.method},
                                    {"path", r.path},
                                    {"q", r.query_param("q").value_or("-")},
                                    {"h", r.header("x-test")},
                                    {"body", r.body}});
  });
  ASSERT_TRUE(server.start().ok());
  core::CurlTransport http;
  core::HttpRequest req;
  req.method = "POST";
  req.url = base(server) + "/a%20b/c?q=x+y%21";
  req.headers = {{"X-Test", "yes"}};
  req.body = "hello";
  auto r = http.send(req);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->status, 200);
  auto j = core::parse_json(r->body);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)["path"], "/a b/c");
  EXPECT_EQ((*j)["q"], "x y!");
  EXPECT_EQ((*j)["h"], "yes");
  EXPECT_EQ((*j)["body"], "hello");
  server.stop();
}

TEST(HttpServer, ABodyOverTheLimitIs413WithoutReachingTheHandler) {
  std::atomic<int> calls{0};
  HttpServer server({.listen = "127.0.0.1:0", .max_body_bytes = 1024},
                    [&](const HttpRequest&) -> HttpReply {
                      ++calls;
                      return HttpResponse::json(200, {});
                    });
  ASSERT_TRUE(server.start().ok());
  core::CurlTransport http;
  core::HttpRequest req;
  req.method = "POST";
  req.url = base(server) + "/x";
  req.body = std::string(4096, 'x');
  auto r = http.send(req);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->status, 413);
  EXPECT_NE(r->body.find("ResourceExhausted"), std::string::npos);
  EXPECT_EQ(calls.load(), 0);
}

TEST(HttpServer, AHandlerThatThrowsIsAnswered500AndTheServerGoesOn) {
  HttpServer server({.listen = "127.0.0.1:0"}, [](const HttpRequest& r) -> HttpReply {
    if (r.path == "/boom") throw std::runtime_error("boom");
    return HttpResponse::json(200, {{"ok", true}});
  });
  ASSERT_TRUE(server.start().ok());
  core::CurlTransport http;
  core::HttpRequest req;
  req.url = base(server) + "/boom";
  auto r = http.send(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 500);
  req.url = base(server) + "/fine";
  r = http.send(req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 200);
}

TEST(HttpServer, StreamsChunksAsTheyAreSentAndStopSendsTheLastOne) {
  std::shared_ptr<EventStream> kept;
  std::mutex mu;
  std::condition_variable cv;
  HttpServer server({.listen = "127.0.0.1:0"}, [&](const HttpRequest&) -> HttpReply {
    StreamedResponse s;
    s.headers = {{"Content-Type", "text/event-stream"}};
    s.on_open = [&](std::shared_ptr<EventStream> stream) {
      stream->send("data: one\n\n");
      std::lock_guard lock(mu);
      kept = stream;
      cv.notify_all();
    };
    return s;
  });
  ASSERT_TRUE(server.start().ok());
  std::string got;
  std::thread reader([&] {
    core::CurlTransport http;
    core::HttpRequest req;
    req.url = base(server) + "/events";
    req.on_body = [&](std::string_view chunk) {
      got += chunk;
      return true;
    };
    auto r = http.send(req);
  });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return kept != nullptr; }));
  }
  EXPECT_EQ(server.open_streams(), 1u);
  kept->send("data: two\n\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  server.stop("event: shutdown\n\n");
  reader.join();
  EXPECT_EQ(got, "data: one\n\ndata: two\n\nevent: shutdown\n\n");
  EXPECT_TRUE(kept->closed());
  EXPECT_FALSE(kept->send("late"));
}

TEST(HttpServer, ListenAddressesAreCheckedAndLoopbackIsKnown) {
  EXPECT_TRUE(parse_listen_address("127.0.0.1:8000").ok());
  EXPECT_EQ(parse_listen_address("[::1]:80")->first, "::1");
  EXPECT_FALSE(parse_listen_address("8000").ok());
  EXPECT_FALSE(parse_listen_address("host:99999").ok());
  EXPECT_FALSE(parse_listen_address("host:8x").ok());
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("127.1.2.3"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_TRUE(is_loopback_host("localhost"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
  EXPECT_FALSE(is_loopback_host("10.0.0.1"));
  HttpServer taken({.listen = "127.0.0.1:0"},
                   [](const HttpRequest&) -> HttpReply { return HttpResponse{}; });
  ASSERT_TRUE(taken.start().ok());
  HttpServer second({.listen = "127.0.0.1:" + std::to_string(taken.port())},
                    [](const HttpRequest&) -> HttpReply { return HttpResponse{}; });
  auto s = second.start();
  EXPECT_EQ(s.error().code(), core::Code::kUnavailable);
}

TEST(HttpServer, PercentDecodingRefusesBadEscapes) {
  EXPECT_EQ(*percent_decode("a%2Fb%20c"), "a/b c");
  EXPECT_EQ(*percent_decode("a+b"), "a+b");
  EXPECT_FALSE(percent_decode("%zz").ok());
  EXPECT_FALSE(percent_decode("abc%2").ok());
  EXPECT_FALSE(percent_decode("%").ok());
}
