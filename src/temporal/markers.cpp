#include "markers.hpp"

#include "codec.hpp"

namespace codeact::temporal::internal {
namespace {

namespace enumsv1 = ::temporal::api::enums::v1;

std::optional<PatchMarker> patch_marker(
    const std::string& name,
    const google::protobuf::Map<std::string, ::temporal::api::common::v1::Payloads>& details) {
  if (name != kPatchMarker) return std::nullopt;
  auto it = details.find(kPatchDataKey);
  if (it == details.end()) return std::nullopt;
  Args data = decode_payloads(it->second);
  if (data.empty() || !data[0].is_object() || !data[0].contains("id") || !data[0]["id"].is_string())
    return std::nullopt;
  return PatchMarker{data[0]["id"].get<std::string>(), data[0].value("deprecated", false)};
}

}  // namespace

std::optional<PatchMarker> patch_marker(const ::temporal::api::command::v1::Command& c) {
  if (c.command_type() != enumsv1::COMMAND_TYPE_RECORD_MARKER) return std::nullopt;
  const auto& a = c.record_marker_command_attributes();
  return patch_marker(a.marker_name(), a.details());
}

std::optional<PatchMarker> patch_marker(const ::temporal::api::history::v1::HistoryEvent& e) {
  if (!e.has_marker_recorded_event_attributes()) return std::nullopt;
  const auto& a = e.marker_recorded_event_attributes();
  return patch_marker(a.marker_name(), a.details());
}

}  // namespace codeact::temporal::internal
