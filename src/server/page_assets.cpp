#include "page_assets.hpp"

#include "files.hpp"

namespace codeact::server {

HttpResponse page_asset(const std::string& name) {
  for (const auto& f : embedded_files()) {
    if (name != f.name) continue;
    HttpResponse r;
    std::string type = content_type_of(name);
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".js") == 0)
      type = "text/javascript; charset=utf-8";
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".css") == 0)
      type = "text/css; charset=utf-8";
    r.set("Content-Type", type);
    r.set("Content-Security-Policy",
          "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; "
          "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'");
    r.set("Cache-Control", "no-cache");
    r.body.assign(reinterpret_cast<const char*>(f.data), f.size);
    return r;
  }
  return HttpResponse::error(core::not_found("no page asset \"" + name + "\""));
}

}  // namespace codeact::server
