#include "openapi.hpp"

#include <fmt/format.h>

namespace codeact::server {
namespace {

using core::Json;

Json ref(const std::string& name) { return Json{{"$ref", "#/components/schemas/" + name}}; }

Json json_response(const std::string& description, const Json& schema) {
  return Json{{"description", description},
              {"content", {{"application/json", {{"schema", schema}}}}}};
}

Json errors(std::initializer_list<int> statuses) {
  Json out = Json::object();
  for (int s : statuses) out[std::to_string(s)] = json_response("error", ref("Error"));
  return out;
}

Json op(const std::string& summary, Json responses, std::initializer_list<int> error_statuses,
        Json body = nullptr, Json params = Json::array()) {
  Json o{{"summary", summary}, {"responses", std::move(responses)}};
  const Json errs = errors(error_statuses);  // kept: items() refers to it
  for (const auto& [k, v] : errs.items()) o["responses"][k] = v;
  if (!body.is_null()) o["requestBody"] = std::move(body);
  if (!params.empty()) o["parameters"] = std::move(params);
  return o;
}

Json json_body(const Json& schema, bool required = true) {
  return Json{{"required", required}, {"content", {{"application/json", {{"schema", schema}}}}}};
}

Json path_param(const std::string& name) {
  return Json{{"name", name}, {"in", "path"}, {"required", true}, {"schema", {{"type", "string"}}}};
}

Json build() {
  Json schemas{
      {"Error",
       {{"type", "object"},
        {"required", {"error"}},
        {"properties",
         {{"error",
           {{"type", "object"},
            {"required", {"code", "message"}},
            {"properties",
             {{"code", {{"type", "string"}}}, {"message", {{"type", "string"}}}}}}}}}}},
      {"Turn",
       {{"type", "object"},
        {"properties",
         {{"task", {{"type", "string"}}},
          {"output", {{"type", {"string", "null"}}}},
          {"files", {{"type", "array"}, {"items", {{"type", "string"}}}}},
          {"usage", {{"type", "object"}}},
          {"error", {{"type", {"string", "null"}}}},
          {"message_id", {{"type", "string"}}},
          {"checkpoint",
           {{"type", "object"},
            {"description",
             "the checkpoint the turn's last cell made: {sandbox, checkpoint}"}}}}}}},
      {"Resource",
       {{"type", "object"},
        {"required", {"id", "kind", "status"}},
        {"properties",
         {{"id", {{"type", "string"}}},
          {"kind", {{"type", "string"}, {"enum", {"session", "run"}}}},
          {"status", {{"type", "string"}}},
          {"title", {{"type", "string"}}},
          {"created_at", {{"type", "string"}}},
          {"model", {{"type", "string"}}},
          {"sandbox_id", {{"type", "string"}}},
          {"turns", {{"type", "array"}, {"items", ref("Turn")}}},
          {"task", {{"type", "string"}}},
          {"output", {{"type", "string"}}},
          {"files", {{"type", "array"}, {"items", {{"type", "string"}}}}},
          {"usage", {{"type", "object"}}},
          {"error", {{"type", "string"}}},
          {"message_id",
           {{"type", "string"}, {"description", "a new session's first message's id"}}},
          {"forked_from",
           {{"type", "object"},
            {"description", "a forked session's source: {session, turn, checkpoint}"}}}}}}},
      {"Accepted",
       {{"type", "object"},
        {"properties",
         {{"accepted", {{"type", "boolean"}}},
          {"status", {{"type", "string"}}},
          {"message_id",
           {{"type", "string"},
            {"description",
             "a sent message's id: the turn that answers it has it as "
             "message_id"}}}}}}},
      {"Files",
       {{"type", "object"},
        {"required", {"files"}},
        {"properties",
         {{"files",
           {{"type", "array"},
            {"items",
             {{"type", "object"},
              {"properties",
               {{"path", {{"type", "string"}}},
                {"size", {{"type", "integer"}}},
                {"mtime", {{"type", "number"}}}}}}}}}}}}},
  };
  // What the handlers accept: every field named, text with something in it (text_field).
  const Json text{{"type", "string"}, {"pattern", "\\S"}};
  // null is the default, as if the field were left out; packages need "network": true.
  const Json run_fields{
      {"model", {{"type", {"string", "null"}}}},
      {"agent", {{"type", {"string", "null"}}}},
      {"network", {{"type", {"boolean", "null"}}}},
      {"packages",
       {{"type", {"array", "null"}}, {"items", {{"type", "string"}, {"minLength", 1}}}}}};
  auto closed_object = [](Json properties, Json required = Json::array()) {
    Json o{
        {"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
    if (!required.empty()) o["required"] = std::move(required);
    return o;
  };
  Json session_fields = run_fields;
  session_fields["message"] = text;
  Json task_fields = run_fields;
  task_fields["task"] = text;
  const Json session_create = closed_object(session_fields);
  const Json run_create = closed_object(task_fields, {"task"});
  Json bytes{{"description", "the file's bytes"},
             {"content", {{"*/*", {{"schema", {{"type", "string"}, {"format", "binary"}}}}}}}};
  Json paths = Json::object();
  paths["/health"]["get"] =
      op("Liveness and what the server reaches",
         {{"200", json_response("ok", {{"type", "object"},
                                       {"properties",
                                        {{"status", {{"type", "string"}}},
                                         {"temporal_connected", {{"type", "boolean"}}},
                                         {"sandbox_initialized", {{"type", "boolean"}}}}}})}},
         {});
  paths["/chat"]["post"] =
      op("Send a message and wait for the answer (the seed's endpoint)",
         {{"200",
           json_response("the answer",
                         {{"type", "object"},
                          {"properties",
                           {{"message", {{"type", "string"}}},
                            {"container_id", {{"type", "string"}}},
                            {"file_paths", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                            {"workflow_id", {{"type", "string"}}}}}})}},
         {400, 401, 404, 409, 429, 500, 504},
         json_body({{"type", "object"},
                    {"required", {"task"}},
                    {"properties", {{"task", text}, {"workflow_id", {{"type", "string"}}}}}}));
  paths["/download_file"]["get"] =
      op("Download a file of one of the caller's sandboxes (the seed's endpoint)", {{"200", bytes}},
         {400, 401, 403, 404}, nullptr,
         Json::array({{{"name", "container_id"},
                       {"in", "query"},
                       {"required", true},
                       {"schema", {{"type", "string"}}}},
                      {{"name", "file_path"},
                       {"in", "query"},
                       {"required", true},
                       {"schema", {{"type", "string"}}}}}));
  paths["/v1/login"]["post"] =
      op("Log the page in with an API key (sets an HttpOnly session cookie)",
         {{"200", json_response("logged in", {{"type", "object"},
                                              {"properties",
                                               {{"principal", {{"type", "string"}}},
                                                {"csrf_token", {{"type", "string"}}}}}})}},
         {400, 401},
         json_body(
             {{"type", "object"}, {"required", {"api_key"}}, {"properties", {{"api_key", text}}}}));
  paths["/v1/logout"]["post"] =
      op("End the cookie session", {{"204", {{"description", "done"}}}}, {401, 403});
  paths["/v1/me"]["get"] =
      op("Who the caller is",
         {{"200", json_response("the caller", {{"type", "object"},
                                               {"properties",
                                                {{"principal", {{"type", "string"}}},
                                                 {"auth", {{"type", "string"}}},
                                                 {"login_required", {{"type", "boolean"}}},
                                                 {"csrf_token", {{"type", "string"}}}}}})}},
         {401});
  for (const std::string kind : {"sessions", "runs"}) {
    const std::string base = "/v1/" + kind;
    const std::string one = base + "/{id}";
    const Json id = Json::array({path_param("id")});
    paths[base]["post"] = op(
        kind == "sessions" ? "Start a session (a chat with one sandbox)" : "Start a run (one task)",
        {{"201", json_response("created", ref("Resource"))}}, {400, 401, 403, 429},
        json_body(kind == "sessions" ? session_create : run_create, kind == "runs"));
    paths[base]["get"] = op(
        "The caller's " + kind,
        {{"200", json_response(
                     "the list",
                     {{"type", "object"},
                      {"properties", {{kind, {{"type", "array"}, {"items", ref("Resource")}}}}}})}},
        {401});
    paths[one]["get"] =
        op("One of the caller's " + kind, {{"200", json_response("it", ref("Resource"))}},
           {401, 404}, nullptr, id);
    paths[one]["delete"] =
        op("End it and remove its sandbox (?volume=true: and its volume)",
           {{"204", {{"description", "deleted"}}}}, {401, 403, 404}, nullptr,
           Json::array({path_param("id"),
                        {{"name", "volume"},
                         {"in", "query"},
                         {"required", false},
                         {"schema", {{"type", "string"}, {"enum", {"true", "false"}}}}}}));
    paths[one + "/cancel"]["post"] =
        op("Cancel what runs now", {{"202", json_response("accepted", ref("Accepted"))}},
           {401, 403, 404}, nullptr, id);
    paths[one + "/files"]["get"] =
        op("Files under /output", {{"200", json_response("files", ref("Files"))}}, {401, 404, 503},
           nullptr, id);
    Json file_params = Json::array({path_param("id"), path_param("path")});
    paths[one + "/files/{path}"]["get"] =
        op("Download a file (Range supported)", {{"200", bytes}, {"206", bytes}},
           {401, 403, 404, 416}, nullptr, file_params);
    paths[one + "/files/{path}"]["put"] =
        op("Upload a file into /output",
           {{"201", json_response("written", {{"type", "object"},
                                              {"properties",
                                               {{"path", {{"type", "string"}}},
                                                {"size", {{"type", "integer"}}}}}})}},
           {401, 403, 404, 413},
           Json{{"required", true},
                {"content",
                 {{"application/octet-stream",
                   {{"schema", {{"type", "string"}, {"format", "binary"}}}}}}}},
           file_params);
    paths[one + "/variables"]["get"] =
        op("The sandbox's variables", {{"200", json_response("variables", {{"type", "object"}})}},
           {401, 404, 503}, nullptr, id);
    paths[one + "/events"]["get"] =
        op("Server-Sent Events; Last-Event-ID resumes",
           {{"200",
             {{"description", "the event stream"},
              {"content", {{"text/event-stream", {{"schema", {{"type", "string"}}}}}}}}}},
           {401, 404}, nullptr, id);
  }
  paths["/v1/sessions/{id}/messages"]["post"] =
      op("Send a message to a session", {{"202", json_response("queued", ref("Accepted"))}},
         {400, 401, 403, 404, 429, 503}, json_body(closed_object({{"message", text}}, {"message"})),
         Json::array({path_param("id")}));
  paths["/v1/sessions/{id}/fork"]["post"] =
      op("Start a new session from this one before its turn `turn` (default: after the last): "
         "the turns before it, and a sandbox from the checkpoint its last cell before them left",
         {{"201", json_response("created", ref("Resource"))}}, {400, 401, 403, 404, 429, 503},
         json_body(closed_object({{"turn", {{"type", "integer"}, {"minimum", 1}}}}), false),
         Json::array({path_param("id")}));
  paths["/v1/sessions/{id}/stop"]["post"] =
      op("End the session after the current turn",
         {{"202", json_response("accepted", ref("Accepted"))}}, {401, 403, 404}, nullptr,
         Json::array({path_param("id")}));
  return Json{{"openapi", "3.1.0"},
              {"info",
               {{"title", "codeact server"},
                {"version", "1"},
                {"description", "Durable CodeAct agents over HTTP (docs/server.md)."}}},
              {"components",
               {{"schemas", schemas},
                {"securitySchemes", {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}}}}}},
              {"security", Json::array({{{"bearer", Json::array()}}})},
              {"paths", paths}};
}

std::string escape_html(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

const Json& openapi_document() {
  static const Json doc = build();
  return doc;
}

HttpResponse docs_page() {
  const Json& doc = openapi_document();
  std::string html =
      "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>codeact server "
      "API</title><link rel=\"stylesheet\" href=\"/assets/app.css\"></head><body class=\"docs\">"
      "<main><h1>codeact server API</h1><p>The machine-readable document is <a "
      "href=\"/openapi.json\">/openapi.json</a> (OpenAPI 3.1). Authenticate with "
      "<code>Authorization: Bearer KEY</code>.</p>";
  for (const auto& [path, item] : doc["paths"].items()) {
    for (const auto& [method, o] : item.items()) {
      std::string upper = method;
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      html += fmt::format("<section><h2><code>{} {}</code></h2><p>{}</p><ul>", upper,
                          escape_html(path), escape_html(o.value("summary", "")));
      for (const auto& [status, resp] : o["responses"].items())
        html += fmt::format("<li><code>{}</code> {}</li>", escape_html(status),
                            escape_html(resp.value("description", "")));
      html += "</ul></section>";
    }
  }
  html += "</main></body></html>";
  HttpResponse r;
  r.set("Content-Type", "text/html; charset=utf-8");
  r.set("Content-Security-Policy", "default-src 'none'; style-src 'self'; frame-ancestors 'none'");
  r.body = std::move(html);
  return r;
}

}  // namespace codeact::server
