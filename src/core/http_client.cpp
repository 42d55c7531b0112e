#include "codeact/core/http_client.hpp"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <mutex>

namespace codeact::core {
namespace {

std::once_flag g_curl_init;

struct TransferState {
  const HttpRequest* request = nullptr;
  HttpResponse* response = nullptr;
  bool aborted_by_callback = false;
  size_t body_offset = 0;
};

size_t write_cb(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<TransferState*>(user);
  size_t len = size * n;
  if (st->request->on_body) {
    if (!st->request->on_body(std::string_view(data, len))) {
      st->aborted_by_callback = true;
      return 0;
    }
  } else {
    st->response->body.append(data, len);
  }
  return len;
}

size_t header_cb(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<TransferState*>(user);
  size_t len = size * n;
  std::string_view line(data, len);
  if (line.starts_with("HTTP/")) {
    st->response->headers.clear();  // a new response (redirect, 100-continue)
    return len;
  }
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return len;
  std::string name(line.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
    value.remove_suffix(1);
  st->response->headers.emplace_back(std::move(name), std::string(value));
  return len;
}

size_t read_cb(char* buffer, size_t size, size_t n, void* user) {
  auto* st = static_cast<TransferState*>(user);
  size_t max = size * n;
  if (st->request->body_source) return st->request->body_source(buffer, max);
  const std::string& body = st->request->body;
  size_t len = std::min(max, body.size() - st->body_offset);
  std::copy_n(body.data() + st->body_offset, len, buffer);
  st->body_offset += len;
  return len;
}

int progress_cb(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* st = static_cast<TransferState*>(user);
  if (st->request->cancel && st->request->cancel->cancelled()) return 1;
  return 0;
}

// One easy handle per thread, reset between requests: keeps connections alive.
struct ThreadHandle {
  CURL* handle = nullptr;
  ThreadHandle() { handle = curl_easy_init(); }
  ~ThreadHandle() {
    if (handle) curl_easy_cleanup(handle);
  }
};

std::string target_of(const HttpRequest& r) {
  return r.unix_socket.empty() ? r.url
                               : fmt::format("{} (via unix socket {})", r.url, r.unix_socket);
}

}  // namespace

std::string HttpResponse::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() && std::equal(k.begin(), k.end(), name.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      return v;
    }
  }
  return "";
}

CurlTransport::CurlTransport() {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

Result<HttpResponse> CurlTransport::send(const HttpRequest& request) {
  thread_local ThreadHandle th;
  CURL* h = th.handle;
  if (!h) return internal_error("could not create a curl handle");
  curl_easy_reset(h);

  HttpResponse response;
  TransferState st{&request, &response};

  curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
  if (!request.unix_socket.empty()) {
    curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, request.unix_socket.c_str());
  }
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_cb);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &st);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &st);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, progress_cb);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &st);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(request.connect_timeout.count()));
  if (request.timeout.count() > 0) {
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  }

  struct curl_slist* headers = nullptr;
  for (const auto& [k, v] : request.headers) {
    headers = curl_slist_append(headers, fmt::format("{}: {}", k, v).c_str());
  }
  // Expect: 100-continue adds a round trip for large bodies; nothing we talk to needs it.
  headers = curl_slist_append(headers, "Expect:");

  const bool has_body = request.body_source || !request.body.empty() || request.method == "POST" ||
                        request.method == "PUT" || request.method == "PATCH";
  if (request.method == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else if (request.method == "HEAD") {
    curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  if (has_body && request.method != "GET" && request.method != "HEAD") {
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, read_cb);
    curl_easy_setopt(h, CURLOPT_READDATA, &st);
    if (request.body_source) {
      if (request.body_size) {
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(*request.body_size));
      } else {
        headers = curl_slist_append(headers, "Transfer-Encoding: chunked");
      }
    } else {
      curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    }
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);

  CURLcode rc = curl_easy_perform(h);
  curl_slist_free_all(headers);

  if (rc != CURLE_OK) {
    if (st.aborted_by_callback)
      return cancelled(fmt::format("request to {} was aborted by its reader", target_of(request)));
    switch (rc) {
      case CURLE_ABORTED_BY_CALLBACK:
        return cancelled(fmt::format("request to {} was cancelled", target_of(request)));
      case CURLE_OPERATION_TIMEDOUT:
        return deadline_exceeded(fmt::format("request to {} timed out after {} ms",
                                             target_of(request), request.timeout.count()));
      case CURLE_COULDNT_CONNECT:
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_COULDNT_RESOLVE_PROXY:
        return unavailable(
            fmt::format("could not connect to {}: {}", target_of(request), curl_easy_strerror(rc)));
      default:
        return unavailable(
            fmt::format("request to {} failed: {}", target_of(request), curl_easy_strerror(rc)));
    }
  }
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  response.status = static_cast<int>(status);
  return response;
}

std::shared_ptr<HttpTransport> default_transport() {
  static std::shared_ptr<HttpTransport> t = std::make_shared<CurlTransport>();
  return t;
}

std::string url_encode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace codeact::core
