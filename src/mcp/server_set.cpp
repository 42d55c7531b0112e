// McpServerSet: configured servers, lazily started clients, tools bound to Python names.
#include "codeact/mcp/server_set.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>

#include "codeact/core/strings.hpp"

namespace codeact::mcp {

struct McpServerSet::Impl {
  void add(const std::string& name, core::Result<McpServerConfig> config) {
    if (!configs.count(name)) order.push_back(name);
    configs.insert_or_assign(name, std::move(config));
  }

  std::vector<std::string> order;  // set by the constructor, then read-only
  mutable std::mutex mu;
  std::map<std::string, core::Result<McpServerConfig>> configs;  // GUARDED_BY(mu)
  std::map<std::string, std::shared_ptr<McpClient>> clients;     // GUARDED_BY(mu)
};

McpServerSet::McpServerSet(std::vector<McpServerEntry> servers) : impl_(std::make_unique<Impl>()) {
  for (auto& e : servers) impl_->add(e.name, std::move(e.config));
}

McpServerSet::McpServerSet(std::vector<McpServerConfig> servers) : impl_(std::make_unique<Impl>()) {
  for (auto& c : servers) {
    std::string name = c.name;
    impl_->add(name, std::move(c));
  }
}

McpServerSet::~McpServerSet() { close(); }

core::Result<std::shared_ptr<McpServerSet>> McpServerSet::from_config_file(
    const std::string& explicit_path) {
  CODEACT_TRY(auto entries, load_mcp_servers(explicit_path));
  return std::make_shared<McpServerSet>(std::move(entries));
}

std::vector<std::string> McpServerSet::names() const { return impl_->order; }

bool McpServerSet::contains(const std::string& server) const {
  std::lock_guard lock(impl_->mu);
  return impl_->configs.count(server) > 0;
}

core::Result<std::shared_ptr<McpClient>> McpServerSet::client(const std::string& server) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->configs.find(server);
  if (it == impl_->configs.end()) {
    const auto& known = impl_->order;
    return core::not_found(fmt::format("no MCP server named '{}' in mcp_servers (configured: {})",
                                       server, known.empty() ? "none" : core::join(known, ", ")));
  }
  if (!it->second.ok()) return it->second.error();
  auto& c = impl_->clients[server];
  if (!c) c = std::make_shared<McpClient>(*it->second);
  return c;
}

core::Result<std::vector<ToolBinding>> bind_tools(
    const std::vector<std::pair<std::string, McpTool>>& tools) {
  std::vector<ToolBinding> out;
  std::map<std::string, size_t> by_name;
  for (const auto& [server, tool] : tools) {
    std::string callable = python_identifier(tool.name);
    if (auto it = by_name.find(callable); it != by_name.end()) {
      const auto& first = out[it->second];
      return core::invalid_argument(
          fmt::format("MCP tool name '{}' is exposed by two servers: '{}' (tool '{}') and '{}' "
                      "(tool '{}'); use only one of "
                      "them in this run",
                      callable, first.server, first.tool.name, server, tool.name));
    }
    CODEACT_TRY(auto sig, python_signature(callable, tool.description, tool.input_schema,
                                           tool.output_schema));
    by_name[callable] = out.size();
    out.push_back(ToolBinding{server, tool, std::move(sig)});
  }
  return out;
}

core::Result<std::vector<ToolBinding>> McpServerSet::tools(
    const std::vector<std::string>& servers) {
  std::vector<std::string> wanted = servers.empty() ? names() : servers;
  std::vector<std::pair<std::string, McpTool>> all;
  for (const auto& s : wanted) {
    CODEACT_TRY(auto c, client(s));
    CODEACT_TRY(auto list, c->list_tools());
    for (auto& t : list) all.emplace_back(s, std::move(t));
  }
  return bind_tools(all);
}

core::Result<McpCallResult> McpServerSet::call(const std::string& server, const std::string& tool,
                                               const Json& arguments,
                                               std::chrono::milliseconds timeout) {
  CODEACT_TRY(auto c, client(server));
  return c->call_tool(tool, arguments, timeout);
}

void McpServerSet::close() {
  std::map<std::string, std::shared_ptr<McpClient>> clients;
  {
    std::lock_guard lock(impl_->mu);
    clients.swap(impl_->clients);
  }
  for (auto& [n, c] : clients) c->close();
}

}  // namespace codeact::mcp
