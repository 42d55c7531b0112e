// The JSON forms of the sandbox value types (sandbox_types.hpp) and size parsing.
#include "codeact/sandbox/sandbox_types.hpp"

#include <fmt/format.h>

#include <regex>

#include "kernel_reply_internal.hpp"

namespace codeact::sandbox {

using core::Result;

Json SandboxInfo::to_json() const {
  return Json{{"id", id},
              {"container_id", container_id},
              {"container_name", container_name},
              {"volume", volume},
              {"image", image},
              {"status", status},
              {"running", running},
              {"network", network},
              {"resumed", resumed},
              {"python_packages", python_packages},
              {"system_packages", system_packages},
              {"disk", disk.empty() ? Json(nullptr) : Json(disk)},
              {"host", host.empty() ? Json(nullptr) : Json(host)},
              {"shared_dir", shared_dir.empty() ? Json(nullptr) : Json(shared_dir)},
              {"epoch", epoch > 0 ? Json(epoch) : Json(nullptr)},
              {"cell", cell},
              {"restore_errors", restore_errors},
              {"lost", lost},
              {"notice", notice.empty() ? Json(nullptr) : Json(notice)}};
}

Json ExecuteResult::to_json() const {
  Json err = nullptr;
  if (error)
    err = Json{{"type", error->type}, {"message", error->message}, {"traceback", error->traceback}};
  return Json{{"ok", ok},
              {"stdout", stdout_text},
              {"stderr", stderr_text},
              {"result", result ? Json(*result) : Json(nullptr)},
              {"error", err},
              {"outputs", outputs},
              {"files", files},
              {"not_persisted", not_persisted},
              {"duration_ms", duration_ms},
              {"execution_id", execution_id.empty() ? Json(nullptr) : Json(execution_id)},
              {"cell", cell},
              {"replayed", replayed},
              {"timed_out", timed_out},
              {"kernel_restarted", kernel_restarted},
              {"notice", notice.empty() ? Json(nullptr) : Json(notice)},
              {"truncated", truncated},
              {"snapshot_ms", snapshot_ms},
              {"checkpoint", checkpoint > 0 ? Json(checkpoint) : Json(nullptr)}};
}

ExecuteResult ExecuteResult::from_json(const Json& j) {
  ExecuteResult r;
  const Json& err = j.contains("error") ? j["error"] : Json();
  r.stdout_text = core::json_string(j, "stdout");
  r.stderr_text = core::json_string(j, "stderr");
  if (j.contains("result") && j["result"].is_string()) r.result = j["result"].get<std::string>();
  if (err.is_object()) {
    r.error = CellError{core::json_string(err, "type"), core::json_string(err, "message"),
                        core::json_string(err, "traceback")};
  }
  std::string status = core::json_string(j, "status");
  r.ok = j.contains("ok") && j["ok"].is_boolean() && !j.contains("status")
             ? j["ok"].get<bool>()
             : (status.empty() ? !r.error : status == "ok");
  r.outputs = json_list(j.value("outputs", Json::array()));
  r.files = string_list(j.value("files", Json::array()));
  r.not_persisted = json_list(j.value("not_persisted", Json::array()));
  r.duration_ms = core::json_int(j, "duration_ms");
  r.execution_id = core::json_string(j, "execution_id");
  r.cell = core::json_int(j, "cell");
  r.replayed = core::json_bool(j, "replayed");
  r.timed_out = core::json_bool(j, "timed_out");
  r.kernel_restarted = core::json_bool(j, "kernel_restarted");
  r.notice = core::json_string(j, "notice");
  r.truncated = j.value("truncated", Json());
  if (r.truncated.is_object() && r.truncated.empty()) r.truncated = nullptr;
  r.snapshot_ms = static_cast<int64_t>(core::json_number(j, "snapshot_ms"));
  r.checkpoint = core::json_int(j, "checkpoint");
  return r;
}

Json Checkpoint::to_json() const {
  return Json{{"n", n},
              {"cell", cell},
              {"execution_id", execution_id.empty() ? Json(nullptr) : Json(execution_id)},
              {"time", time},
              {"changed", changed},
              {"files_changed", files_changed},
              {"not_persisted", not_persisted},
              {"added_bytes", added_bytes},
              {"current", current},
              {"forked_from", forked_from.empty() ? Json(nullptr) : Json(forked_from)}};
}

Checkpoint Checkpoint::from_json(const Json& j) {
  Checkpoint c;
  c.n = core::json_int(j, "n");
  c.cell = core::json_int(j, "cell");
  c.execution_id = core::json_string(j, "execution_id");
  c.time = core::json_number(j, "time");
  c.changed = string_list(j.value("changed", Json::array()));
  c.files_changed = string_list(j.value("files_changed", Json::array()));
  const Json& np = j.contains("not_persisted") ? j["not_persisted"] : Json();
  if (np.is_object()) {
    for (const auto& [name, reason] : np.items()) c.not_persisted.push_back(name);
  }
  c.added_bytes = core::json_int(j, "added_bytes");
  c.current = core::json_bool(j, "current");
  const Json& from = j.contains("forked_from") ? j["forked_from"] : Json();
  if (from.is_object()) {
    c.forked_from = fmt::format("{}@{}", core::json_string(from, "sandbox"),
                                core::json_int(from, "checkpoint"));
  }
  return c;
}

Json CheckpointHistory::to_json() const {
  Json list = Json::array();
  for (const auto& c : checkpoints) list.push_back(c.to_json());
  return Json{{"checkpoints", list},
              {"current", current},
              {"keep_last", keep_last ? Json(*keep_last) : Json(nullptr)},
              {"budget", budget}};
}

Json RewindResult::to_json() const {
  return Json{{"checkpoint", checkpoint},
              {"previous", previous},
              {"restored", restored},
              {"restore_errors", restore_errors},
              {"files_restored", files_restored},
              {"files_removed", files_removed},
              {"files_left", files_left},
              {"replayed", replayed}};
}

RewindResult RewindResult::from_json(const Json& j) {
  RewindResult r;
  r.checkpoint = core::json_int(j, "checkpoint");
  r.previous = core::json_int(j, "previous");
  r.restored = string_list(j.value("restored", Json::array()));
  r.restore_errors = json_list(j.value("restore_errors", Json::array()));
  r.files_restored = core::json_int(j, "files_restored");
  r.files_removed = core::json_int(j, "files_removed");
  r.files_left = string_list(j.value("files_left", Json::array()));
  r.replayed = core::json_bool(j, "replayed");
  return r;
}

Json ForkResult::to_json() const {
  return Json{{"sandbox", sandbox.to_json()},           {"source", source},
              {"source_checkpoint", source_checkpoint}, {"restored", restored},
              {"restore_errors", restore_errors},       {"files_left", files_left}};
}

Json BashResult::to_json() const {
  return Json{
      {"exit_code", exit_code},     {"stdout", stdout_text},
      {"stderr", stderr_text},      {"timed_out", timed_out},
      {"duration_ms", duration_ms}, {"notice", notice.empty() ? Json(nullptr) : Json(notice)}};
}

Json InstallResult::to_json() const {
  return Json{{"ok", ok},
              {"installed", installed},
              {"output", output},
              {"image", image.empty() ? Json() : Json(image)}};
}

Result<int64_t> parse_size(const std::string& text) {
  static const std::regex re(R"(^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMgGtT]?)[iI]?[bB]?\s*$)");
  std::smatch m;
  if (!std::regex_match(text, m, re)) {
    return core::invalid_argument(fmt::format("\"{}\" is not a size; write e.g. 512m or 2g", text));
  }
  double v = std::stod(m[1].str());
  switch (m[2].str().empty() ? ' ' : std::tolower(m[2].str()[0])) {
    case 'k':
      v *= 1024;
      break;
    case 'm':
      v *= 1024 * 1024;
      break;
    case 'g':
      v *= 1024.0 * 1024 * 1024;
      break;
    case 't':
      v *= 1024.0 * 1024 * 1024 * 1024;
      break;
    default:
      break;
  }
  return static_cast<int64_t>(v);
}

}  // namespace codeact::sandbox
