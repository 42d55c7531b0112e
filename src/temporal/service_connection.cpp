#include "service_connection.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "codeact/core/log.hpp"

namespace codeact::temporal::internal {

core::Error error_from_grpc(const grpc::Status& status, std::string_view what) {
  auto code = static_cast<core::Code>(static_cast<int>(status.error_code()));
  std::string msg = std::string(what) + ": " + status.error_message();
  return core::Error(code, msg);
}

core::Result<std::shared_ptr<ServiceConnection>> ServiceConnection::create(ClientOptions options) {
  if (options.address.empty())
    return core::invalid_argument("temporal client: empty server address");
  if (options.ns.empty()) return core::invalid_argument("temporal client: empty namespace");
  if (options.identity.empty()) {
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    options.identity = std::to_string(getpid()) + "@" + host + " (codeact-cpp)";
  }
  if (options.tls_cert_chain_pem.empty() != options.tls_private_key_pem.empty())
    return core::invalid_argument(
        "temporal client: a TLS client certificate needs its private key and the other way round");
  if (!options.tls && !options.tls_cert_chain_pem.empty())
    return core::invalid_argument("temporal client: a TLS client certificate needs tls");
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls_root_certs_pem;
    ssl.pem_cert_chain = options.tls_cert_chain_pem;
    ssl.pem_private_key = options.tls_private_key_pem;
    creds = grpc::SslCredentials(ssl);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(128 * 1024 * 1024);
  // gRPC's default grows to 120 s between reconnection attempts: after a long outage the
  // workers would sit idle for up to two minutes beside a server that is back.
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(kMaxReconnectBackoff.count()));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 200);
  if (!options.tls_server_name.empty()) args.SetSslTargetNameOverride(options.tls_server_name);
  auto conn = std::make_shared<ServiceConnection>();
  conn->channel_ = grpc::CreateCustomChannel(options.address, creds, args);
  conn->stub_ = wsv1::WorkflowService::NewStub(conn->channel_);
  conn->options_ = std::move(options);
  return conn;
}

std::chrono::milliseconds next_retry_wait(std::chrono::milliseconds previous) {
  if (previous < kFirstRetryWait) return kFirstRetryWait;
  return std::min(previous * 2, kLongestRetryWait);
}

void ServiceConnection::note_reachability(const grpc::Status& status) {
  const auto code = status.error_code();
  if (code == grpc::StatusCode::UNAVAILABLE) {
    {
      std::lock_guard<std::mutex> lock(outage_mu_);
      if (reachability_ != Reachability::kAnswering) return;  // not an outage, or said already
    }
    enter_outage(status.error_message());
    return;
  }
  // A deadline says nothing either way (a long poll that expired, or a server still down).
  if (code == grpc::StatusCode::DEADLINE_EXCEEDED || code == grpc::StatusCode::CANCELLED) return;
  std::chrono::steady_clock::duration down;
  {
    std::lock_guard<std::mutex> lock(outage_mu_);
    const Reachability was = reachability_;
    reachability_ = Reachability::kAnswering;
    if (was != Reachability::kNotAnswering) return;
    down = std::chrono::steady_clock::now() - outage_since_;
  }
  core::log().warn("Temporal at {} answers again (after {:.1f} s)", options_.address,
                   std::chrono::duration<double>(down).count());
}

void ServiceConnection::report_unreachable(const core::Error& error) {
  enter_outage(error.message());
}

void ServiceConnection::enter_outage(std::string_view reason) {
  {
    std::lock_guard<std::mutex> lock(outage_mu_);
    if (reachability_ == Reachability::kNotAnswering) return;
    reachability_ = Reachability::kNotAnswering;
    outage_since_ = std::chrono::steady_clock::now();
  }
  core::log().warn("Temporal at {} does not answer ({}); retrying until it is back",
                   options_.address, reason);
}

bool ServiceConnection::sleep_unless(std::chrono::milliseconds wait,
                                     std::chrono::steady_clock::time_point deadline,
                                     const std::function<bool()>& give_up) {
  const auto until = std::min(std::chrono::steady_clock::now() + wait, deadline);
  while (std::chrono::steady_clock::now() < until) {
    if (give_up && give_up()) return false;
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        std::chrono::milliseconds(50), until - std::chrono::steady_clock::now()));
  }
  return std::chrono::steady_clock::now() < deadline && !(give_up && give_up());
}

void ServiceConnection::prepare(grpc::ClientContext& ctx, std::chrono::milliseconds timeout) const {
  if (timeout.count() <= 0) timeout = options_.rpc_timeout;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  if (!options_.api_key.empty()) {
    ctx.AddMetadata("authorization", "Bearer " + options_.api_key);
    // Temporal Cloud's regional API-key endpoints route a call by this header, not its body.
    ctx.AddMetadata("temporal-namespace", options_.ns);
  }
}

}  // namespace codeact::temporal::internal
