// McpServerConfig parsing and the `mcp_servers` section of app_conf.yml.
#include "codeact/mcp/server_config.hpp"

#include <fmt/format.h>

namespace codeact::mcp {

std::string_view transport_name(TransportKind kind) {
  switch (kind) {
    case TransportKind::kStdio:
      return "stdio";
    case TransportKind::kStreamableHttp:
      return "http";
    case TransportKind::kSse:
      return "sse";
  }
  return "stdio";
}

namespace {

core::Result<std::string> string_field(const std::string& name, const Json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::string();
  const Json& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number() || v.is_boolean()) return v.dump();
  return core::invalid_argument(fmt::format("mcp_servers.{}.{} must be a string", name, key));
}

core::Result<std::map<std::string, std::string>> string_map(const std::string& name, const Json& j,
                                                            const char* key) {
  std::map<std::string, std::string> out;
  if (!j.contains(key) || j[key].is_null()) return out;
  if (!j[key].is_object())
    return core::invalid_argument(fmt::format("mcp_servers.{}.{} must be a mapping", name, key));
  for (const auto& [k, v] : j[key].items()) {
    if (v.is_string()) {
      out[k] = v.get<std::string>();
    } else if (v.is_number() || v.is_boolean()) {
      out[k] = v.dump();
    } else {
      return core::invalid_argument(
          fmt::format("mcp_servers.{}.{}.{} must be a string", name, key, k));
    }
  }
  return out;
}

core::Result<std::chrono::milliseconds> seconds_field(const std::string& name, const Json& j,
                                                      const char* key,
                                                      std::chrono::milliseconds fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_number() || j[key].get<double>() <= 0) {
    return core::invalid_argument(
        fmt::format("mcp_servers.{}.{} must be a positive number of seconds", name, key));
  }
  return std::chrono::milliseconds(static_cast<int64_t>(j[key].get<double>() * 1000));
}

}  // namespace

core::Result<McpServerConfig> McpServerConfig::from_json(const std::string& name, const Json& j) {
  if (!j.is_object())
    return core::invalid_argument(fmt::format("mcp_servers.{} must be a mapping", name));
  McpServerConfig c;
  c.name = name;
  CODEACT_TRY(c.command, string_field(name, j, "command"));
  CODEACT_TRY(c.url, string_field(name, j, "url"));
  CODEACT_TRY(c.cwd, string_field(name, j, "cwd"));
  CODEACT_TRY(std::string transport, string_field(name, j, "transport"));
  if (j.contains("args") && !j["args"].is_null()) {
    if (!j["args"].is_array())
      return core::invalid_argument(fmt::format("mcp_servers.{}.args must be a list", name));
    for (const auto& a : j["args"])
      c.args.push_back(a.is_string() ? a.get<std::string>() : a.dump());
  }
  CODEACT_TRY(c.env, string_map(name, j, "env"));
  CODEACT_TRY(auto headers, string_map(name, j, "headers"));
  for (auto& [k, v] : headers) c.headers.emplace_back(k, v);
  CODEACT_TRY(c.timeout, seconds_field(name, j, "timeout", c.timeout));
  CODEACT_TRY(c.init_timeout, seconds_field(name, j, "init_timeout", c.init_timeout));
  if (!c.command.empty() && !c.url.empty()) {
    return core::invalid_argument(fmt::format(
        "mcp_servers.{}: give either `command` (stdio) or `url` (HTTP), not both", name));
  }
  if (c.command.empty() && c.url.empty()) {
    return core::invalid_argument(fmt::format(
        "mcp_servers.{}: needs `command` (a stdio server) or `url` (an HTTP server)", name));
  }
  if (transport.empty()) {
    if (!c.command.empty()) {
      c.transport = TransportKind::kStdio;
    } else {
      std::string path = c.url.substr(0, c.url.find('?'));
      while (!path.empty() && path.back() == '/') path.pop_back();
      bool sse = path.size() >= 4 && path.compare(path.size() - 4, 4, "/sse") == 0;
      c.transport = sse ? TransportKind::kSse : TransportKind::kStreamableHttp;
    }
  } else if (transport == "stdio") {
    c.transport = TransportKind::kStdio;
  } else if (transport == "http" || transport == "streamable-http" ||
             transport == "streamable_http" || transport == "streamablehttp") {
    c.transport = TransportKind::kStreamableHttp;
  } else if (transport == "sse") {
    c.transport = TransportKind::kSse;
  } else {
    return core::invalid_argument(fmt::format(
        "mcp_servers.{}.transport: unknown transport '{}' (stdio, http, sse)", name, transport));
  }
  if (c.transport == TransportKind::kStdio && c.command.empty()) {
    return core::invalid_argument(
        fmt::format("mcp_servers.{}: transport stdio needs `command`", name));
  }
  if (c.transport != TransportKind::kStdio) {
    if (c.url.empty())
      return core::invalid_argument(
          fmt::format("mcp_servers.{}: transport {} needs `url`", name, transport));
    if (c.url.rfind("http://", 0) != 0 && c.url.rfind("https://", 0) != 0) {
      return core::invalid_argument(fmt::format(
          "mcp_servers.{}.url must start with http:// or https:// (got '{}')", name, c.url));
    }
  }
  return c;
}

Json McpServerConfig::to_json(bool redact) const {
  Json j{{"name", name}, {"transport", std::string(transport_name(transport))}};
  if (transport == TransportKind::kStdio) {
    j["command"] = command;
    j["args"] = args;
    if (!cwd.empty()) j["cwd"] = cwd;
    Json e = Json::object();
    for (const auto& [k, v] : env) e[k] = redact ? "***" : v;
    j["env"] = e;
  } else {
    j["url"] = url;
    Json h = Json::object();
    for (const auto& [k, v] : headers) h[k] = redact ? "***" : v;
    j["headers"] = h;
  }
  j["timeout"] = static_cast<double>(timeout.count()) / 1000;
  return j;
}

std::string McpServerConfig::describe() const {
  if (transport == TransportKind::kStdio) {
    std::string s = "stdio: " + command;
    for (const auto& a : args) s += " " + a;
    return s;
  }
  return std::string(transport_name(transport)) + ": " + url;
}

core::Result<std::vector<McpServerEntry>> parse_mcp_servers(const Json& app_conf,
                                                            const core::EnvLookup& env) {
  std::vector<McpServerEntry> out;
  if (!app_conf.is_object() || !app_conf.contains("mcp_servers") ||
      app_conf["mcp_servers"].is_null())
    return out;
  const Json& servers = app_conf["mcp_servers"];
  if (!servers.is_object())
    return core::invalid_argument("app_conf.yml: mcp_servers must be a mapping of name -> server");
  for (const auto& [name, raw] : servers.items()) {
    auto interpolated = core::interpolate_env(raw, env);
    if (!interpolated.ok()) {
      out.push_back({name, interpolated.error().with_context(fmt::format("mcp_servers.{}", name))});
      continue;
    }
    out.push_back({name, McpServerConfig::from_json(name, *interpolated)});
  }
  return out;
}

core::Result<std::vector<McpServerEntry>> load_mcp_servers(const std::string& explicit_path,
                                                           const core::EnvLookup& env) {
  CODEACT_TRY(std::string path,
              core::find_config_file("app_conf.yml", "APP_CONFIG_PATH", explicit_path));
  CODEACT_TRY(Json conf, core::load_yaml_file(path));
  auto r = parse_mcp_servers(conf, env);
  if (!r.ok()) return r.error().with_context(path);
  return r;
}

}  // namespace codeact::mcp
