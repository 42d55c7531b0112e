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

using Details = google::protobuf::Map<std::string, ::temporal::api::common::v1::Payloads>;

// {"seconds": s, "nanos": n}, as the official SDKs write a marker's timestamps and durations.
Json seconds_nanos(std::chrono::nanoseconds d) {
  auto s = std::chrono::duration_cast<std::chrono::seconds>(d);
  return Json{{"seconds", s.count()}, {"nanos", (d - s).count()}};
}
std::chrono::nanoseconds from_seconds_nanos(const Json& j) {
  if (!j.is_object()) return std::chrono::nanoseconds(0);
  int64_t s = j.value("seconds", Json(0)).is_number_integer() ? j["seconds"].get<int64_t>() : 0;
  int64_t n = j.value("nanos", Json(0)).is_number_integer() ? j["nanos"].get<int64_t>() : 0;
  return std::chrono::seconds(s) + std::chrono::nanoseconds(n);
}

// The "data" of a local activity marker, when it is one.
std::optional<Json> local_activity_data(const std::string& name, const Details& details) {
  if (name != kLocalActivityMarker) return std::nullopt;
  auto it = details.find("data");
  if (it == details.end()) return std::nullopt;
  Args data = decode_payloads(it->second);
  if (data.empty() || !data[0].is_object() || !data[0].contains("seq") ||
      !data[0]["seq"].is_number_integer())
    return std::nullopt;
  return data[0];
}

}  // namespace

::temporal::api::command::v1::Command local_activity_marker_command(const LocalActivityMarker& m) {
  ::temporal::api::command::v1::Command cmd;
  cmd.set_command_type(enumsv1::COMMAND_TYPE_RECORD_MARKER);
  auto* a = cmd.mutable_record_marker_command_attributes();
  a->set_marker_name(kLocalActivityMarker);
  Json data{{"seq", m.seq},
            {"attempt", m.attempt},
            {"activity_id", m.activity_id},
            {"activity_type", m.activity_type},
            {"complete_time", seconds_nanos(m.complete_time.time_since_epoch())},
            {"backoff", m.backoff ? seconds_nanos(*m.backoff) : Json(nullptr)},
            {"original_schedule_time", seconds_nanos(m.original_schedule_time.time_since_epoch())}};
  encode_payloads(Args{data}, &(*a->mutable_details())["data"]);
  if (m.result) encode_payloads(Args{*m.result}, &(*a->mutable_details())["result"]);
  if (m.failure) encode_failure(*m.failure, a->mutable_failure());
  return cmd;
}

std::optional<LocalActivityMarker> local_activity_marker(
    const ::temporal::api::history::v1::HistoryEvent& e) {
  if (!e.has_marker_recorded_event_attributes()) return std::nullopt;
  const auto& a = e.marker_recorded_event_attributes();
  auto data = local_activity_data(a.marker_name(), a.details());
  if (!data) return std::nullopt;
  LocalActivityMarker m;
  m.seq = (*data)["seq"].get<int64_t>();
  if (data->contains("attempt") && (*data)["attempt"].is_number_integer())
    m.attempt = (*data)["attempt"].get<int>();
  if (data->contains("activity_id") && (*data)["activity_id"].is_string())
    m.activity_id = (*data)["activity_id"].get<std::string>();
  if (data->contains("activity_type") && (*data)["activity_type"].is_string())
    m.activity_type = (*data)["activity_type"].get<std::string>();
  if (data->contains("backoff") && (*data)["backoff"].is_object())
    m.backoff = std::chrono::duration_cast<std::chrono::milliseconds>(
        from_seconds_nanos((*data)["backoff"]));
  m.complete_time = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          from_seconds_nanos(data->value("complete_time", Json()))));
  m.original_schedule_time = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          from_seconds_nanos(data->value("original_schedule_time", Json()))));
  if (a.has_failure()) {
    m.failure = decode_failure(a.failure());
  } else {
    auto r = a.details().find("result");
    Args out = r == a.details().end() ? Args{} : decode_payloads(r->second);
    m.result = out.empty() ? Json(nullptr) : std::move(out[0]);
  }
  return m;
}

std::optional<int64_t> local_activity_seq(const ::temporal::api::command::v1::Command& c) {
  if (c.command_type() != enumsv1::COMMAND_TYPE_RECORD_MARKER) return std::nullopt;
  const auto& a = c.record_marker_command_attributes();
  auto data = local_activity_data(a.marker_name(), a.details());
  if (!data) return std::nullopt;
  return (*data)["seq"].get<int64_t>();
}

std::optional<int64_t> local_activity_seq(const ::temporal::api::history::v1::HistoryEvent& e) {
  if (!e.has_marker_recorded_event_attributes()) return std::nullopt;
  const auto& a = e.marker_recorded_event_attributes();
  auto data = local_activity_data(a.marker_name(), a.details());
  if (!data) return std::nullopt;
  return (*data)["seq"].get<int64_t>();
}

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
