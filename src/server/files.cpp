#include "files.hpp"

#include <fmt/format.h>

#include "codeact/core/strings.hpp"

namespace codeact::server {

core::Result<std::string> output_path(const std::string& path) {
  if (path.find('\0') != std::string::npos || path.find('\\') != std::string::npos)
    return core::permission_denied("the path \"" + core::abbreviate(path, 80) +
                                   "\" is not allowed");
  std::string rest = path;
  if (rest.rfind("/output/", 0) == 0) {
    rest = rest.substr(8);
  } else if (rest.rfind("output/", 0) == 0) {
    rest = rest.substr(7);
  } else if (!rest.empty() && rest[0] == '/') {
    return core::permission_denied("only files under /output can be read or written, not \"" +
                                   core::abbreviate(path, 80) + "\"");
  }
  for (const auto& part : core::split(rest, '/')) {
    if (part == "..")
      return core::permission_denied("the path \"" + core::abbreviate(path, 80) +
                                     "\" leaves /output");
  }
  if (core::trim(rest).empty()) return core::invalid_argument("the path names no file");
  return "/output/" + rest;
}

std::string content_type_of(const std::string& path) {
  static const std::vector<std::pair<std::string, std::string>> types = {
      {".png", "image/png"},
      {".jpg", "image/jpeg"},
      {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},
      {".webp", "image/webp"},
      {".svg", "image/svg+xml"},
      {".csv", "text/csv; charset=utf-8"},
      {".txt", "text/plain; charset=utf-8"},
      {".md", "text/markdown; charset=utf-8"},
      {".json", "application/json"},
      {".html", "text/html; charset=utf-8"},
      {".pdf", "application/pdf"},
      {".zip", "application/zip"},
      {".py", "text/x-python; charset=utf-8"},
      {".parquet", "application/vnd.apache.parquet"},
      {".xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}};
  std::string lower = path;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& [ext, type] : types) {
    if (lower.size() > ext.size() && lower.compare(lower.size() - ext.size(), ext.size(), ext) == 0)
      return type;
  }
  return "application/octet-stream";
}

namespace {

std::string disposition(const std::string& path, bool inline_view) {
  std::string name = path.substr(path.rfind('/') + 1);
  std::string ascii;
  std::string encoded;
  for (unsigned char c : name) {
    ascii += (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? static_cast<char>(c) : '_';
    if (std::isalnum(c) || c == '.' || c == '-' || c == '_') {
      encoded += static_cast<char>(c);
    } else {
      encoded += fmt::format("%{:02X}", c);
    }
  }
  return fmt::format("{}; filename=\"{}\"; filename*=UTF-8''{}",
                     inline_view ? "inline" : "attachment", ascii, encoded);
}

}  // namespace

HttpResponse download(sandbox::SandboxBackend& sandboxes, const std::string& sandbox_id,
                      const std::string& path, const HttpRequest& request) {
  auto target = output_path(path);
  if (!target.ok()) return HttpResponse::error(target.error());
  // The kernel resolves symlinks; what it reports must still be under /output.
  auto listed = sandboxes.list_files(sandbox_id, *target);
  if (!listed.ok()) return HttpResponse::error(listed.error());
  for (const auto& f : *listed) {
    if (f.path.rfind("/output/", 0) != 0)
      return HttpResponse::error(core::permission_denied(*target + " resolves outside /output"));
  }
  // A directory lists what is in it (paths below it); a file (or a link to one) lists itself.
  if (listed->size() != 1 || listed->front().path.rfind(*target + "/", 0) == 0) {
    return HttpResponse::error(core::invalid_argument(*target + " is a directory, not a file"));
  }
  auto data = sandboxes.read_file(sandbox_id, listed->front().path);
  if (!data.ok()) return HttpResponse::error(data.error());
  const std::string type = content_type_of(*target);
  const bool image = type.rfind("image/", 0) == 0 && type != "image/svg+xml";
  const bool inline_view = image && request.query_param("inline").value_or("") == "1";
  HttpResponse r;
  r.set("Content-Type", type);
  r.set("Content-Disposition", disposition(*target, inline_view));
  r.set("Accept-Ranges", "bytes");
  r.set("Content-Security-Policy", "sandbox; default-src 'none'");
  r.set("Cache-Control", "private, no-store");
  const std::string range = request.header("range");
  if (range.rfind("bytes=", 0) == 0 && range.find(',') == std::string::npos) {
    const std::string spec = range.substr(6);
    const auto dash = spec.find('-');
    const int64_t size = static_cast<int64_t>(data->size());
    int64_t first = -1, last = size - 1;
    try {
      if (dash == 0) {  // the last N bytes
        first = std::max<int64_t>(0, size - static_cast<int64_t>(std::stoll(spec.substr(1))));
      } else if (dash != std::string::npos) {
        first = std::stoll(spec.substr(0, dash));
        if (dash + 1 < spec.size())
          last = std::min<int64_t>(last, std::stoll(spec.substr(dash + 1)));
      }
    } catch (...) {
      first = -1;
    }
    if (first < 0 || first > last || first >= size) {
      HttpResponse bad = HttpResponse::error(416, core::Code::kOutOfRange,
                                             "the range \"" + range + "\" is not satisfiable");
      bad.set("Content-Range", fmt::format("bytes */{}", size));
      return bad;
    }
    r.status = 206;
    r.set("Content-Range", fmt::format("bytes {}-{}/{}", first, last, size));
    r.body = data->substr(static_cast<size_t>(first), static_cast<size_t>(last - first + 1));
    return r;
  }
  r.body = std::move(*data);
  return r;
}

HttpResponse upload(sandbox::SandboxBackend& sandboxes, const std::string& sandbox_id,
                    const std::string& path, const std::string& data) {
  auto target = output_path(path);
  if (!target.ok()) return HttpResponse::error(target.error());
  auto s = sandboxes.write_file(sandbox_id, *target, data);
  if (!s.ok()) return HttpResponse::error(s.error());
  return HttpResponse::json(201, {{"path", *target}, {"size", data.size()}});
}

}  // namespace codeact::server
