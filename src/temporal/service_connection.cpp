#include "service_connection.hpp"

#include <unistd.h>

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
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls_root_certs_pem;
    creds = grpc::SslCredentials(ssl);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(128 * 1024 * 1024);
  if (!options.tls_server_name.empty()) args.SetSslTargetNameOverride(options.tls_server_name);
  auto conn = std::make_shared<ServiceConnection>();
  conn->channel_ = grpc::CreateCustomChannel(options.address, creds, args);
  conn->stub_ = wsv1::WorkflowService::NewStub(conn->channel_);
  conn->options_ = std::move(options);
  return conn;
}

void ServiceConnection::prepare(grpc::ClientContext& ctx, std::chrono::milliseconds timeout) const {
  if (timeout.count() <= 0) timeout = options_.rpc_timeout;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  if (!options_.api_key.empty()) ctx.AddMetadata("authorization", "Bearer " + options_.api_key);
}

}  // namespace codeact::temporal::internal
