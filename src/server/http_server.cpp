// HttpServer on Boost.Beast: one I/O thread runs every connection; handlers run on a thread pool.
// <utility> comes first: Asio's awaitable.hpp uses std::exchange without including it.
// clang-format off
#include <utility>
// clang-format on
#include <boost/asio.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "codeact/core/log.hpp"
#include "codeact/core/strings.hpp"
#include "codeact/server/http.hpp"

namespace codeact::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr auto kIdleTimeout = std::chrono::seconds(75);
constexpr size_t kHeaderLimit = 32 * 1024;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

core::Result<std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    const int hi = i + 1 < s.size() ? hex_value(s[i + 1]) : -1;
    const int lo = i + 2 < s.size() ? hex_value(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) return core::invalid_argument("a malformed percent-escape");
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::string HttpRequest::header(std::string_view name) const {
  auto it = headers.find(std::string(name));
  return it == headers.end() ? std::string() : it->second;
}

std::optional<std::string> HttpRequest::query_param(std::string_view name) const {
  for (const auto& pair : core::split(query, '&')) {
    auto eq = pair.find('=');
    std::string key = pair.substr(0, eq);
    if (key != name) continue;
    std::string value = eq == std::string::npos ? "" : pair.substr(eq + 1);
    for (char& c : value)
      if (c == '+') c = ' ';
    auto decoded = percent_decode(value);
    return decoded.ok() ? *decoded : value;
  }
  return std::nullopt;
}

HttpResponse& HttpResponse::set(std::string name, std::string value) {
  headers.emplace_back(std::move(name), std::move(value));
  return *this;
}

HttpResponse HttpResponse::json(int status, const Json& body) {
  HttpResponse r;
  r.status = status;
  r.body = core::dump_json(body);
  r.set("Content-Type", "application/json");
  return r;
}

HttpResponse HttpResponse::error(int status, core::Code code, const std::string& message) {
  return json(status, Json{{"error",
                            {{"code", std::string(core::code_name(code))}, {"message", message}}}});
}

HttpResponse HttpResponse::error(const core::Error& e) {
  return error(core::http_status(e.code()), e.code(), e.message());
}

core::Result<std::pair<std::string, int>> parse_listen_address(const std::string& listen) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return core::invalid_argument("--listen must be HOST:PORT, not \"" + listen + "\"");
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  int port = -1;
  try {
    size_t used = 0;
    port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1) port = -1;
  } catch (...) {
    port = -1;
  }
  if (port < 0 || port > 65535)
    return core::invalid_argument("--listen: \"" + listen.substr(colon + 1) +
                                  "\" is not a port (0-65535)");
  return std::make_pair(host, port);
}

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host, ec);
  return !ec && addr.is_loopback();
}

// ---------------------------------------------------------------------------------------------

struct HttpServer::Impl {
  class Connection;
  class Stream;

  HttpServerOptions options;
  HttpHandler handler;
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::thread_pool pool;
  std::thread io_thread;
  int bound_port = 0;
  bool started = false;
  bool stopped = false;
  std::mutex mu;  // guards streams and connections
  std::set<std::shared_ptr<Stream>> streams;
  std::set<std::weak_ptr<Connection>, std::owner_less<std::weak_ptr<Connection>>> connections;

  Impl(HttpServerOptions o, HttpHandler h)
      : options(std::move(o)), handler(std::move(h)), pool(std::max(1, options.handler_threads)) {}

  void accept();
  HttpReply run_handler(const HttpRequest& request) {
    try {
      return handler(request);
    } catch (const std::exception& e) {
      core::log().error("server: a handler threw on {} {}: {}", request.method, request.path,
                        e.what());
    } catch (...) {
      core::log().error("server: a handler threw on {} {}", request.method, request.path);
    }
    return HttpResponse::error(500, core::Code::kInternal, "internal error");
  }
};

class HttpServer::Impl::Stream final : public EventStream {
 public:
  Stream(std::shared_ptr<Connection> conn, size_t max_queued)
      : conn_(std::move(conn)), max_queued_(max_queued) {}
  bool send(std::string chunk) override;
  void close() override;
  bool closed() const override {
    std::lock_guard lock(mu_);
    return closed_;
  }
  // I/O thread: the next chunk to write, or nullopt; `last` is set when the stream is done.
  std::optional<std::shared_ptr<std::string>> next(bool& last) {
    std::lock_guard lock(mu_);
    last = false;
    if (!queue_.empty()) {
      auto s = queue_.front();
      queue_.pop_front();
      queued_ -= s->size();
      return s;
    }
    last = closed_;
    return std::nullopt;
  }
  // The connection ended (or the server stopped): nothing more is sent, and the stream lets go
  // of its connection, so that a stream its application keeps never keeps a connection (its
  // socket and timer, owned by the server's io_context) past the server.
  void gone() {
    std::lock_guard lock(mu_);
    closed_ = true;
    queue_.clear();
    queued_ = 0;
    conn_.reset();
  }

 private:
  // The connection to wake when a chunk is queued; null once gone().
  std::shared_ptr<Connection> connection() const {
    std::lock_guard lock(mu_);
    return conn_;
  }

  std::shared_ptr<Connection> conn_;  // GUARDED_BY(mu_)
  size_t max_queued_;
  mutable std::mutex mu_;
  std::deque<std::shared_ptr<std::string>> queue_;
  size_t queued_ = 0;
  bool closed_ = false;
};

class HttpServer::Impl::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Impl& server, tcp::socket socket) : server_(server), stream_(std::move(socket)) {
    boost::system::error_code ec;
    auto ep = stream_.socket().remote_endpoint(ec);
    if (!ec) peer_ = ep.address().to_string();
  }

  void start() { read_header(); }
  asio::io_context& server_io() { return server_.io; }
  void close_now() {
    boost::system::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
  }
  // I/O thread: writes queued stream chunks.
  void flush();

 private:
  void read_header() {
    parser_.emplace();
    parser_->header_limit(kHeaderLimit);
    parser_->body_limit(server_.options.max_upload_bytes);
    stream_.expires_after(kIdleTimeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (ec) return close_now();
    const auto& h = parser_->get();
    const size_t limit = h.method() == http::verb::put ? server_.options.max_upload_bytes
                                                       : server_.options.max_body_bytes;
    if (parser_->content_length() && *parser_->content_length() > limit) {
      return reply_and_close(HttpResponse::error(
          413, core::Code::kResourceExhausted,
          "the request body is larger than the limit of " + std::to_string(limit) + " bytes"));
    }
    parser_->body_limit(limit);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this(), limit](beast::error_code ec, size_t) {
                       if (ec == http::error::body_limit) {
                         return self->reply_and_close(
                             HttpResponse::error(413, core::Code::kResourceExhausted,
                                                 "the request body is larger than the limit of " +
                                                     std::to_string(limit) + " bytes"));
                       }
                       if (ec) return self->close_now();
                       self->on_request();
                     });
  }

  void on_request() {
    auto msg = parser_->release();
    keep_alive_ = msg.keep_alive();
    HttpRequest req;
    req.method = std::string(msg.method_string());
    std::string target(msg.target());
    auto q = target.find('?');
    req.raw_path = target.substr(0, q);
    if (q != std::string::npos) req.query = target.substr(q + 1);
    for (const auto& field : msg) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      auto [it, inserted] = req.headers.emplace(name, std::string(field.value()));
      if (!inserted) it->second += ", " + std::string(field.value());
    }
    req.body = std::move(msg.body());
    req.peer = peer_;
    auto decoded = percent_decode(req.raw_path);
    if (!decoded.ok() || req.raw_path.empty() || req.raw_path[0] != '/') {
      return write(
          HttpResponse::error(400, core::Code::kInvalidArgument, "the request path is malformed"));
    }
    req.path = std::move(*decoded);
    stream_.expires_never();  // the handler may take long; the write sets its own limit
    asio::post(server_.pool, [self = shared_from_this(), req = std::move(req)]() mutable {
      HttpReply reply = self->server_.run_handler(req);
      asio::post(self->server_.io, [self, reply = std::move(reply)]() mutable {
        if (auto* r = std::get_if<HttpResponse>(&reply)) {
          self->write(std::move(*r));
        } else {
          self->open_stream(std::move(std::get<StreamedResponse>(reply)));
        }
      });
    });
  }

  template <class Message>
  void add_headers(Message& m, const std::vector<std::pair<std::string, std::string>>& headers) {
    for (const auto& [k, v] : server_.options.default_headers) m.set(k, v);
    for (const auto& [k, v] : headers) m.set(k, v);
  }

  void write(HttpResponse r) {
    auto res = std::make_shared<http::response<http::string_body>>();
    res->result(static_cast<unsigned>(r.status));
    res->version(11);
    add_headers(*res, r.headers);
    res->body() = std::move(r.body);
    res->keep_alive(keep_alive_);
    res->prepare_payload();
    stream_.expires_after(kIdleTimeout);
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res](beast::error_code ec, size_t) {
                        if (ec || !self->keep_alive_) return self->close_now();
                        self->read_header();
                      });
  }

  void reply_and_close(HttpResponse r) {
    keep_alive_ = false;
    write(std::move(r));
  }

  void open_stream(StreamedResponse r) {
    auto res = std::make_shared<http::response<http::empty_body>>();
    res->result(static_cast<unsigned>(r.status));
    res->version(11);
    add_headers(*res, r.headers);
    res->chunked(true);
    res->keep_alive(false);
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*res);
    stream_.expires_never();
    auto stream = std::make_shared<Stream>(shared_from_this(), server_.options.max_queued_bytes);
    stream_handle_ = stream;
    {
      std::lock_guard lock(server_.mu);
      server_.streams.insert(stream);
    }
    http::async_write_header(
        stream_, *sr,
        [self = shared_from_this(), res, sr, stream, on_open = std::move(r.on_open)](
            beast::error_code ec, size_t) mutable {
          if (ec) {
            self->end_stream();
            return;
          }
          asio::post(self->server_.pool,
                     [stream, on_open = std::move(on_open)] { on_open(stream); });
          self->flush();
        });
  }

  void end_stream() {
    auto self = shared_from_this();  // the stream may hold the last reference to this
    auto stream = std::move(stream_handle_);
    if (stream) {
      stream->gone();
      std::lock_guard lock(server_.mu);
      server_.streams.erase(stream);
    }
    close_now();
  }

  Impl& server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  bool keep_alive_ = true;
  std::string peer_;
  std::shared_ptr<Stream> stream_handle_;
  bool writing_ = false;
};

void HttpServer::Impl::Connection::flush() {
  if (writing_ || !stream_handle_) return;
  bool last = false;
  auto chunk = stream_handle_->next(last);
  if (chunk) {
    writing_ = true;
    auto data = *chunk;
    asio::async_write(stream_, http::make_chunk(asio::buffer(*data)),
                      [self = shared_from_this(), data](beast::error_code ec, size_t) {
                        self->writing_ = false;
                        if (ec) return self->end_stream();
                        self->flush();
                      });
    return;
  }
  if (last) {
    writing_ = true;
    asio::async_write(stream_, http::make_chunk_last(),
                      [self = shared_from_this()](beast::error_code, size_t) {
                        self->writing_ = false;
                        self->end_stream();
                      });
  }
}

bool HttpServer::Impl::Stream::send(std::string chunk) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return false;
    if (queued_ + chunk.size() > max_queued_) {
      // Too slow a reader: drop it rather than buffer without bound.
      closed_ = true;
      queue_.clear();
      queued_ = 0;
    } else {
      queued_ += chunk.size();
      queue_.push_back(std::make_shared<std::string>(std::move(chunk)));
    }
  }
  if (auto c = connection()) asio::post(c->server_io(), [c] { c->flush(); });
  return !closed();
}

void HttpServer::Impl::Stream::close() {
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    closed_ = true;
  }
  if (auto c = connection()) asio::post(c->server_io(), [c] { c->flush(); });
}

void HttpServer::Impl::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (acceptor.is_open()) accept();
      return;
    }
    auto conn = std::make_shared<Connection>(*this, std::move(socket));
    {
      std::lock_guard lock(mu);
      for (auto it = connections.begin(); it != connections.end();)
        it = it->expired() ? connections.erase(it) : std::next(it);
      connections.insert(conn);
    }
    conn->start();
    accept();
  });
}

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() { stop(); }

core::Status HttpServer::start() {
  CODEACT_TRY(auto hp, parse_listen_address(impl_->options.listen));
  boost::system::error_code ec;
  auto address = asio::ip::make_address(hp.first == "localhost" ? "127.0.0.1" : hp.first, ec);
  if (ec) return core::invalid_argument("--listen: \"" + hp.first + "\" is not an IP address");
  tcp::endpoint ep(address, static_cast<unsigned short>(hp.second));
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return core::unavailable("cannot listen on " + impl_->options.listen + ": " + ec.message());
  }
  impl_->bound_port = a.local_endpoint().port();
  impl_->accept();
  impl_->started = true;
  impl_->io_thread = std::thread([this] {
    auto guard = asio::make_work_guard(impl_->io);
    impl_->io.run();
  });
  return core::Status();
}

int HttpServer::port() const { return impl_->bound_port; }

size_t HttpServer::open_streams() const {
  std::lock_guard lock(impl_->mu);
  return impl_->streams.size();
}

void HttpServer::stop(const std::string& last_chunk) {
  if (!impl_->started || impl_->stopped) return;
  impl_->stopped = true;
  std::vector<std::shared_ptr<Impl::Stream>> streams;
  {
    std::lock_guard lock(impl_->mu);
    streams.assign(impl_->streams.begin(), impl_->streams.end());
  }
  for (auto& s : streams) {
    if (!last_chunk.empty()) s->send(last_chunk);
    s->close();
  }
  streams.clear();
  // Give the streams a moment to flush their last chunk.
  for (int i = 0; i < 40 && open_streams() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  asio::post(impl_->io, [this] {
    boost::system::error_code ec;
    impl_->acceptor.close(ec);
    std::lock_guard lock(impl_->mu);
    for (auto& w : impl_->connections)
      if (auto c = w.lock()) c->close_now();
  });
  impl_->pool.join();
  impl_->io.stop();
  if (impl_->io_thread.joinable()) impl_->io_thread.join();
  // Streams that did not end by themselves let go of their connections now, while the
  // io_context their sockets belong to still exists.
  std::lock_guard lock(impl_->mu);
  for (auto& s : impl_->streams) s->gone();
  impl_->streams.clear();
}

}  // namespace codeact::server
