// The markers workflow code records (RecordMarker commands, MarkerRecorded events): side
// effects ("SideEffect", details seq + data), patches ("core_patch", the official SDKs'
// format: details {"patch-data": {"id": ..., "deprecated": ...}}) and local activities
// ("core_local_activity", the official SDKs' format: details {"data": {"seq", "attempt",
// "activity_id", "activity_type", "complete_time", "backoff", "original_schedule_time"},
// "result": payload}, a failure in the marker's failure), so histories written by this SDK and
// by the Python SDK replay in both. Pure functions.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "codeact/temporal/failure.hpp"
#include "codeact/temporal/payload.hpp"
#include "temporal/api/command/v1/message.pb.h"
#include "temporal/api/history/v1/message.pb.h"

namespace codeact::temporal::internal {

inline constexpr const char* kSideEffectMarker = "SideEffect";
inline constexpr const char* kPatchMarker = "core_patch";
inline constexpr const char* kPatchDataKey = "patch-data";
inline constexpr const char* kLocalActivityMarker = "core_local_activity";

struct PatchMarker {
  std::string id;
  bool deprecated = false;
};

// The patch a RecordMarker command / MarkerRecorded event records; nullopt for any other marker,
// any other command or event, or patch details that are not {"id": string, ...}.
std::optional<PatchMarker> patch_marker(const ::temporal::api::command::v1::Command& c);
std::optional<PatchMarker> patch_marker(const ::temporal::api::history::v1::HistoryEvent& e);

// What a local activity's marker records: its outcome (result or failure) and, when its
// remaining attempts were handed to a normal activity, the backoff before them.
struct LocalActivityMarker {
  int64_t seq = 0;  // the workflow's activity sequence number (shared with normal activities)
  int attempt = 1;  // the attempt that gave the outcome
  std::string activity_id;
  std::string activity_type;
  std::optional<Json> result;                        // set on success
  std::optional<Failure> failure;                    // set otherwise
  std::optional<std::chrono::milliseconds> backoff;  // set when it goes on as an activity
  std::chrono::system_clock::time_point complete_time{};
  std::chrono::system_clock::time_point original_schedule_time{};
};

::temporal::api::command::v1::Command local_activity_marker_command(const LocalActivityMarker& m);
// The local activity a MarkerRecorded event records; nullopt for any other event or marker, or
// marker data without an integer "seq".
std::optional<LocalActivityMarker> local_activity_marker(
    const ::temporal::api::history::v1::HistoryEvent& e);
// The seq of a local activity marker command or event; nullopt for anything else.
std::optional<int64_t> local_activity_seq(const ::temporal::api::command::v1::Command& c);
std::optional<int64_t> local_activity_seq(const ::temporal::api::history::v1::HistoryEvent& e);

}  // namespace codeact::temporal::internal
