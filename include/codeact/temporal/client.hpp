// temporal::Client: talks to a Temporal frontend (WorkflowService over gRPC) for one namespace.
//
// Connect plain, with TLS or mTLS (a client certificate), optionally with an API key (sent as
// `authorization: Bearer`).
// Start (with an optional memo), signal, signal-with-start, query, cancel, terminate, describe
// and list workflows, read their result by long-polling history (following continue-as-new),
// and fetch full histories.
// A Client is thread-safe and cheap to share (it holds one gRPC channel); Workers use one too.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codeact/core/result.hpp"
#include "codeact/temporal/failure.hpp"
#include "codeact/temporal/payload.hpp"

namespace codeact::temporal {

namespace internal {
class ServiceConnection;
}
class Worker;

struct ClientOptions {
  std::string address = "127.0.0.1:7233";  // host:port
  std::string ns = "default";              // the Temporal namespace
  bool tls = false;
  std::string tls_root_certs_pem;  // "" = system roots (with tls)
  std::string tls_server_name;     // "" = host of `address`
  // mTLS: the client's certificate chain and its private key (PEM), presented when the server
  // asks for a client certificate. "" = none. REQUIRES: both or neither, and `tls` (else
  // connect() is InvalidArgument).
  std::string tls_cert_chain_pem;
  std::string tls_private_key_pem;
  // "" = none. Sent on every call as `authorization: Bearer <key>`, with the namespace as
  // `temporal-namespace` (Temporal Cloud's regional endpoints route by it).
  std::string api_key;
  std::string identity;  // "" = "<pid>@<hostname>"
  // Deadline of ordinary (non long-poll) calls.
  std::chrono::milliseconds rpc_timeout{std::chrono::seconds(10)};
};

enum class IdReusePolicy {
  kUnspecified,
  kAllowDuplicate,
  kAllowDuplicateFailedOnly,
  kRejectDuplicate,
  kTerminateIfRunning
};
enum class IdConflictPolicy { kUnspecified, kFail, kUseExisting, kTerminateExisting };

struct StartWorkflowOptions {
  std::string id;          // REQUIRES: non-empty
  std::string task_queue;  // REQUIRES: non-empty
  IdReusePolicy id_reuse_policy = IdReusePolicy::kUnspecified;
  IdConflictPolicy id_conflict_policy = IdConflictPolicy::kUnspecified;
  std::chrono::milliseconds execution_timeout{0};  // 0 = unlimited
  std::chrono::milliseconds run_timeout{0};        // 0 = unlimited
  std::chrono::milliseconds task_timeout{0};       // 0 = server default (10s)
  // The run's memo: each key becomes a memo field whose payload is its value (json/plain, like
  // every payload), readable by any Temporal client and returned by describe_workflow and
  // list_workflows. A key whose value is null is not kept (the server drops null fields).
  // Not indexed: list queries cannot filter on it. A Worker of this SDK carries it on to a
  // continue-as-new run.
  // {} (default) or null = no memo. REQUIRES: an object (else InvalidArgument, nothing sent).
  Json memo = Json::object();
};

struct WorkflowRun {
  std::string workflow_id;
  std::string run_id;
  bool started = true;  // false when an existing run was used (kUseExisting)
};

// One run of a workflow as the server reports it (describe_workflow, list_workflows).
struct WorkflowExecutionInfo {
  std::string workflow_id;
  std::string run_id;
  std::string workflow_type;
  std::string task_queue;
  std::string status;      // "Running", "Completed", "Failed", "Canceled", "Terminated",
                           // "ContinuedAsNew", "TimedOut"
  std::string start_time;  // RFC 3339 UTC with milliseconds (core::format_rfc3339); "" if unset
  std::string close_time;  // the same; "" while the run is open
  // The decoded memo fields ({} when the run has none). A run this SDK's Worker continued as
  // new carries its predecessor's memo.
  Json memo = Json::object();
  int64_t history_length = 0;
};

// What describe_workflow adds to a run's info.
struct WorkflowDescription : WorkflowExecutionInfo {
  int pending_activities = 0;  // activities scheduled and not yet closed
};

// One page of list_workflows.
struct WorkflowPage {
  std::vector<WorkflowExecutionInfo> executions;
  // Opaque bytes (any byte value: base64 them before putting them in a URL or JSON);
  // "" = this was the last page.
  std::string next_page_token;
};

// A workflow's event history, kept as the serialized temporal.api.history.v1.History message.
struct History {
  std::string workflow_id;
  std::string run_id;
  std::string serialized;
  // The proto3 JSON form ({"events": [...]}), as `temporal workflow show --output json`
  // writes it (camelCase fields, enum names like "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED").
  Json to_json() const;
  // Reads that form; short event type names ("WorkflowExecutionStarted", older exports) are
  // accepted too, unknown fields ignored. workflow_id/run_id come from the started event.
  // InvalidArgument when it is not a history.
  static core::Result<History> from_json(const Json& json);
  // from_json on a file's contents. NotFound when it cannot be read.
  static core::Result<History> load_json_file(const std::string& path);
  size_t event_count() const;
};

// What wait_for_history_events saw.
struct HistoryWatch {
  std::string next_page_token;  // for the next call
  int new_events = 0;
  // Of those, the WorkflowTaskCompleted events: only a completed workflow task changes what the
  // workflow's queries answer.
  int workflow_tasks_completed = 0;
  bool closed = false;  // the run's history is complete
};

class Client {
 public:
  // Creates the channel; with `wait_ready` (> 0) waits that long for the server to answer.
  // Unavailable if it does not. Answers that waiting does not change end the wait at once: the
  // server (or a proxy before it) refusing the credentials (Unauthenticated, PermissionDenied,
  // as it said them) and a failed TLS handshake (Unavailable, with gRPC's reason: an untrusted
  // server certificate, a client certificate the server wants and did not get).
  static core::Result<Client> connect(
      ClientOptions options, std::chrono::milliseconds wait_ready = std::chrono::seconds(5));

  const ClientOptions& options() const;

  static constexpr std::chrono::milliseconds kDefaultUnavailablePatience{60000};
  std::chrono::milliseconds unavailable_patience() const { return unavailable_patience_; }
  // This client (the same connection) waiting `patience` instead: e.g. an HTTP handler, which
  // should answer 503 soon rather than hold its thread through an outage.
  Client with_unavailable_patience(std::chrono::milliseconds patience) const {
    Client c = *this;
    c.unavailable_patience_ = patience;
    return c;
  }

  // Waits until the namespace serves workflow calls: a server that just started (a dev server
  // registers "default" shortly after it listens) answers NotFound for it a little while.
  // Unavailable naming the address and namespace when it does not within `timeout`;
  // Unauthenticated or PermissionDenied at once when the server refuses this client there.
  core::Status wait_until_serving(std::chrono::milliseconds timeout);

  // Starts a workflow. This call, signal_workflow and signal_with_start are sent again while the
  // server does not answer (Unavailable: restarting, an outage), for up to unavailable_patience()
  // (default kDefaultUnavailablePatience), with the same request id, so the server applies each
  // once however often it arrives; after that, Unavailable.
  core::Result<WorkflowRun> start_workflow(const std::string& workflow_type, const Args& args,
                                           const StartWorkflowOptions& options);
  // Signals a running workflow ("" run_id = the latest run).
  core::Status signal_workflow(const std::string& workflow_id, const std::string& run_id,
                               const std::string& signal, const Args& args = {});
  core::Result<WorkflowRun> signal_with_start(const std::string& workflow_type, const Args& args,
                                              const StartWorkflowOptions& options,
                                              const std::string& signal,
                                              const Args& signal_args = {});
  // Runs a query handler. FailedPrecondition when the workflow rejects or fails the query.
  // The server answers once the workflow's worker does, which may wait for its workflow task (a
  // local activity's, up to its renewal): `timeout` bounds the wait (DeadlineExceeded after it;
  // zero = the connection's rpc_timeout, at least 30 s). A query the server refuses because
  // other queries already wait for that task ("consistent query buffer is full") is asked again
  // within the same timeout.
  core::Result<Json> query_workflow(const std::string& workflow_id, const std::string& run_id,
                                    const std::string& query, const Args& args = {},
                                    std::chrono::milliseconds timeout = {});
  core::Status cancel_workflow(const std::string& workflow_id, const std::string& run_id = "",
                               const std::string& reason = "");
  core::Status terminate_workflow(const std::string& workflow_id, const std::string& run_id = "",
                                  const std::string& reason = "");
  // Deletes the run from the server, its history and visibility record too (a running one is
  // terminated first). The server removes it asynchronously: describe and list may still show it
  // for a moment. NotFound when there is no such run.
  core::Status delete_workflow(const std::string& workflow_id, const std::string& run_id = "");
  // The run ("" run_id = the latest run of the id). NotFound when there is none.
  core::Result<WorkflowDescription> describe_workflow(const std::string& workflow_id,
                                                      const std::string& run_id = "");
  // Runs matching a visibility query (ListWorkflowExecutions), every run of an id its own entry
  // (continue-as-new makes one per run), in the server's order (the dev server: open runs
  // first, then closed ones by close time, newest first). `query` is Temporal's list filter, e.g.
  // "WorkflowType = 'CodeActChatWorkflow'", "WorkflowId = 'x'",
  // "WorkflowType = 'T' AND ExecutionStatus = 'Running'"; "" = all runs of the namespace. The
  // dev server (SQLite) supports these fields; a query it cannot parse is InvalidArgument.
  // Visibility is eventually consistent: a run just started, or just closed, may show up (or
  // show its new status) in the list a little later (on the dev server typically well under a
  // second), while describe_workflow sees it at once; poll when that matters.
  // Pass a page's next_page_token to get the next page. REQUIRES: 0 < page_size <= 1000
  // (else InvalidArgument).
  core::Result<WorkflowPage> list_workflows(const std::string& query, int page_size = 100,
                                            const std::string& next_page_token = "");
  // Waits for the run to close and returns its result (the first payload; null if none).
  // A failed, cancelled, terminated or timed-out run gives the Failure (kApplication/kCanceled/
  // kTerminated/kTimeout) with the server's message; continue-as-new is followed when
  // `follow_runs`. While the server is unreachable (Unavailable: down, restarting) it keeps
  // waiting, with backoff, within `timeout`; another transport error gives a Failure of kind
  // kRpc. `timeout` 0 = no limit.
  Outcome<Json> get_result(const std::string& workflow_id, const std::string& run_id = "",
                           std::chrono::milliseconds timeout = std::chrono::milliseconds(0),
                           bool follow_runs = true);
  // Long-polls a run's history for new events (GetWorkflowExecutionHistory with
  // wait_new_event): returns once there are events past `page_token` (the first call, with "",
  // returns at once with the history so far), or after `timeout` with new_events 0. Pass the
  // answer's next_page_token to the next call. `closed` is set once the run's history is complete
  // (its close event seen): nothing more will come. For watchers that want to know when a
  // workflow's state changed without polling its queries (the server's event streams).
  core::Result<HistoryWatch> wait_for_history_events(const std::string& workflow_id,
                                                     const std::string& run_id,
                                                     const std::string& page_token,
                                                     std::chrono::milliseconds timeout);
  core::Result<History> fetch_history(const std::string& workflow_id,
                                      const std::string& run_id = "");

 private:
  friend class Worker;  // polls over the same connection
  explicit Client(std::shared_ptr<internal::ServiceConnection> conn) : conn_(std::move(conn)) {}
  std::shared_ptr<internal::ServiceConnection> connection() const { return conn_; }
  std::shared_ptr<internal::ServiceConnection> conn_;
  std::chrono::milliseconds unavailable_patience_ = kDefaultUnavailablePatience;
};

}  // namespace codeact::temporal
