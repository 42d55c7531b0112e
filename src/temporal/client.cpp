#include "codeact/temporal/client.hpp"

#include <google/protobuf/util/json_util.h>

#include <cctype>
#include <fstream>
#include <random>
#include <thread>

#include "codeact/core/strings.hpp"
#include "codec.hpp"
#include "ids.hpp"
#include "service_connection.hpp"
#include "temporal/api/history/v1/message.pb.h"
#include "temporal/api/workflow/v1/message.pb.h"

namespace codeact::temporal {

using internal::wsv1::WorkflowService;
namespace enumsv1 = ::temporal::api::enums::v1;
namespace historyv1 = ::temporal::api::history::v1;
namespace workflowv1 = ::temporal::api::workflow::v1;

namespace {

enumsv1::WorkflowIdReusePolicy to_proto(IdReusePolicy p) {
  switch (p) {
    case IdReusePolicy::kAllowDuplicate:
      return enumsv1::WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE;
    case IdReusePolicy::kAllowDuplicateFailedOnly:
      return enumsv1::WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY;
    case IdReusePolicy::kRejectDuplicate:
      return enumsv1::WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE;
    // The server deprecated TERMINATE_IF_RUNNING for ALLOW_DUPLICATE + TERMINATE_EXISTING
    // (fill_start).
    case IdReusePolicy::kTerminateIfRunning:
      return enumsv1::WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE;
    case IdReusePolicy::kUnspecified:
      break;
  }
  return enumsv1::WORKFLOW_ID_REUSE_POLICY_UNSPECIFIED;
}

enumsv1::WorkflowIdConflictPolicy to_proto(IdConflictPolicy p) {
  switch (p) {
    case IdConflictPolicy::kFail:
      return enumsv1::WORKFLOW_ID_CONFLICT_POLICY_FAIL;
    case IdConflictPolicy::kUseExisting:
      return enumsv1::WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING;
    case IdConflictPolicy::kTerminateExisting:
      return enumsv1::WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING;
    case IdConflictPolicy::kUnspecified:
      break;
  }
  return enumsv1::WORKFLOW_ID_CONFLICT_POLICY_UNSPECIFIED;
}

std::string status_name(enumsv1::WorkflowExecutionStatus s) {
  switch (s) {
    case enumsv1::WORKFLOW_EXECUTION_STATUS_RUNNING:
      return "Running";
    case enumsv1::WORKFLOW_EXECUTION_STATUS_COMPLETED:
      return "Completed";
    case enumsv1::WORKFLOW_EXECUTION_STATUS_FAILED:
      return "Failed";
    case enumsv1::WORKFLOW_EXECUTION_STATUS_CANCELED:
      return "Canceled";
    case enumsv1::WORKFLOW_EXECUTION_STATUS_TERMINATED:
      return "Terminated";
    case enumsv1::WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
      return "ContinuedAsNew";
    case enumsv1::WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
      return "TimedOut";
    default:
      return "Unspecified";
  }
}

// Fills the fields StartWorkflowExecutionRequest and SignalWithStartWorkflowExecutionRequest share.
template <typename Req>
core::Status fill_start(Req& req, const internal::ServiceConnection& conn, const std::string& type,
                        const Args& args, const StartWorkflowOptions& o) {
  if (o.id.empty())
    return core::invalid_argument("start workflow '" + type + "': empty workflow id");
  if (o.task_queue.empty())
    return core::invalid_argument("start workflow '" + type + "' (id " + o.id +
                                  "): empty task queue");
  if (!o.memo.is_null() && !o.memo.is_object())
    return core::invalid_argument("start workflow '" + type + "' (id " + o.id +
                                  "): the memo must be a JSON object, got " +
                                  core::abbreviate(core::dump_json(o.memo), 80));
  req.set_namespace_(conn.ns());
  req.set_workflow_id(o.id);
  req.mutable_workflow_type()->set_name(type);
  req.mutable_task_queue()->set_name(o.task_queue);
  req.mutable_task_queue()->set_kind(enumsv1::TASK_QUEUE_KIND_NORMAL);
  if (!args.empty()) internal::encode_payloads(args, req.mutable_input());
  if (o.memo.is_object() && !o.memo.empty()) internal::encode_memo(o.memo, req.mutable_memo());
  if (o.execution_timeout.count() > 0)
    internal::set_duration(o.execution_timeout, req.mutable_workflow_execution_timeout());
  if (o.run_timeout.count() > 0)
    internal::set_duration(o.run_timeout, req.mutable_workflow_run_timeout());
  if (o.task_timeout.count() > 0)
    internal::set_duration(o.task_timeout, req.mutable_workflow_task_timeout());
  req.set_identity(conn.identity());
  req.set_request_id(internal::random_uuid());
  req.set_workflow_id_reuse_policy(to_proto(o.id_reuse_policy));
  req.set_workflow_id_conflict_policy(o.id_reuse_policy == IdReusePolicy::kTerminateIfRunning
                                          ? enumsv1::WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING
                                          : to_proto(o.id_conflict_policy));
  return core::ok_status();
}

void fill_info(const workflowv1::WorkflowExecutionInfo& in, WorkflowExecutionInfo& out) {
  out.workflow_id = in.execution().workflow_id();
  out.run_id = in.execution().run_id();
  out.workflow_type = in.type().name();
  out.task_queue = in.task_queue();
  out.status = status_name(in.status());
  out.start_time = internal::to_rfc3339(in.start_time());
  out.close_time = internal::to_rfc3339(in.close_time());
  out.memo = internal::decode_memo(in.memo());
  out.history_length = in.history_length();
}

// The server, or a proxy before it, refused this client's credentials; a proxy answered with an
// HTTP error that is not "try later" (gRPC makes 502, 503 and 504 Unavailable, 400 Internal:
// nginx's answer to a missing client certificate); or the TLS handshake failed (gRPC says so only
// in its message: "Ssl handshake failed: ... certificate verify failed"). None of these changes
// by waiting for the server to come up.
bool waiting_does_not_help(const core::Error& e) {
  if (e.code() == core::Code::kUnauthenticated || e.code() == core::Code::kPermissionDenied)
    return true;
  std::string message = e.message();
  for (char& ch : message) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (e.code() != core::Code::kUnavailable)
    return message.find("received http2 header with status") != std::string::npos;
  // Not "tcp handshaker shutdown": a plain connection closed, as by a server still starting.
  return message.find("ssl handshake") != std::string::npos ||
         message.find("handshake failed") != std::string::npos ||
         message.find("certificate") != std::string::npos;
}

}  // namespace

core::Result<Client> Client::connect(ClientOptions options, std::chrono::milliseconds wait_ready) {
  std::string address = options.address;
  CODEACT_TRY(auto conn, internal::ServiceConnection::create(std::move(options)));
  if (wait_ready.count() > 0) {
    auto deadline = std::chrono::steady_clock::now() + wait_ready;
    for (;;) {
      internal::wsv1::GetSystemInfoRequest req;
      auto r = conn->call(&WorkflowService::Stub::GetSystemInfo, req, "GetSystemInfo",
                          std::chrono::milliseconds(2000));
      if (r.ok()) break;
      if (waiting_does_not_help(r.error()))
        return core::Error(r.error().code(),
                           "temporal server at " + address + ": " + r.error().message());
      if (std::chrono::steady_clock::now() >= deadline)
        return core::unavailable("temporal server at " + address + " did not answer within " +
                                 std::to_string(wait_ready.count()) +
                                 " ms: " + r.error().message());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return Client(std::move(conn));
}

const ClientOptions& Client::options() const { return conn_->options(); }

core::Status Client::wait_until_serving(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // An unknown workflow is NotFound once the namespace exists.
    auto d = describe_workflow("codeact-probe-no-such-workflow");
    if (!d.ok() && d.error().code() == core::Code::kNotFound) return core::ok_status();
    if (!d.ok() && (d.error().code() == core::Code::kUnauthenticated ||
                    d.error().code() == core::Code::kPermissionDenied))
      return d.error();
    if (std::chrono::steady_clock::now() >= deadline) {
      return core::unavailable("the Temporal server at " + options().address +
                               " does not serve namespace \"" + options().ns + "\": " +
                               (d.ok() ? std::string("unexpected answer") : d.error().message()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

core::Result<WorkflowRun> Client::start_workflow(const std::string& workflow_type, const Args& args,
                                                 const StartWorkflowOptions& options) {
  internal::wsv1::StartWorkflowExecutionRequest req;
  CODEACT_TRY_STATUS(fill_start(req, *conn_, workflow_type, args, options));
  CODEACT_TRY(auto resp,
              conn_->call_retrying(&WorkflowService::Stub::StartWorkflowExecution, req,
                                   "start workflow '" + workflow_type + "' id " + options.id,
                                   unavailable_patience_));
  return WorkflowRun{options.id, resp.run_id(), resp.started()};
}

core::Status Client::signal_workflow(const std::string& workflow_id, const std::string& run_id,
                                     const std::string& signal, const Args& args) {
  internal::wsv1::SignalWorkflowExecutionRequest req;
  req.set_namespace_(conn_->ns());
  req.mutable_workflow_execution()->set_workflow_id(workflow_id);
  req.mutable_workflow_execution()->set_run_id(run_id);
  req.set_signal_name(signal);
  if (!args.empty()) internal::encode_payloads(args, req.mutable_input());
  req.set_identity(conn_->identity());
  req.set_request_id(internal::random_uuid());
  CODEACT_TRY_STATUS(conn_->call_retrying(&WorkflowService::Stub::SignalWorkflowExecution, req,
                                          "signal '" + signal + "' to workflow " + workflow_id,
                                          unavailable_patience_));
  return core::ok_status();
}

core::Result<WorkflowRun> Client::signal_with_start(const std::string& workflow_type,
                                                    const Args& args,
                                                    const StartWorkflowOptions& options,
                                                    const std::string& signal,
                                                    const Args& signal_args) {
  internal::wsv1::SignalWithStartWorkflowExecutionRequest req;
  CODEACT_TRY_STATUS(fill_start(req, *conn_, workflow_type, args, options));
  req.set_signal_name(signal);
  if (!signal_args.empty()) internal::encode_payloads(signal_args, req.mutable_signal_input());
  CODEACT_TRY(auto resp, conn_->call_retrying(
                             &WorkflowService::Stub::SignalWithStartWorkflowExecution, req,
                             "signal-with-start workflow '" + workflow_type + "' id " + options.id,
                             unavailable_patience_));
  return WorkflowRun{options.id, resp.run_id(), resp.started()};
}

core::Result<Json> Client::query_workflow(const std::string& workflow_id, const std::string& run_id,
                                          const std::string& query, const Args& args,
                                          std::chrono::milliseconds timeout) {
  internal::wsv1::QueryWorkflowRequest req;
  req.set_namespace_(conn_->ns());
  req.mutable_execution()->set_workflow_id(workflow_id);
  req.mutable_execution()->set_run_id(run_id);
  req.mutable_query()->set_query_type(query);
  if (!args.empty()) internal::encode_payloads(args, req.mutable_query()->mutable_query_args());
  std::string what = "query '" + query + "' on workflow " + workflow_id;
  if (timeout <= std::chrono::milliseconds::zero())
    timeout = std::max(conn_->options().rpc_timeout, std::chrono::milliseconds(30000));
  // While the workflow's task is busy (a local activity runs in it) the server holds queries
  // until the task ends or is renewed, and refuses any past its buffer (one by default:
  // history.MaxBufferedQueryCount) with ResourceExhausted "consistent query buffer is full".
  // Such a query is asked again until the deadline: two watchers of one run (`codeact run` and
  // the web page) must both get their answer, not an error.
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  auto wait = std::chrono::milliseconds(100);
  core::Result<internal::wsv1::QueryWorkflowResponse> answer = core::internal_error(what);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    answer = conn_->call(&WorkflowService::Stub::QueryWorkflow, req, what,
                         std::max(left, std::chrono::milliseconds(1)));
    const bool buffer_full = !answer.ok() &&
                             answer.error().code() == core::Code::kResourceExhausted &&
                             answer.error().message().find("query buffer") != std::string::npos;
    if (!buffer_full || Clock::now() + wait >= deadline) break;
    std::this_thread::sleep_for(wait);
    wait = std::min(wait * 2, std::chrono::milliseconds(1000));
  }
  CODEACT_TRY(auto resp, std::move(answer));
  if (resp.has_query_rejected())
    return core::failed_precondition(what + ": rejected (workflow status " +
                                     status_name(resp.query_rejected().status()) + ")");
  Args out = internal::decode_payloads(resp.query_result());
  return out.empty() ? Json(nullptr) : std::move(out[0]);
}

core::Status Client::cancel_workflow(const std::string& workflow_id, const std::string& run_id,
                                     const std::string& reason) {
  internal::wsv1::RequestCancelWorkflowExecutionRequest req;
  req.set_namespace_(conn_->ns());
  req.mutable_workflow_execution()->set_workflow_id(workflow_id);
  req.mutable_workflow_execution()->set_run_id(run_id);
  req.set_identity(conn_->identity());
  req.set_request_id(internal::random_uuid());
  req.set_reason(reason);
  CODEACT_TRY_STATUS(conn_->call(&WorkflowService::Stub::RequestCancelWorkflowExecution, req,
                                 "cancel workflow " + workflow_id));
  return core::ok_status();
}

core::Status Client::terminate_workflow(const std::string& workflow_id, const std::string& run_id,
                                        const std::string& reason) {
  internal::wsv1::TerminateWorkflowExecutionRequest req;
  req.set_namespace_(conn_->ns());
  req.mutable_workflow_execution()->set_workflow_id(workflow_id);
  req.mutable_workflow_execution()->set_run_id(run_id);
  req.set_identity(conn_->identity());
  req.set_reason(reason);
  CODEACT_TRY_STATUS(conn_->call(&WorkflowService::Stub::TerminateWorkflowExecution, req,
                                 "terminate workflow " + workflow_id));
  return core::ok_status();
}

core::Status Client::delete_workflow(const std::string& workflow_id, const std::string& run_id) {
  internal::wsv1::DeleteWorkflowExecutionRequest req;
  req.set_namespace_(conn_->ns());
  req.mutable_workflow_execution()->set_workflow_id(workflow_id);
  req.mutable_workflow_execution()->set_run_id(run_id);
  CODEACT_TRY_STATUS(conn_->call(&WorkflowService::Stub::DeleteWorkflowExecution, req,
                                 "delete workflow " + workflow_id));
  return core::ok_status();
}

core::Result<WorkflowDescription> Client::describe_workflow(const std::string& workflow_id,
                                                            const std::string& run_id) {
  internal::wsv1::DescribeWorkflowExecutionRequest req;
  req.set_namespace_(conn_->ns());
  req.mutable_execution()->set_workflow_id(workflow_id);
  req.mutable_execution()->set_run_id(run_id);
  CODEACT_TRY(auto resp, conn_->call(&WorkflowService::Stub::DescribeWorkflowExecution, req,
                                     "describe workflow " + workflow_id));
  WorkflowDescription d;
  fill_info(resp.workflow_execution_info(), d);
  d.pending_activities = resp.pending_activities_size();
  return d;
}

core::Result<WorkflowPage> Client::list_workflows(const std::string& query, int page_size,
                                                  const std::string& next_page_token) {
  std::string what = "list workflows (query \"" + core::abbreviate(query, 200) + "\")";
  if (page_size <= 0 || page_size > 1000)
    return core::invalid_argument(what + ": page size " + std::to_string(page_size) +
                                  " is outside 1..1000");
  internal::wsv1::ListWorkflowExecutionsRequest req;
  req.set_namespace_(conn_->ns());
  req.set_page_size(page_size);
  req.set_next_page_token(next_page_token);
  req.set_query(query);
  CODEACT_TRY(auto resp, conn_->call(&WorkflowService::Stub::ListWorkflowExecutions, req, what));
  WorkflowPage page;
  page.executions.resize(static_cast<size_t>(resp.executions_size()));
  for (int i = 0; i < resp.executions_size(); ++i)
    fill_info(resp.executions(i), page.executions[i]);
  page.next_page_token = resp.next_page_token();
  return page;
}

Outcome<Json> Client::get_result(const std::string& workflow_id, const std::string& run_id,
                                 std::chrono::milliseconds timeout, bool follow_runs) {
  auto deadline = timeout.count() > 0 ? std::chrono::steady_clock::now() + timeout
                                      : std::chrono::steady_clock::time_point::max();
  std::string run = run_id;
  std::string page_token;
  std::chrono::milliseconds unavailable_wait{0};
  for (;;) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline)
      return Failure::rpc(core::deadline_exceeded("result of workflow " + workflow_id +
                                                  ": not closed within " +
                                                  std::to_string(timeout.count()) + " ms"));
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    auto call_timeout = std::min<std::chrono::milliseconds>(left, std::chrono::seconds(65));
    internal::wsv1::GetWorkflowExecutionHistoryRequest req;
    req.set_namespace_(conn_->ns());
    req.mutable_execution()->set_workflow_id(workflow_id);
    req.mutable_execution()->set_run_id(run);
    req.set_wait_new_event(true);
    req.set_history_event_filter_type(enumsv1::HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT);
    req.set_next_page_token(page_token);
    auto resp = conn_->call(&WorkflowService::Stub::GetWorkflowExecutionHistory, req,
                            "result of workflow " + workflow_id, call_timeout);
    if (!resp.ok()) {
      if (resp.error().code() == core::Code::kDeadlineExceeded) continue;  // long poll expired
      if (resp.error().code() == core::Code::kUnavailable) {
        // The server is down or restarting: the workflow is not lost, wait for it (said once
        // per outage).
        conn_->report_unreachable(resp.error());
        unavailable_wait = internal::next_retry_wait(unavailable_wait);
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            unavailable_wait, deadline - std::chrono::steady_clock::now()));
        continue;
      }
      return Failure::rpc(resp.error());
    }
    unavailable_wait = std::chrono::milliseconds(0);
    if (resp->history().events_size() == 0) {
      page_token = resp->next_page_token();
      continue;
    }
    page_token.clear();
    const historyv1::HistoryEvent& ev = resp->history().events(resp->history().events_size() - 1);
    std::string next_run;
    if (ev.has_workflow_execution_completed_event_attributes()) {
      const auto& a = ev.workflow_execution_completed_event_attributes();
      next_run = a.new_execution_run_id();
      if (next_run.empty() || !follow_runs) {
        Args out = internal::decode_payloads(a.result());
        return out.empty() ? Json(nullptr) : std::move(out[0]);
      }
    } else if (ev.has_workflow_execution_failed_event_attributes()) {
      const auto& a = ev.workflow_execution_failed_event_attributes();
      next_run = a.new_execution_run_id();
      if (next_run.empty() || !follow_runs) return internal::decode_failure(a.failure());
    } else if (ev.has_workflow_execution_timed_out_event_attributes()) {
      next_run = ev.workflow_execution_timed_out_event_attributes().new_execution_run_id();
      if (next_run.empty() || !follow_runs) {
        Failure f;
        f.kind = FailureKind::kTimeout;
        f.code = core::Code::kDeadlineExceeded;
        f.timeout_type = "StartToClose";
        f.message = "workflow " + workflow_id + " timed out";
        return f;
      }
    } else if (ev.has_workflow_execution_canceled_event_attributes()) {
      Failure f;
      f.kind = FailureKind::kCanceled;
      f.code = core::Code::kCancelled;
      f.message = "workflow " + workflow_id + " was cancelled";
      return f;
    } else if (ev.has_workflow_execution_terminated_event_attributes()) {
      Failure f;
      f.kind = FailureKind::kTerminated;
      f.code = core::Code::kAborted;
      f.message = "workflow " + workflow_id + " was terminated: " +
                  ev.workflow_execution_terminated_event_attributes().reason();
      return f;
    } else if (ev.has_workflow_execution_continued_as_new_event_attributes()) {
      next_run = ev.workflow_execution_continued_as_new_event_attributes().new_execution_run_id();
      if (!follow_runs) {
        Failure f;
        f.kind = FailureKind::kOther;
        f.message = "workflow " + workflow_id + " continued as new as run " + next_run;
        return f;
      }
    } else {
      continue;
    }
    run = next_run;
  }
}

core::Result<HistoryWatch> Client::wait_for_history_events(const std::string& workflow_id,
                                                           const std::string& run_id,
                                                           const std::string& page_token,
                                                           std::chrono::milliseconds timeout) {
  internal::wsv1::GetWorkflowExecutionHistoryRequest req;
  req.set_namespace_(conn_->ns());
  req.mutable_execution()->set_workflow_id(workflow_id);
  req.mutable_execution()->set_run_id(run_id);
  req.set_wait_new_event(true);
  req.set_history_event_filter_type(enumsv1::HISTORY_EVENT_FILTER_TYPE_ALL_EVENT);
  req.set_next_page_token(page_token);
  HistoryWatch out;
  auto resp = conn_->call(&WorkflowService::Stub::GetWorkflowExecutionHistory, req,
                          "history of workflow " + workflow_id, timeout);
  if (!resp.ok()) {
    if (resp.error().code() == core::Code::kDeadlineExceeded) {  // nothing new in time
      out.next_page_token = page_token;
      return out;
    }
    return std::move(resp).error();
  }
  out.new_events = resp->history().events_size();
  for (const auto& e : resp->history().events())
    if (e.has_workflow_task_completed_event_attributes()) ++out.workflow_tasks_completed;
  out.next_page_token = resp->next_page_token();
  out.closed = out.next_page_token.empty();
  return out;
}

core::Result<History> Client::fetch_history(const std::string& workflow_id,
                                            const std::string& run_id) {
  historyv1::History all;
  std::string token;
  std::string run = run_id;
  do {
    internal::wsv1::GetWorkflowExecutionHistoryRequest req;
    req.set_namespace_(conn_->ns());
    req.mutable_execution()->set_workflow_id(workflow_id);
    req.mutable_execution()->set_run_id(run_id);
    req.set_next_page_token(token);
    CODEACT_TRY(auto resp, conn_->call(&WorkflowService::Stub::GetWorkflowExecutionHistory, req,
                                       "history of workflow " + workflow_id));
    for (auto& e : *resp.mutable_history()->mutable_events()) *all.add_events() = std::move(e);
    token = resp.next_page_token();
  } while (!token.empty());
  History h;
  h.workflow_id = workflow_id;
  h.run_id = run;
  all.SerializeToString(&h.serialized);
  return h;
}

Json History::to_json() const {
  historyv1::History h;
  h.ParseFromString(serialized);
  std::string out;
  google::protobuf::util::JsonPrintOptions opts;
  (void)google::protobuf::util::MessageToJsonString(h, &out, opts);
  auto parsed = core::parse_json(out, "history");
  return parsed.ok() ? std::move(parsed).value() : Json::object();
}

namespace {
// "WorkflowExecutionStarted" (older exports) -> "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED".
std::string event_type_enum_name(const std::string& name) {
  if (name.rfind("EVENT_TYPE_", 0) == 0) return name;
  std::string out = "EVENT_TYPE_";
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (std::isupper(static_cast<unsigned char>(c)) && i > 0) out += '_';
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}
}  // namespace

core::Result<History> History::from_json(const Json& json) {
  if (!json.is_object() || !json.contains("events") || !json["events"].is_array())
    return core::invalid_argument(
        "history JSON: expected an object with an \"events\" array (the output of `temporal "
        "workflow show --output json`)");
  Json normalized = json;
  for (auto& e : normalized["events"]) {
    if (e.is_object() && e.contains("eventType") && e["eventType"].is_string())
      e["eventType"] = event_type_enum_name(e["eventType"].get<std::string>());
  }
  historyv1::History h;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  auto st = google::protobuf::util::JsonStringToMessage(core::dump_json(normalized), &h, opts);
  if (!st.ok()) return core::invalid_argument("history JSON: " + std::string(st.message()));
  History out;
  if (h.events_size() > 0 && h.events(0).has_workflow_execution_started_event_attributes()) {
    const auto& a = h.events(0).workflow_execution_started_event_attributes();
    out.workflow_id = a.workflow_id();
    out.run_id = a.original_execution_run_id();
  }
  h.SerializeToString(&out.serialized);
  return out;
}

core::Result<History> History::load_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return core::not_found("history file " + path +
                           ": cannot open it (export one with `temporal workflow show -w <id> "
                           "--output json > file`)");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  CODEACT_TRY(auto json, core::parse_json(text, "history file " + path));
  auto h = from_json(json);
  if (!h.ok()) return core::invalid_argument(path + ": " + h.error().message());
  return h;
}

size_t History::event_count() const {
  historyv1::History h;
  h.ParseFromString(serialized);
  return static_cast<size_t>(h.events_size());
}

}  // namespace codeact::temporal
