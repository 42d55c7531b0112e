// Function tools and the toolset wrappers.
#include "codeact/agent/toolset.hpp"

#include <algorithm>
#include <exception>

namespace codeact::agent {

using core::Result;

// ---------------------------------------------------------------------------------------------
// Function tools

Tool Tool::from_schema(std::string name, std::string description, Json parameters_schema,
                       std::function<ToolResult(const Json& args, const RunContext& ctx)> fn) {
  Tool t;
  t.info.definition.name = std::move(name);
  t.info.definition.description = std::move(description);
  t.info.definition.parameters_json_schema = parameters_schema;
  t.handler = [schema = std::move(parameters_schema), fn = std::move(fn)](
                  const Json& args, const RunContext& ctx) -> ToolResult {
    auto errors = validate_json_schema(args, schema);
    if (!errors.empty()) return ToolOutcome{ModelRetry{format_arg_errors(errors)}};
    return fn(args, ctx);
  };
  return t;
}

FunctionToolset::FunctionToolset(std::vector<Tool> tools, std::string id)
    : id_(std::move(id)), tools_(std::move(tools)) {}

void FunctionToolset::add(Tool tool) { tools_.push_back(std::move(tool)); }

Task<Result<std::vector<ToolInfo>>> FunctionToolset::get_tools(const RunContext&) {
  std::vector<ToolInfo> out;
  for (const auto& t : tools_) out.push_back(t.info);
  co_return out;
}

namespace {
ToolResult invoke_guarded(const Tool& tool, const Json& args, const RunContext& ctx) {
  try {
    return tool.handler(args, ctx);
  } catch (const std::exception& e) {
    return core::internal_error("tool '" + tool.info.name() + "' threw: " + e.what());
  } catch (...) {
    return core::internal_error("tool '" + tool.info.name() + "' threw a non-standard exception");
  }
}
}  // namespace

Task<ToolResult> FunctionToolset::call_tool(const ToolCall& call, const RunContext& ctx) {
  auto it = std::find_if(tools_.begin(), tools_.end(),
                         [&](const Tool& t) { return t.info.name() == call.tool_name; });
  if (it == tools_.end())
    co_return core::not_found("toolset '" + id_ + "' has no tool '" + call.tool_name + "'");
  const Tool& tool = *it;
  if (tool.info.sequential || ctx.executor == nullptr)
    co_return invoke_guarded(tool, call.args, ctx);
  co_return co_await offload(ctx.executor,
                             [&tool, &call, &ctx] { return invoke_guarded(tool, call.args, ctx); });
}

// ---------------------------------------------------------------------------------------------
// Wrappers

std::shared_ptr<FilteredToolset> FilteredToolset::excluding(std::shared_ptr<Toolset> wrapped,
                                                            std::vector<std::string> names) {
  return std::make_shared<FilteredToolset>(
      std::move(wrapped), [names = std::move(names)](const RunContext&, const ToolInfo& t) {
        return std::find(names.begin(), names.end(), t.name()) == names.end();
      });
}

Task<Result<std::vector<ToolInfo>>> FilteredToolset::get_tools(const RunContext& ctx) {
  auto tools = co_await wrapped_->get_tools(ctx);
  if (!tools.ok()) co_return tools;
  std::vector<ToolInfo> out;
  for (auto& t : *tools) {
    if (keep_(ctx, t)) out.push_back(std::move(t));
  }
  co_return out;
}

Task<ToolResult> FilteredToolset::call_tool(const ToolCall& call, const RunContext& ctx) {
  auto tools = co_await wrapped_->get_tools(ctx);
  if (!tools.ok()) co_return std::move(tools).error();
  for (const auto& t : *tools) {
    if (t.name() == call.tool_name && keep_(ctx, t))
      co_return co_await wrapped_->call_tool(call, ctx);
  }
  co_return core::not_found("tool '" + call.tool_name + "' is not available");
}

Task<Result<std::vector<ToolInfo>>> PrefixedToolset::get_tools(const RunContext& ctx) {
  auto tools = co_await wrapped_->get_tools(ctx);
  if (!tools.ok()) co_return tools;
  for (auto& t : *tools) t.definition.name = prefix_ + "_" + t.definition.name;
  co_return tools;
}

Task<ToolResult> PrefixedToolset::call_tool(const ToolCall& call, const RunContext& ctx) {
  const std::string p = prefix_ + "_";
  if (call.tool_name.rfind(p, 0) != 0) {
    co_return core::not_found("tool '" + call.tool_name + "' does not start with '" + p + "'");
  }
  ToolCall inner = call;
  inner.tool_name = call.tool_name.substr(p.size());
  RunContext inner_ctx = ctx;
  inner_ctx.tool_name = inner.tool_name;
  co_return co_await wrapped_->call_tool(inner, inner_ctx);
}

Task<Result<std::vector<ToolInfo>>> RenamedToolset::get_tools(const RunContext& ctx) {
  auto tools = co_await wrapped_->get_tools(ctx);
  if (!tools.ok()) co_return tools;
  for (auto& t : *tools) {
    for (const auto& [new_name, old_name] : new_to_old_) {
      if (t.definition.name == old_name) {
        t.definition.name = new_name;
        break;
      }
    }
  }
  co_return tools;
}

Task<ToolResult> RenamedToolset::call_tool(const ToolCall& call, const RunContext& ctx) {
  ToolCall inner = call;
  auto it = new_to_old_.find(call.tool_name);
  if (it != new_to_old_.end()) {
    inner.tool_name = it->second;
  } else {
    for (const auto& [new_name, old_name] : new_to_old_) {
      if (old_name == call.tool_name)
        co_return core::not_found("tool '" + call.tool_name + "' was renamed to '" + new_name +
                                  "'");
    }
  }
  RunContext inner_ctx = ctx;
  inner_ctx.tool_name = inner.tool_name;
  co_return co_await wrapped_->call_tool(inner, inner_ctx);
}

Task<Result<std::vector<ToolInfo>>> CombinedToolset::get_tools(const RunContext& ctx) {
  std::vector<ToolInfo> out;
  std::map<std::string, size_t> route;
  for (size_t i = 0; i < toolsets_.size(); ++i) {
    auto tools = co_await toolsets_[i]->get_tools(ctx);
    if (!tools.ok())
      co_return std::move(tools).error().with_context("toolset '" + toolsets_[i]->id() + "'");
    for (auto& t : *tools) {
      auto [it, inserted] = route.emplace(t.name(), i);
      if (!inserted) {
        co_return core::invalid_argument("tool name conflict: '" + t.name() +
                                         "' is defined by toolset '" + toolsets_[it->second]->id() +
                                         "' and by toolset '" + toolsets_[i]->id() +
                                         "'; rename one (PrefixedToolset or RenamedToolset)");
      }
      out.push_back(std::move(t));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    route_ = std::move(route);
  }
  co_return out;
}

Task<ToolResult> CombinedToolset::call_tool(const ToolCall& call, const RunContext& ctx) {
  std::optional<size_t> index;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = route_.find(call.tool_name); it != route_.end()) index = it->second;
  }
  if (!index) {
    auto listed = co_await get_tools(ctx);
    if (!listed.ok()) co_return std::move(listed).error();
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = route_.find(call.tool_name); it != route_.end()) index = it->second;
  }
  if (!index) co_return core::not_found("no toolset has a tool named '" + call.tool_name + "'");
  co_return co_await toolsets_[*index]->call_tool(call, ctx);
}

}  // namespace codeact::agent
