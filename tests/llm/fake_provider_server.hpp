// A local HTTP server on 127.0.0.1 (free port) that plays an LLM provider in tests: it answers
// each request with the next scripted response (plain, streamed in chunks, or cut mid-way) and
// records what codeact sent so tests can assert paths, headers and body fields.
#pragma once

#include <httplib.h>

#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "codeact/core/json.hpp"

namespace codeact::llm::testing {

struct RecordedRequest {
  std::string method;
  std::string path;
  httplib::Params params;  // query parameters
  httplib::Headers headers;
  std::string body;

  std::string header(const std::string& name) const {
    auto it = headers.find(name);  // httplib compares header names case-insensitively
    return it == headers.end() ? "" : it->second;
  }
  bool has_header(const std::string& name) const { return headers.find(name) != headers.end(); }
  std::string param(const std::string& name) const {
    auto it = params.find(name);
    return it == params.end() ? "" : it->second;
  }
  core::Json json() const { return core::Json::parse(body); }
};

struct ScriptedResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  // The body, sent in these pieces with chunked transfer encoding when `stream` is set.
  std::vector<std::string> chunks;
  bool stream = false;
  // Close the connection after the chunks without ending the chunked body (a cut stream).
  bool cut = false;
  std::chrono::milliseconds delay{0};        // before answering
  std::chrono::milliseconds chunk_delay{0};  // between chunks
};

inline ScriptedResponse json_response(const core::Json& body, int status = 200) {
  ScriptedResponse r;
  r.status = status;
  r.chunks = {body.dump()};
  return r;
}

inline ScriptedResponse sse_response(std::vector<std::string> chunks) {
  ScriptedResponse r;
  r.content_type = "text/event-stream";
  r.stream = true;
  r.chunks = std::move(chunks);
  return r;
}

inline std::string sse_data(const core::Json& data) { return "data: " + data.dump() + "\n\n"; }
inline std::string sse_event(const std::string& event, const core::Json& data) {
  return "event: " + event + "\n" + sse_data(data);
}

class FakeProviderServer {
 public:
  FakeProviderServer() {
    auto handler = [this](const httplib::Request& req, httplib::Response& res) {
      handle(req, res);
    };
    server_.Post(R"(.*)", handler);
    server_.Get(R"(.*)", handler);
    // One request per connection: stop() must not wait for an idle keep-alive connection.
    server_.set_keep_alive_max_count(1);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeProviderServer() {
    server_.stop();
    thread_.join();
  }
  FakeProviderServer(const FakeProviderServer&) = delete;
  FakeProviderServer& operator=(const FakeProviderServer&) = delete;

  void enqueue(ScriptedResponse response) {
    std::lock_guard<std::mutex> lock(mu_);
    script_.push_back(std::move(response));
  }
  std::string base_url(const std::string& path = "") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  int port() const { return port_; }
  std::vector<RecordedRequest> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  size_t request_count() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.size();
  }
  RecordedRequest last_request() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_.empty() ? RecordedRequest{} : requests_.back();
  }

 private:
  void handle(const httplib::Request& req, httplib::Response& res) {
    ScriptedResponse script;
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(RecordedRequest{req.method, req.path, req.params, req.headers, req.body});
      if (script_.empty()) {
        res.status = 500;
        res.set_content(R"({"error":{"message":"test server: no scripted response left"}})",
                        "application/json");
        return;
      }
      script = std::move(script_.front());
      script_.pop_front();
    }
    if (script.delay.count() > 0) std::this_thread::sleep_for(script.delay);
    res.status = script.status;
    for (const auto& [name, value] : script.headers) res.set_header(name, value);
    if (!script.stream) {
      std::string body;
      for (const auto& c : script.chunks) body += c;
      res.set_content(body, script.content_type);
      return;
    }
    res.set_chunked_content_provider(
        script.content_type, [script](size_t, httplib::DataSink& sink) {
          for (const auto& chunk : script.chunks) {
            if (script.chunk_delay.count() > 0) std::this_thread::sleep_for(script.chunk_delay);
            if (!sink.write(chunk.data(), chunk.size())) return false;
          }
          if (script.cut) return false;  // no terminating chunk: the client sees a cut transfer
          sink.done();
          return true;
        });
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::deque<ScriptedResponse> script_;    // GUARDED_BY(mu_)
  std::vector<RecordedRequest> requests_;  // GUARDED_BY(mu_)
};

}  // namespace codeact::llm::testing
