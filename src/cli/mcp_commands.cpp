// `codeact mcp ...`: the MCP servers of app_conf.yml from the command line, and the glue that
// lets `codeact sandbox exec --mcp/--functions` call their tools from a cell.
#include <fmt/format.h>

#include <iostream>

#include "cli_context.hpp"
#include "codeact/core/json.hpp"
#include "codeact/core/strings.hpp"
#include "codeact/functions/sandbox_functions.hpp"
#include "codeact/mcp/server_set.hpp"

namespace codeact::cli {

using core::Json;

core::Result<sandbox::ExecuteResult> execute_with_tools(
    sandbox::SandboxManager& manager, const std::string& id, sandbox::ExecuteRequest request,
    const std::vector<std::string>& mcp_servers, const std::vector<std::string>& function_files,
    const std::string& config_path) {
  functions::SandboxFunctionsOptions o;
  if (!mcp_servers.empty()) {
    CODEACT_TRY(auto set, mcp::McpServerSet::from_config_file(config_path));
    for (const auto& s : mcp_servers) {
      if (!set->contains(s))
        CODEACT_TRY_STATUS(set->client(s));  // NotFound listing the configured ones
    }
    o.mcp = set;
    o.mcp_servers = mcp_servers;
  }
  for (const auto& f : function_files) {
    CODEACT_TRY(auto src, functions::PythonFunctionSource::from_file(f));
    o.python_functions.push_back(std::move(src));
  }
  functions::SandboxFunctions tools(std::move(o));
  return tools.execute(manager, id, std::move(request));
}

void add_mcp_commands(CLI::App& app, ExitCode& exit) {
  auto* mcp_cmd = app.add_subcommand("mcp", "MCP servers configured in app_conf.yml (mcp_servers)");
  mcp_cmd->require_subcommand(1);

  // ls
  {
    auto* cmd = mcp_cmd->add_subcommand(
        "ls", "List configured MCP servers with their tools and Python signatures");
    auto json = std::make_shared<bool>(false);
    auto config = std::make_shared<std::string>();
    auto names = std::make_shared<std::vector<std::string>>();
    cmd->add_option("NAME", *names, "Only these servers");
    cmd->add_flag("--json", *json, "Print JSON");
    cmd->add_option(
        "--config", *config,
        "app_conf.yml to read (default: $APP_CONFIG_PATH, ./, ~/.config/codeact/, /etc/codeact/)");
    cmd->callback([=, &exit] {
      auto set = mcp::McpServerSet::from_config_file(*config);
      if (!set.ok()) {
        exit.value = report(set.error());
        return;
      }
      std::vector<std::string> wanted = names->empty() ? (*set)->names() : *names;
      Json out = Json::array();
      int status = kExitOk;
      std::map<std::string, std::string> seen;  // callable name -> server, to flag duplicates
      for (const auto& name : wanted) {
        Json s{{"name", name}};
        auto client = (*set)->client(name);
        if (client.ok()) {
          s["config"] = (*client)->config().to_json(/*redact=*/true);
          auto tools = (*client)->list_tools();
          if (tools.ok()) {
            auto info = (*client)->server_info();
            s["server"] = Json{{"name", info.name},
                               {"version", info.version},
                               {"protocol", info.protocol_version}};
            Json list = Json::array();
            for (const auto& t : *tools) {
              Json tj = t.to_json();
              auto bound = mcp::bind_tools({{name, t}});
              if (bound.ok()) {
                const auto& p = (*bound)[0].python;
                tj["python"] = Json{{"name", p.name},
                                    {"signature", p.signature},
                                    {"doc", p.doc},
                                    {"text", p.text()}};
                if (seen.count(p.name)) {
                  tj["conflict"] = fmt::format("also offered by server '{}'", seen[p.name]);
                } else {
                  seen[p.name] = name;
                }
              } else {
                tj["error"] = bound.error().message();
              }
              list.push_back(std::move(tj));
            }
            s["ok"] = true;
            s["tools"] = std::move(list);
          } else {
            s["ok"] = false;
            s["error"] = tools.error().to_string();
          }
        } else {
          s["ok"] = false;
          s["error"] = client.error().to_string();
        }
        if (!s["ok"].get<bool>()) status = kExitUnavailable;
        out.push_back(std::move(s));
      }
      (*set)->close();
      if (*json) {
        std::cout << core::dump_json(Json{{"servers", out}}, 2) << "\n";
      } else {
        if (out.empty()) std::cout << "no MCP servers configured (mcp_servers in app_conf.yml)\n";
        for (const auto& s : out) {
          std::string where = s.contains("config") ? s["config"].value("transport", "") : "";
          if (!s["ok"].get<bool>()) {
            std::cout << fmt::format("{}  ERROR  {}\n\n", s["name"].get<std::string>(),
                                     s.value("error", ""));
            continue;
          }
          std::cout << fmt::format(
              "{}  ({}: {})  {} tool(s)\n", s["name"].get<std::string>(), where,
              s["config"].value("url", s["config"].value("command", "")), s["tools"].size());
          for (const auto& t : s["tools"]) {
            if (t.contains("python"))
              std::cout << core::indent(t["python"]["text"].get<std::string>(), "    ");
            if (t.contains("conflict"))
              std::cout << "    # NOTE: " << t["conflict"].get<std::string>() << "\n";
            if (t.contains("error"))
              std::cout << "    # " << t["name"].get<std::string>() << ": "
                        << t["error"].get<std::string>() << "\n";
            std::cout << "\n";
          }
        }
      }
      exit.value = status;
    });
  }

  // call
  {
    auto* cmd = mcp_cmd->add_subcommand("call", "Call one tool of a configured MCP server");
    auto server = std::make_shared<std::string>();
    auto tool = std::make_shared<std::string>();
    auto args = std::make_shared<std::string>("{}");
    auto json = std::make_shared<bool>(false);
    auto config = std::make_shared<std::string>();
    auto timeout = std::make_shared<double>(0);
    cmd->add_option("NAME", *server, "Server name (a key of mcp_servers)")->required();
    cmd->add_option("TOOL", *tool, "Tool name as the server advertises it")->required();
    cmd->add_option("ARGS", *args, "Arguments as a JSON object (default {})");
    cmd->add_flag("--json", *json, "Print the raw result (content, structuredContent, isError)");
    cmd->add_option("--config", *config, "app_conf.yml to read");
    cmd->add_option("--timeout", *timeout,
                    "Seconds to wait for the answer (default: the server's timeout)");
    cmd->callback([=, &exit] {
      auto parsed = core::parse_json(*args, "tool arguments");
      if (!parsed.ok() || !parsed->is_object()) {
        exit.value = report(
            core::invalid_argument(fmt::format("ARGS must be a JSON object, got: {}", *args)));
        return;
      }
      auto set = mcp::McpServerSet::from_config_file(*config);
      if (!set.ok()) {
        exit.value = report(set.error());
        return;
      }
      auto r = (*set)->call(*server, *tool, *parsed,
                            std::chrono::milliseconds(static_cast<int64_t>(*timeout * 1000)));
      (*set)->close();
      if (!r.ok()) {
        exit.value = report(r.error());
        return;
      }
      if (*json) {
        Json out{{"isError", r->is_error}, {"content", r->content}};
        if (!r->structured.is_null()) out["structuredContent"] = r->structured;
        std::cout << core::dump_json(out, 2) << "\n";
      } else if (r->is_error) {
        std::cerr << "codeact: tool " << *tool << " failed: " << r->text() << "\n";
      } else if (!r->structured.is_null()) {
        std::cout << core::dump_json(r->structured, 2) << "\n";
      } else {
        for (const auto& c : r->content) {
          std::string type = core::json_string(c, "type");
          if (type == "text") {
            std::cout << core::json_string(c, "text") << "\n";
          } else if (type == "image" || type == "audio") {
            std::cout << fmt::format("[{} {}, {} base64 chars]\n", type,
                                     core::json_string(c, "mimeType"),
                                     core::json_string(c, "data").size());
          } else {
            std::cout << core::dump_json(c) << "\n";
          }
        }
      }
      exit.value = r->is_error ? kExitCellRaised : kExitOk;
    });
  }
}

}  // namespace codeact::cli
