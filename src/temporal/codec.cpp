#include "codec.hpp"

#include "codeact/core/json.hpp"
#include "codeact/core/time.hpp"

namespace codeact::temporal::internal {

namespace {
constexpr const char* kEncoding = "encoding";
constexpr const char* kSdkSource = "CppSDK";

std::string timeout_type_name(::temporal::api::enums::v1::TimeoutType t) {
  using namespace ::temporal::api::enums::v1;
  switch (t) {
    case TIMEOUT_TYPE_START_TO_CLOSE:
      return "StartToClose";
    case TIMEOUT_TYPE_SCHEDULE_TO_START:
      return "ScheduleToStart";
    case TIMEOUT_TYPE_SCHEDULE_TO_CLOSE:
      return "ScheduleToClose";
    case TIMEOUT_TYPE_HEARTBEAT:
      return "Heartbeat";
    default:
      return "Unspecified";
  }
}
}  // namespace

void encode_payload(const Json& value, commonv1::Payload* out) {
  if (value.is_null()) {
    (*out->mutable_metadata())[kEncoding] = "binary/null";
    out->clear_data();
    return;
  }
  (*out->mutable_metadata())[kEncoding] = "json/plain";
  out->set_data(core::dump_json(value));
}

Json decode_payload(const commonv1::Payload& payload) {
  auto it = payload.metadata().find(kEncoding);
  std::string encoding = it == payload.metadata().end() ? "json/plain" : it->second;
  if (encoding == "binary/null") return nullptr;
  if (encoding == "binary/plain") return Json(payload.data());
  auto parsed = core::parse_json(payload.data(), "payload");
  if (!parsed.ok()) {
    // Nested too deep to read safely: an object no typed payload accepts (strict readers name
    // the unknown key), never the raw text, which a chat would take for a message.
    if (core::json_nests_deeper_than(payload.data()))
      return Json{{"undecodable_payload", parsed.error().message()}};
    return Json(payload.data());
  }
  return std::move(parsed).value();
}

void encode_payloads(const Args& args, commonv1::Payloads* out) {
  out->clear_payloads();
  for (const auto& a : args) encode_payload(a, out->add_payloads());
}

Args decode_payloads(const commonv1::Payloads& payloads) {
  Args args;
  args.reserve(payloads.payloads_size());
  for (const auto& p : payloads.payloads()) args.push_back(decode_payload(p));
  return args;
}

void encode_memo(const Json& memo, commonv1::Memo* out) {
  out->clear_fields();
  for (const auto& [key, value] : memo.items())
    encode_payload(value, &(*out->mutable_fields())[key]);
}

Json decode_memo(const commonv1::Memo& memo) {
  Json out = Json::object();
  for (const auto& [key, payload] : memo.fields()) out[key] = decode_payload(payload);
  return out;
}

void encode_failure(const Failure& f, failurev1::Failure* out) {
  out->set_message(f.message);
  out->set_source(kSdkSource);
  out->set_stack_trace(f.stack_trace);
  switch (f.kind) {
    case FailureKind::kCanceled: {
      auto* info = out->mutable_canceled_failure_info();
      if (f.details.is_array() && !f.details.empty())
        encode_payloads(f.details.get<Args>(), info->mutable_details());
      break;
    }
    case FailureKind::kTimeout:
    case FailureKind::kTerminated:
    case FailureKind::kServer:
    case FailureKind::kActivity:
    case FailureKind::kRpc:
    case FailureKind::kOther:
    case FailureKind::kApplication: {
      auto* info = out->mutable_application_failure_info();
      info->set_type(f.type.empty() ? std::string(failure_kind_name(f.kind)) : f.type);
      info->set_non_retryable(f.non_retryable);
      if (f.details.is_array() && !f.details.empty())
        encode_payloads(f.details.get<Args>(), info->mutable_details());
      break;
    }
  }
  if (f.cause) encode_failure(*f.cause, out->mutable_cause());
}

Failure decode_failure(const failurev1::Failure& in) {
  Failure f;
  f.message = in.message();
  f.stack_trace = in.stack_trace();
  if (in.has_application_failure_info()) {
    const auto& info = in.application_failure_info();
    f.kind = FailureKind::kApplication;
    f.type = info.type();
    f.non_retryable = info.non_retryable();
    f.code = core::code_from_name(f.type);
    if (info.has_details()) {
      Json arr = Json::array();
      for (auto& d : decode_payloads(info.details())) arr.push_back(std::move(d));
      f.details = std::move(arr);
    }
  } else if (in.has_timeout_failure_info()) {
    f.kind = FailureKind::kTimeout;
    f.timeout_type = timeout_type_name(in.timeout_failure_info().timeout_type());
    f.code = core::Code::kDeadlineExceeded;
    if (in.timeout_failure_info().has_last_heartbeat_details()) {
      Json arr = Json::array();
      for (auto& d : decode_payloads(in.timeout_failure_info().last_heartbeat_details()))
        arr.push_back(std::move(d));
      f.details = std::move(arr);
    }
  } else if (in.has_canceled_failure_info()) {
    f.kind = FailureKind::kCanceled;
    f.code = core::Code::kCancelled;
  } else if (in.has_terminated_failure_info()) {
    f.kind = FailureKind::kTerminated;
    f.code = core::Code::kAborted;
  } else if (in.has_server_failure_info()) {
    f.kind = FailureKind::kServer;
    f.non_retryable = in.server_failure_info().non_retryable();
  } else if (in.has_activity_failure_info()) {
    f.kind = FailureKind::kActivity;
    f.activity_type = in.activity_failure_info().activity_type().name();
    f.activity_id = in.activity_failure_info().activity_id();
  } else {
    f.kind = FailureKind::kOther;
  }
  if (in.has_cause()) f.cause = std::make_shared<Failure>(decode_failure(in.cause()));
  return f;
}

void set_duration(std::chrono::milliseconds d, google::protobuf::Duration* out) {
  out->set_seconds(d.count() / 1000);
  out->set_nanos(static_cast<int32_t>((d.count() % 1000) * 1000000));
}

std::chrono::milliseconds to_millis(const google::protobuf::Duration& d) {
  return std::chrono::milliseconds(d.seconds() * 1000 + d.nanos() / 1000000);
}

std::chrono::system_clock::time_point to_time_point(const google::protobuf::Timestamp& t) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(t.seconds()) + std::chrono::nanoseconds(t.nanos())));
}

std::string to_rfc3339(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0 && t.nanos() == 0) return "";
  return core::format_rfc3339(to_time_point(t));
}

}  // namespace codeact::temporal::internal
