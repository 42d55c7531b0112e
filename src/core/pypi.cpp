#include "codeact/core/pypi.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include "codeact/core/config.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/sha256.hpp"

namespace codeact::core {

namespace fs = std::filesystem;

namespace {

// PEP 503: lower case, each run of '-', '_', '.' one '-'.
std::string normalized_project(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (out.empty() || out.back() != '-') out += '-';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

// A file URL of the index page, made absolute (PEP 691 allows relative ones).
std::string absolute_url(const std::string& page, const std::string& url) {
  if (url.starts_with("http://") || url.starts_with("https://")) return url;
  auto scheme_end = page.find("://");
  auto host_end = page.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
  if (url.starts_with("/")) return page.substr(0, host_end) + url;
  return page + url;
}

struct IndexEntry {
  std::string url;
  std::string sha256;
  uint64_t size = 0;
};

Result<IndexEntry> find_in_index(const PypiFile& file, HttpTransport& http) {
  std::string page = fmt::format("{}/{}/", pypi_index_url(), normalized_project(file.project));
  HttpRequest req;
  req.url = page;
  req.headers = {{"Accept", "application/vnd.pypi.simple.v1+json"}};
  req.timeout = std::chrono::seconds(60);
  CODEACT_TRY(HttpResponse resp, http.send(req));
  if (resp.status == 404) {
    return not_found(
        fmt::format("the package index {} has no project {}", pypi_index_url(), file.project));
  }
  if (resp.status != 200) {
    return unavailable(fmt::format("the package index answered {} for {}", resp.status, page));
  }
  auto parsed = parse_json(resp.body, "the package index page");
  const Json index = parsed.ok() ? std::move(parsed).value() : Json();
  if (!index.is_object() || !index.contains("files") || !index["files"].is_array()) {
    return unavailable(
        fmt::format("the package index at {} does not speak the JSON Simple API (PEP 691)", page));
  }
  for (const auto& f : index["files"]) {
    if (json_string(f, "filename") != file.filename) continue;
    IndexEntry e;
    e.url = absolute_url(page, json_string(f, "url"));
    if (auto h = f.find("hashes"); h != f.end()) e.sha256 = json_string(*h, "sha256");
    e.size = static_cast<uint64_t>(std::max<int64_t>(json_int(f, "size"), 0));
    if (e.sha256.empty()) {
      return unavailable(fmt::format("the package index gives no sha256 for {}", file.filename));
    }
    return e;
  }
  return not_found(fmt::format("the package index {} has no file {} in project {}",
                               pypi_index_url(), file.filename, file.project));
}

}  // namespace

std::string pypi_index_url() {
  std::string url = getenv_string("PIP_INDEX_URL").value_or("");
  if (url.empty()) url = "https://pypi.org/simple";
  while (url.ends_with("/")) url.pop_back();
  return url;
}

Result<std::string> download_pypi_file(const PypiFile& file, const std::string& dir,
                                       const DownloadProgress& progress,
                                       std::shared_ptr<HttpTransport> transport) {
  if (!transport) transport = default_transport();
  CODEACT_TRY(IndexEntry entry, find_in_index(file, *transport));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return internal_error(fmt::format("cannot create {}: {}", dir, ec.message()));
  const std::string path = (fs::path(dir) / file.filename).string();
  if (fs::exists(path)) {
    auto have = sha256_file(path);
    if (have.ok() && *have == entry.sha256) return path;
  }
  const std::string partial = path + ".partial";
  std::ofstream out(partial, std::ios::binary | std::ios::trunc);
  if (!out) return internal_error("cannot write " + partial);
  Sha256 sha;
  uint64_t done = 0;
  HttpRequest req;
  req.url = entry.url;
  req.on_body = [&](std::string_view chunk) {
    out.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    sha.update(chunk);
    done += chunk.size();
    if (progress) progress(done, entry.size);
    return static_cast<bool>(out);
  };
  auto resp = transport->send(req);
  out.close();
  if (!resp.ok() || resp->status != 200 || !out) {
    fs::remove(partial, ec);
    if (!resp.ok()) return std::move(resp).error();
    if (resp->status != 200) {
      return unavailable(fmt::format("downloading {} answered {}", entry.url, resp->status));
    }
    return internal_error("cannot write " + partial);
  }
  const std::string digest = sha.hex();
  if (digest != entry.sha256) {
    fs::remove(partial, ec);
    return data_loss(fmt::format("{} from {} has sha256 {}, the index says {}; nothing was kept",
                                 file.filename, entry.url, digest, entry.sha256));
  }
  fs::rename(partial, path, ec);
  if (ec) return internal_error(fmt::format("cannot rename {}: {}", partial, ec.message()));
  return path;
}

}  // namespace codeact::core
