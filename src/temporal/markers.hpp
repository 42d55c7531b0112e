// The markers workflow code records (RecordMarker commands, MarkerRecorded events): side
// effects ("SideEffect", details seq + data) and patches ("core_patch", the official SDKs'
// format: details {"patch-data": {"id": ..., "deprecated": ...}}, so histories written by this
// SDK and by the Python SDK replay in both). Pure functions.
#pragma once

#include <optional>
#include <string>

#include "temporal/api/command/v1/message.pb.h"
#include "temporal/api/history/v1/message.pb.h"

namespace codeact::temporal::internal {

inline constexpr const char* kSideEffectMarker = "SideEffect";
inline constexpr const char* kPatchMarker = "core_patch";
inline constexpr const char* kPatchDataKey = "patch-data";

struct PatchMarker {
  std::string id;
  bool deprecated = false;
};

// The patch a RecordMarker command / MarkerRecorded event records; nullopt for any other marker,
// any other command or event, or patch details that are not {"id": string, ...}.
std::optional<PatchMarker> patch_marker(const ::temporal::api::command::v1::Command& c);
std::optional<PatchMarker> patch_marker(const ::temporal::api::history::v1::HistoryEvent& e);

}  // namespace codeact::temporal::internal
