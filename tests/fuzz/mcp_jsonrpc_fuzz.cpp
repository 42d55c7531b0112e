// Fuzzes MCP JSON-RPC message handling: mcp::McpClient over the real Streamable HTTP transport,
// whose HTTP answers come from the input. Input: the answers to the client's requests in the
// order it sends them (initialize, tools/list pages, tools/call, ping; initialize again after a
// restart), separated by "%%" lines. An answer is a JSON document or an event stream, as a server
// sends either; a first line "HTTP 404" (any status) sets its status, 200 otherwise.
// Notifications and the client's answers to server requests get 202, the optional GET stream 405.
#include <mutex>

#include "canned_http_transport.hpp"
#include "codeact/mcp/client.hpp"
#include "fuzz_input.hpp"
#include "transports_internal.hpp"

using codeact::core::HttpRequest;
using codeact::core::HttpResponse;
using codeact::core::Json;

namespace {

// The answers of one input, handed out to the client's requests in order.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::string_view input) : parts_(codeact::fuzz::split_parts(input)) {}

  codeact::core::Result<HttpResponse> answer(const HttpRequest& request) {
    HttpResponse r;
    if (request.method != "POST") {
      r.status = request.method == "GET" ? 405 : 200;
      return r;
    }
    auto message = codeact::core::parse_json(request.body);
    bool is_request = message.ok() && message->is_object() && message->contains("method") &&
                      message->contains("id");
    std::lock_guard lock(mu_);
    if (!is_request || next_ >= parts_.size()) {
      r.status = 202;
      return r;
    }
    std::string_view part = parts_[next_++];
    r.status = 200;
    if (part.substr(0, 5) == "HTTP " && part.size() >= 8) {
      r.status = std::atoi(std::string(part.substr(5, 3)).c_str());
      size_t eol = part.find('\n');
      part = eol == std::string_view::npos ? std::string_view() : part.substr(eol + 1);
    }
    r.headers.emplace_back("mcp-session-id", "fuzz-session-1");
    r.body = std::string(part);
    return r;
  }

 private:
  std::mutex mu_;
  std::vector<std::string_view> parts_;  // GUARDED_BY(mu_)
  size_t next_ = 0;                      // GUARDED_BY(mu_)
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ScriptedServer server(codeact::fuzz::as_text(data, size));
  auto http = std::make_shared<codeact::fuzz::CannedHttpTransport>(
      [&server](const HttpRequest& request) { return server.answer(request); });
  codeact::mcp::McpServerConfig config;
  config.name = "fuzz";
  config.transport = codeact::mcp::TransportKind::kStreamableHttp;
  config.url = "http://127.0.0.1:9/mcp";
  // The transport answers inside send(), so an answer is there or never comes: do not wait.
  config.timeout = std::chrono::milliseconds(1);
  config.init_timeout = std::chrono::milliseconds(1);
  {
    codeact::mcp::McpClient client(config, [http](const codeact::mcp::McpServerConfig& c) {
      return codeact::mcp::make_streamable_http_transport(c, http);
    });
    auto tools = client.list_tools();
    if (tools.ok()) {
      for (size_t i = 0; i < tools->size() && i < 3; ++i) {
        (void)(*tools)[i].to_json();
        auto result = client.call_tool((*tools)[i].name, Json{{"code", "print(1)"}});
        if (result.ok()) (void)result->text();
      }
    }
    (void)client.request("ping", Json::object());
    (void)client.server_info();
  }
  return 0;
}
