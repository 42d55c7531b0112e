// Conversions between the SDK's values (Json, Args, Failure, durations) and Temporal's protos.
#pragma once

#include <chrono>

#include "codeact/temporal/failure.hpp"
#include "codeact/temporal/payload.hpp"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/timestamp.pb.h"
#include "temporal/api/common/v1/message.pb.h"
#include "temporal/api/failure/v1/message.pb.h"

namespace codeact::temporal::internal {

namespace commonv1 = ::temporal::api::common::v1;
namespace failurev1 = ::temporal::api::failure::v1;

void encode_payload(const Json& value, commonv1::Payload* out);
// JSON of a json/plain payload; binary/plain as a string, binary/null as null. A json/plain
// payload that is not JSON decodes as its text; one nested past core::kMaxJsonDepth as
// {"undecodable_payload": "<why>"}, which no strict reader accepts.
Json decode_payload(const commonv1::Payload& payload);
void encode_payloads(const Args& args, commonv1::Payloads* out);
Args decode_payloads(const commonv1::Payloads& payloads);

// Each key of `memo` (REQUIRES: an object) as a field of `out`, its value encoded as a payload.
void encode_memo(const Json& memo, commonv1::Memo* out);
// The fields of `memo` decoded (decode_payload) into an object; {} when it has none.
Json decode_memo(const commonv1::Memo& memo);

void encode_failure(const Failure& failure, failurev1::Failure* out);
Failure decode_failure(const failurev1::Failure& failure);

void set_duration(std::chrono::milliseconds d, google::protobuf::Duration* out);
std::chrono::milliseconds to_millis(const google::protobuf::Duration& d);
std::chrono::system_clock::time_point to_time_point(const google::protobuf::Timestamp& t);
// `t` as core::format_rfc3339; "" for the zero (unset) timestamp.
std::string to_rfc3339(const google::protobuf::Timestamp& t);

}  // namespace codeact::temporal::internal
